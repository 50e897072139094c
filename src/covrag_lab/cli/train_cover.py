"""``covrag-lab train cover``: fine-tune CoveR, the coverage-trained bi-encoder.

The work is in :mod:`covrag_lab.train.cover`; this command parses the options (generated from
fields of :class:`~covrag_lab.train.cover.CoverConfig`), shows progress and prints what was trained.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console
from rich.table import Table

from covrag.cli.common import (
    Subparsers,
    add_config_options,
    check_outputs,
    config_from_args,
    progress_bar,
)

DEFAULT_DATASETS = ["argkp2021:train", "argkp2021:train:questions", "perspectrum:train"]
#: The CoverConfig fields that are options: the size of a run (docs/experiments/19's run set
#: ``--examples``, ``--max-seq-length`` and ``--threads``) and its memory. The loss and sampling
#: settings keep their defaults (no run compared others).
COVER_OPTIONS = ("examples", "batch_size", "max_seq_length", "threads")


def add_train_cover(train: Subparsers) -> None:
    """Register ``covrag-lab train cover``."""
    from covrag_lab.train.cover import CoverConfig

    p = train.add_parser(
        "cover",
        help="fine-tune CoveR, the coverage-trained bi-encoder (for --kind cover indexes and "
        "the cover(...) estimator)",
    )
    p.add_argument(
        "--datasets",
        nargs="+",
        default=DEFAULT_DATASETS,
        help="labelled training data (bundled name:split[:questions] or JSONL paths; "
        "default: %(default)s)",
    )
    p.add_argument("--out", required=True, type=Path, help="model folder to write")
    add_config_options(p, CoverConfig, COVER_OPTIONS)
    p.set_defaults(run_command=run_train_cover)


def run_train_cover(args: argparse.Namespace, console: Console) -> int:
    from covrag_lab.train.cover import CoverConfig, train_cover, training_examples

    check_outputs([("--datasets", name) for name in args.datasets], [], [("--out", args.out)])
    config = config_from_args(CoverConfig, args, COVER_OPTIONS)
    train = training_examples(args.datasets, config)
    table = Table(title="CoveR training examples")
    for column in ("dataset", "examples", "coverage, redundant negative", "aspect"):
        table.add_column(column, justify="right")
    for name, examples in train.items():
        kinds = [e.kind for e in examples if e.negative_kind == "redundant"]
        aspect = sum(e.kind == "aspect" for e in examples)
        table.add_row(name, str(len(examples)), str(len(kinds)), str(aspect))
    console.print(table)
    with progress_bar(console) as progress:
        task = progress.add_task("training", total=None)

        def report(step: int, total: int, loss: float) -> None:
            progress.update(task, completed=step, total=total, description=f"loss {loss:.3f}")

        card = train_cover(train, args.out, config, progress=report)
    console.print(
        f"{card.steps} steps in {card.seconds:.0f} s; loss {card.loss_first:.3f} -> "
        f"{card.loss_last:.3f}; model and training_card.json in {args.out}",
        highlight=False,
    )
    return 0
