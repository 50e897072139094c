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

#: The modules whose ``register`` adds their commands.
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


#: The commands ``covrag --help`` lists first, in this order: what a user of the product runs.
PRODUCT_COMMANDS = (
    "ask",
    "index",
    "search",
    "select",
    "plan",
    "serve",
    "report",
    "eval",
    "eval-answers",
    "bench",
    "demo",
    "datasets",
    "cache",
)
#: The commands listed after them, under their own heading: cross-validation, training (question
#: forms, planner data, CoveR, the coverage cross-encoder, LMVU) and evaluation of experiments.
RESEARCH_COMMANDS = ("cv", "train", "fit", "eval-planner", "qrels")


class _Parser(argparse.ArgumentParser):
    """The top-level parser: its help lists the product commands, then the research ones."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        sub = next(a for a in self._actions if isinstance(a, argparse._SubParsersAction))
        entries = {entry.dest: entry for entry in sub._choices_actions}
        for title, names in (
            ("commands", PRODUCT_COMMANDS),
            ("research commands", RESEARCH_COMMANDS),
        ):
            formatter.start_section(title)
            formatter.add_arguments([entries[name] for name in names])
            formatter.end_section()
        formatter.start_section("options")
        formatter.add_arguments([a for a in self._actions if a.option_strings])
        formatter.end_section()
        return formatter.format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="covrag",
        description="Build RAG context that covers the whole question, and measure it.",
    )
    parser.add_argument("--version", action="version", version=f"covrag {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub: Subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="command", parser_class=argparse.ArgumentParser
    )
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
