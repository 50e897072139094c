"""The CLIs' surface: how many options the product's ``covrag`` has (issue 48: at most 120,
after the research commands moved to ``covrag-lab``), how many ``covrag-lab`` has, the order
``covrag --help`` lists the commands in, and options that restate a library default agree
with it."""

from __future__ import annotations

import argparse

import covrag_lab.cli
from covrag.cli import COMMANDS, build_parser
from covrag.cli.bench import BENCH_OPTIONS
from covrag.cli.common import config_from_args
from covrag.pipeline import BenchConfig
from covrag_lab.train.coverage import TrainConfig
from covrag_lab.train.lmvu import StateConfig

#: The most option strings the product's commands may have together (issue 48's "product CLI
#: options <= 120"; 180 with the research commands, issue 33). An option needs a cross-validated
#: result (docs/experiments, docs/BENCHMARKS.md) or a user need.
MAX_OPTIONS = 120

#: The most options ``covrag-lab``'s commands may have together: their count when they left the
#: product (66), a ceiling that only goes down.
MAX_LAB_OPTIONS = 66


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def count_options(parser: argparse.ArgumentParser) -> int:
    """Options of a command and of its sub-commands (``train coverage``...), ``-h`` aside."""
    own = [
        a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return len(own) + sum(count_options(p) for s in subs for p in s.choices.values())


def _count(name: str, parser: argparse.ArgumentParser, cap: int) -> dict[str, int]:
    counts = {command: count_options(p) for command, p in _commands(parser).items()}
    total = sum(counts.values())
    print(f"{name} options per command:", ", ".join(f"{n} {c}" for n, c in counts.items()))
    print(f"{name} options in total: {total} (at most {cap})")
    assert total <= cap, counts
    return counts


def test_the_product_commands_have_at_most_120_options() -> None:
    counts = _count("covrag", build_parser(), MAX_OPTIONS)
    assert counts["ask"] > 0 and counts["serve"] > 0  # groups are counted


def test_the_lab_commands_have_at_most_66_options() -> None:
    counts = _count("covrag-lab", covrag_lab.cli.build_parser(), MAX_LAB_OPTIONS)
    assert counts["train"] > 0 and counts["cv"] > 0  # sub-commands are counted


def test_help_lists_the_commands_in_order_and_the_lab_apart() -> None:
    commands = _commands(build_parser())
    assert sorted(COMMANDS) == sorted(commands)  # each listed once
    text = build_parser().format_help()
    listed = [
        line.split()[0] for line in text.splitlines() if line.startswith("  ") and line[2] != " "
    ]
    assert [n for n in listed if n in commands] == list(COMMANDS)
    assert "covrag-lab" in text  # where the research commands went
    lab = _commands(covrag_lab.cli.build_parser())
    assert sorted(covrag_lab.cli.COMMANDS) == sorted(lab)
    assert not set(lab) & set(commands)
    # a command's own help is argparse's (only the top level orders its commands)
    assert commands["ask"].format_help().startswith("usage: covrag ask")
    assert lab["train"].format_help().startswith("usage: covrag-lab train")


def test_fit_and_train_options_default_to_the_configs() -> None:
    parser = covrag_lab.cli.build_parser()
    fit = parser.parse_args(["fit", "lmvu", "--dataset", "d", "--out", "m.json"])
    assert tuple(fit.budgets) == StateConfig().budgets
    train = parser.parse_args(["train", "coverage", "--out", "m"])
    config = TrainConfig()
    assert train.lr == config.learning_rate and train.base_model == config.base_model
    assert train.precision == config.precision == "fp32"
    assert train.min_train_auc == config.min_train_auc == 0.55
    from covrag_lab.cli.train import COVERAGE_FIELDS

    fields = {name: getattr(train, dest) for dest, name in COVERAGE_FIELDS.items()}
    assert TrainConfig(**fields) == config


def test_bench_options_come_from_bench_config() -> None:
    base = ["bench", "--dataset", "d", "--selectors", "topk"]
    args = build_parser().parse_args(base)
    assert config_from_args(BenchConfig, args, BENCH_OPTIONS) == BenchConfig()
    args = build_parser().parse_args([*base, "--no-exact", "--measures", "P@5", "--seed", "3"])
    settings = config_from_args(BenchConfig, args, BENCH_OPTIONS)
    assert settings == BenchConfig(measures=("P@5",), exact=False, seed=3)
