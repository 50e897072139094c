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
from covrag.cli.common import run_command
from covrag.cli.parsers import command_parser

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


def build_parser() -> argparse.ArgumentParser:
    return command_parser(
        "covrag",
        "Build RAG context that covers the whole question, and measure it.",
        MODULES,
        commands=COMMANDS,
        epilog="Cross-validation, training and fitting are covrag-lab's commands "
        "(pip install 'covrag[lab]').",
    )


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    return run_command(build_parser().parse_args(words))
