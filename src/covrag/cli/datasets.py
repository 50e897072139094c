"""``covrag datasets``: list the bundled datasets."""

from __future__ import annotations

import argparse

from rich.console import Console
from rich.table import Table

from covrag.cli.common import Subparsers


def register(sub: Subparsers) -> None:
    p = sub.add_parser("datasets", help="list the bundled datasets")
    p.set_defaults(run_command=run_datasets)


def run_datasets(_: argparse.Namespace, console: Console) -> int:
    from covrag.data import BUNDLED, load_dataset

    table = Table(title="Bundled datasets (test splits withheld)")
    for column in ("name", "topics", "passages", "aspects", "licence"):
        table.add_column(column)
    for dataset in BUNDLED.values():
        for split in dataset.splits:
            topics = load_dataset(f"{dataset.name}:{split}")
            table.add_row(
                f"{dataset.name}:{split}",
                str(len(topics)),
                str(sum(len(t.passages) for t in topics)),
                str(sum(len(t.aspects) for t in topics)),
                dataset.licence.split(";")[0],
            )
    console.print(table)
    return 0
