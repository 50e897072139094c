"""``--ray [ADDRESS]``: where ``bench``, ``select`` and ``index`` run their per-topic work."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from covrag.pipeline.executor import Executor


def add_ray_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help="run the per-topic work on Ray (pip install 'covrag[ray]'): 'auto' = the cluster "
        "this machine belongs to (ray start), or a cluster address (ray://host:10001, "
        "host:6379); no address = a Ray instance started on this machine for the command. "
        "Results are the same as without --ray",
    )


@contextlib.contextmanager
def executor_from_args(args: argparse.Namespace) -> Iterator[Executor | None]:
    """The Ray executor ``--ray`` asks for (connected for the command's duration), or None."""
    if args.ray is None:
        yield None
        return
    from covrag.pipeline.distributed import RayExecutor

    with RayExecutor.connect(args.ray) as executor:
        yield executor
