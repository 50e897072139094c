"""``covrag report``: one self-contained HTML file from a run file or a bench summary."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console

from covrag.cli.common import Subparsers, check_outputs


def register(sub: Subparsers) -> None:
    """Register ``covrag report`` and its options."""
    p = sub.add_parser(
        "report",
        help="write an HTML coverage report of a run (select --run-json) or a bench (--out DIR)",
    )
    p.add_argument(
        "source",
        type=Path,
        help="run JSON from `covrag select --run-json`, or a bench summary.json or its folder",
    )
    p.add_argument(
        "-o", "--out", required=True, type=Path, help="HTML file to write ('-': standard output)"
    )
    p.set_defaults(run_command=run_report)


def run_report(args: argparse.Namespace, console: Console) -> int:
    from covrag.pipeline.usecases import report

    if str(args.out) == "-":  # not a file: a pipe or terminal takes the page as it is
        sys.stdout.write(report(args.source))
        return 0
    inputs = [("source", args.source), ("source", args.source / "summary.json")]
    check_outputs(inputs, [("--out", args.out)])
    path = report(args.source, args.out)
    console.print(f"wrote {path}")
    return 0
