"""CLI options that restate a name or default from the library agree with it."""

from __future__ import annotations

from covrag.cli import build_parser
from covrag.cli._common import config_from_args
from covrag.cli.bench import BENCH_OPTIONS
from covrag.cli.train import FEATURE_SET_NAMES
from covrag.pipeline import BenchConfig
from covrag.train.coverage import TrainConfig
from covrag.train.lmvu import StateConfig
from covrag.train.lmvu_run import FEATURE_SETS


def test_fit_and_train_options_default_to_the_configs() -> None:
    assert FEATURE_SET_NAMES == tuple(FEATURE_SETS)
    fit = build_parser().parse_args(["fit", "lmvu", "--dataset", "d", "--out", "m.json"])
    assert tuple(fit.budgets) == StateConfig().budgets
    train = build_parser().parse_args(["train", "coverage", "--out", "m"])
    config = TrainConfig()
    assert (train.epochs, train.batch_size, train.lr, train.max_length, train.seed) == (
        config.epochs,
        config.batch_size,
        config.learning_rate,
        config.max_length,
        config.seed,
    )
    assert train.base_model == config.base_model
    assert train.precision == config.precision == "fp32"
    assert train.min_train_auc == config.min_train_auc == 0.55


def test_every_command_is_registered_once() -> None:
    parser = build_parser()
    (sub,) = [a for a in parser._subparsers._group_actions]  # type: ignore[union-attr]
    assert list(sub.choices) == [  # type: ignore[attr-defined]
        "select", "eval", "eval-planner", "bench", "demo", "cv", "fit", "train", "qrels",
        "index", "search", "datasets", "serve", "report", "plan", "ask", "eval-answers", "cache",
    ]  # fmt: skip


def test_bench_options_come_from_bench_config() -> None:
    base = ["bench", "--dataset", "d", "--selectors", "topk"]
    args = build_parser().parse_args(base)
    assert config_from_args(BenchConfig, args, BENCH_OPTIONS) == BenchConfig()
    args = build_parser().parse_args([*base, "--no-exact", "--measures", "P@5", "--seed", "3"])
    settings = config_from_args(BenchConfig, args, BENCH_OPTIONS)
    assert settings == BenchConfig(measures=("P@5",), exact=False, seed=3)
