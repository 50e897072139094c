"""What ``covrag index --docs`` and ``covrag ask --docs`` share: chunk options, and the indexing
run with its progress bar and report."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from covrag.cli.common import progress_bar
from covrag.errors import ConfigError

if TYPE_CHECKING:
    from covrag.pipeline.corpus import DocumentOptions

#: Skipped files listed one by one (the rest are counted).
_SHOWN_SKIPS = 20
#: The largest ``--max-file-mb`` (100 GB): more is a typo, not a document.
_MAX_FILE_MB = 100_000


def add_chunk_args(parser: argparse.ArgumentParser) -> None:
    """``--chunk-tokens`` and ``--chunk-overlap`` (defaults: :class:`DocumentOptions`'s)."""
    from covrag.pipeline.corpus import DocumentOptions

    parser.add_argument(
        "--chunk-tokens",
        type=int,
        default=DocumentOptions.chunk_tokens,
        help="most tokens (MiniLM WordPiece) per passage cut from --docs (default: %(default)s)",
    )
    parser.add_argument(
        "--chunk-overlap",
        type=int,
        default=DocumentOptions.chunk_overlap,
        help="tokens shared by consecutive passages of a document (default: %(default)s)",
    )


def add_read_args(parser: argparse.ArgumentParser) -> None:
    """``--follow-symlinks`` and ``--max-file-mb``: what ``--docs`` may read."""
    from covrag.pipeline.corpus import DocumentOptions

    parser.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="read symlinks under --docs whose targets lie outside the paths given "
        "(default: skipped and listed)",
    )
    parser.add_argument(
        "--max-file-mb",
        type=float,
        default=DocumentOptions.max_bytes / 1e6,
        help="skip a --docs file larger than this many megabytes (10^6 bytes); no more is "
        "ever read of it (default: %(default)g)",
    )


def document_options(args: argparse.Namespace) -> DocumentOptions:
    """The documents' chunk sizes and read limits of ``--chunk-tokens``, ``--chunk-overlap``,
    ``--follow-symlinks`` and ``--max-file-mb``.

    Raises:
        ConfigError: a size that is not a positive number.
    """
    from covrag.pipeline.corpus import DocumentOptions

    mb = args.max_file_mb
    if not math.isfinite(mb) or mb <= 0 or mb > _MAX_FILE_MB:
        raise ConfigError(f"--max-file-mb {mb:g}: must be above 0 and at most {_MAX_FILE_MB:,}")
    return DocumentOptions(
        chunk_tokens=args.chunk_tokens,
        chunk_overlap=args.chunk_overlap,
        max_bytes=max(1, int(mb * 1e6)),
        follow_symlinks=args.follow_symlinks,
    )


def index_documents(
    paths: Sequence[str],
    out: Path,
    kind: str,
    options: DocumentOptions,
    console: Console,
    wait: float = 0.0,
) -> list[str]:
    """Index ``paths`` into ``out`` (incrementally) with a progress bar, and print what it did
    (``wait``: seconds to wait for another process updating ``out``, 0 to refuse at once); a
    warning per file it skipped."""
    from covrag.pipeline.corpus import index_documents as index

    with progress_bar(console) as progress:
        task = progress.add_task("read documents", total=None)
        report = index(
            paths,
            out,
            kind=kind,
            options=options,
            on_files=lambda n: progress.update(task, total=n),
            on_file=lambda path: progress.update(task, advance=1, description=path.name),
            wait=wait,
        )
    for skip in report.skipped[:_SHOWN_SKIPS]:
        line = escape(f"{skip.source}: {skip.reason}")
        console.print(f"[yellow]skipped[/] {line}", highlight=False)
    if len(report.skipped) > _SHOWN_SKIPS:
        console.print(f"[yellow]skipped[/] {len(report.skipped) - _SHOWN_SKIPS} more files")
    changes = (
        f"{len(report.parsed)} read, {len(report.reused)} unchanged, "
        f"{len(report.removed)} removed, {len(report.skipped)} skipped"
    )
    state = "" if report.written else " (up to date: nothing rewritten)"
    console.print(
        f"indexed {report.passages} passages from {report.documents} documents ({changes}; "
        f"{kind}) in {report.seconds:.2f} s -> {out}{state}",
        highlight=False,
    )
    return [f"skipped {s.source}: {s.reason}" for s in report.skipped]
