"""``covrag-lab <command>``: the research commands (cross-validation, training, fitting,
evaluating planners, qrels from coverage estimates).

One module per command family registers its sub-commands (``register``) and runs them; they build
on covrag's CLI plumbing (:mod:`covrag.cli.common`: options generated from config dataclasses,
consoles, progress, error handling), so a research command reads like a product one. The work is
done by :mod:`covrag_lab.cv`, :mod:`covrag_lab.train` and covrag's public API.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from covrag.cli.common import run_command
from covrag.cli.parsers import command_parser
from covrag_lab.cli import cv, eval_planner, train

__all__ = ["COMMANDS", "build_parser", "main"]

#: The modules whose ``register`` adds their commands.
MODULES = (cv, train, eval_planner)

#: The commands, in the order ``covrag-lab --help`` lists them: cross-validation, fitting LMVU,
#: training (the coverage cross-encoder, question forms, planner data and planner, CoveR), qrels
#: from gold labels or a coverage estimator, and judging trained planners.
COMMANDS = ("cv", "fit", "train", "qrels", "eval-planner")


def build_parser() -> argparse.ArgumentParser:
    return command_parser(
        "covrag-lab",
        "covrag's research commands: cross-validate, train, fit and evaluate.",
        MODULES,
    )


def main(argv: Sequence[str] | None = None) -> int:
    words = sys.argv[1:] if argv is None else argv
    return run_command(build_parser().parse_args(eval_planner.route(words)))
