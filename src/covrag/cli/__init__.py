"""``covrag <command>``: the command-line interface.

One module per command family registers its sub-commands (``register``) and runs them; they share
only :mod:`covrag.cli.common`. The work is done by :mod:`covrag.pipeline` and the stages; the
commands parse options, show progress and print results. The research commands (cross-validation,
training, fitting) are ``covrag-lab``'s (:mod:`covrag_lab.cli`), outside the product.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from covrag import __version__
from covrag.cli import (
    ask,
    bench,
    cache,
    datasets,
    evaluate,
    plan,
    report,
    retrieve,
    select,
    serve,
)
from covrag.cli.common import Subparsers, run_command

__all__ = ["COMMANDS", "build_parser", "main"]

#: The modules whose ``register`` adds their commands.
MODULES = (select, evaluate, bench, retrieve, datasets, serve, report, plan, ask, cache)

#: The commands, in the order ``covrag --help`` lists them: what a user of the product runs.
COMMANDS = (
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


class _Parser(argparse.ArgumentParser):
    """The top-level parser: its help lists the commands in the order of :data:`COMMANDS`."""

    def format_help(self) -> str:
        formatter = self._get_formatter()
        formatter.add_usage(self.usage, self._actions, self._mutually_exclusive_groups)
        formatter.add_text(self.description)
        sub = next(a for a in self._actions if isinstance(a, argparse._SubParsersAction))
        entries = {entry.dest: entry for entry in sub._choices_actions}
        formatter.start_section("commands")
        formatter.add_arguments([entries[name] for name in COMMANDS])
        formatter.end_section()
        formatter.start_section("options")
        formatter.add_arguments([a for a in self._actions if a.option_strings])
        formatter.end_section()
        formatter.add_text(self.epilog)
        return formatter.format_help()


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="covrag",
        description="Build RAG context that covers the whole question, and measure it.",
        epilog="Cross-validation, training and fitting are covrag-lab's commands "
        "(pip install 'covrag[lab]').",
    )
    parser.add_argument("--version", action="version", version=f"covrag {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub: Subparsers = parser.add_subparsers(
        dest="command", required=True, metavar="command", parser_class=argparse.ArgumentParser
    )
    for module in MODULES:
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    return run_command(build_parser().parse_args(words))
