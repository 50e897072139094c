"""The CLI's surface: how many options it has (issue 33: at most 180), the order ``covrag
--help`` lists the commands in, and options that restate a library default agree with it."""

from __future__ import annotations

import argparse

from covrag.cli import PRODUCT_COMMANDS, RESEARCH_COMMANDS, build_parser
from covrag.cli._common import config_from_args
from covrag.cli.bench import BENCH_OPTIONS
from covrag.pipeline import BenchConfig
from covrag.train.coverage import TrainConfig
from covrag.train.lmvu import StateConfig

#: The most option strings the commands may have together (issue 33's "CLI options <= 180"). An
#: option needs a cross-validated result (docs/experiments, docs/BENCHMARKS.md) or a user need.
MAX_OPTIONS = 180


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


def test_the_commands_have_at_most_180_options() -> None:
    counts = {name: count_options(p) for name, p in _commands(build_parser()).items()}
    total = sum(counts.values())
    print("CLI options per command:", ", ".join(f"{n} {c}" for n, c in counts.items()))
    print(f"CLI options in total: {total} (at most {MAX_OPTIONS})")
    assert total <= MAX_OPTIONS, counts
    assert counts["train"] > 0 and counts["ask"] > 0  # sub-commands and groups are counted


def test_help_lists_the_product_commands_then_the_research_ones() -> None:
    commands = _commands(build_parser())
    assert sorted(PRODUCT_COMMANDS + RESEARCH_COMMANDS) == sorted(commands)  # each listed once
    text = build_parser().format_help()
    product, _, research = text.partition("\nresearch commands:\n")
    assert product.index("\ncommands:\n") < product.index("  ask ") and research
    listed = [
        line.split()[0] for line in text.splitlines() if line.startswith("  ") and line[2] != " "
    ]
    names = [n for n in listed if n in commands]
    assert names == [*PRODUCT_COMMANDS, *RESEARCH_COMMANDS]
    assert all(f"  {n} " in research for n in RESEARCH_COMMANDS)
    assert not any(f"  {n} " in research for n in PRODUCT_COMMANDS)
    # a command's own help is argparse's (only the top level groups its commands)
    assert commands["ask"].format_help().startswith("usage: covrag ask")
    assert "research commands" not in commands["train"].format_help()


def test_fit_and_train_options_default_to_the_configs() -> None:
    fit = build_parser().parse_args(["fit", "lmvu", "--dataset", "d", "--out", "m.json"])
    assert tuple(fit.budgets) == StateConfig().budgets
    train = build_parser().parse_args(["train", "coverage", "--out", "m"])
    config = TrainConfig()
    assert train.lr == config.learning_rate and train.base_model == config.base_model
    assert train.precision == config.precision == "fp32"
    assert train.min_train_auc == config.min_train_auc == 0.55


def test_bench_options_come_from_bench_config() -> None:
    base = ["bench", "--dataset", "d", "--selectors", "topk"]
    args = build_parser().parse_args(base)
    assert config_from_args(BenchConfig, args, BENCH_OPTIONS) == BenchConfig()
    args = build_parser().parse_args([*base, "--no-exact", "--measures", "P@5", "--seed", "3"])
    settings = config_from_args(BenchConfig, args, BENCH_OPTIONS)
    assert settings == BenchConfig(measures=("P@5",), exact=False, seed=3)
