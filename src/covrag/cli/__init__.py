"""``covrag <command>``: the command-line interface.

One module per command family registers its sub-commands (``register``) and runs them; they share
only :mod:`covrag.cli._common`. The work is done by :mod:`covrag.pipeline`, :mod:`covrag.train`
and the stages; the commands parse options, show progress and print results.
"""

from __future__ import annotations

import argparse
import errno
import logging
import sys
from collections.abc import Callable, Sequence

from rich.console import Console

from covrag import __version__
from covrag.cli import (
    ask,
    bench,
    cache,
    cv,
    datasets,
    eval_planner,
    evaluate,
    plan,
    report,
    retrieve,
    select,
    serve,
    train,
)
from covrag.cli._common import Subparsers, console, err_console
from covrag.errors import CovragError

__all__ = ["build_parser", "main"]

Command = Callable[[argparse.Namespace, Console], int]

#: The modules whose ``register`` adds their commands, in the order ``covrag --help`` lists them.
MODULES = (
    select,
    evaluate,
    eval_planner,
    bench,
    cv,
    train,
    retrieve,
    datasets,
    serve,
    report,
    plan,
    ask,
    cache,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="covrag",
        description="Build RAG context that covers the whole question, and measure it.",
    )
    parser.add_argument("--version", action="version", version=f"covrag {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub: Subparsers = parser.add_subparsers(dest="command", required=True, metavar="command")
    for module in MODULES:
        module.register(sub)
    return parser


def os_message(exc: OSError) -> str:
    """One line for an operating-system error: the path and what went wrong with it."""
    reason = exc.strerror or type(exc).__name__
    if exc.errno == errno.ENOSPC:
        reason = "no space left on the device"
    return f"{exc.filename}: {reason}" if exc.filename is not None else reason


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(eval_planner.route(words))
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    command: Command = args.run_command
    try:
        return command(args, console)
    except CovragError as exc:
        err_console.print(f"[bold red]error:[/] {exc}", highlight=False)
        return 2
    except FileNotFoundError as exc:
        err_console.print(f"[bold red]error:[/] no such file: {exc.filename}", highlight=False)
        return 2
    except OSError as exc:
        err_console.print(f"[bold red]error:[/] {os_message(exc)}", highlight=False)
        return 2
    except KeyboardInterrupt:
        err_console.print("interrupted")
        return 130
