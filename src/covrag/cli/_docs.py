"""What ``covrag index --docs`` and ``covrag ask --docs`` share: chunk options, the indexing run
with its progress bar and report, and the cache of indexes built on the fly."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from covrag.cli.common import progress_bar
from covrag.errors import ConfigError

if TYPE_CHECKING:
    from covrag.pipeline.stages import Chunker, IngestReport

#: Skipped files listed one by one (the rest are counted).
_SHOWN_SKIPS = 20
#: The largest ``--max-file-mb`` (100 GB): more is a typo, not a document.
_MAX_FILE_MB = 100_000


def add_chunk_args(parser: argparse.ArgumentParser) -> None:
    """``--chunk-tokens`` and ``--chunk-overlap`` (defaults from :class:`covrag.ingest.Chunker`)."""
    from covrag.pipeline.stages import DEFAULT_OVERLAP, DEFAULT_TOKENS

    parser.add_argument(
        "--chunk-tokens",
        type=int,
        default=DEFAULT_TOKENS,
        help="most tokens (MiniLM WordPiece) per passage cut from --docs (default: %(default)s)",
    )
    parser.add_argument(
        "--chunk-overlap",
        type=int,
        default=DEFAULT_OVERLAP,
        help="tokens shared by consecutive passages of a document (default: %(default)s)",
    )


def add_read_args(parser: argparse.ArgumentParser) -> None:
    """``--follow-symlinks`` and ``--max-file-mb``: what ``--docs`` may read."""
    from covrag.pipeline.stages import DEFAULT_MAX_BYTES

    parser.add_argument(
        "--follow-symlinks",
        action="store_true",
        help="read symlinks under --docs whose targets lie outside the paths given "
        "(default: skipped and listed)",
    )
    parser.add_argument(
        "--max-file-mb",
        type=float,
        default=DEFAULT_MAX_BYTES / 1e6,
        help="skip a --docs file larger than this many megabytes (10^6 bytes); no more is "
        "ever read of it (default: %(default)g)",
    )


def read_limits(args: argparse.Namespace) -> dict[str, Any]:
    """``update_index``'s keyword arguments for ``--follow-symlinks`` and ``--max-file-mb``.

    Raises:
        ConfigError: a size that is not a positive number.
    """
    mb = args.max_file_mb
    if not math.isfinite(mb) or mb <= 0 or mb > _MAX_FILE_MB:
        raise ConfigError(f"--max-file-mb {mb:g}: must be above 0 and at most {_MAX_FILE_MB:,}")
    return {"follow_symlinks": args.follow_symlinks, "max_bytes": max(1, int(mb * 1e6))}


def chunker_from_args(args: argparse.Namespace) -> Chunker:
    from covrag.pipeline.stages import Chunker

    return Chunker(tokens=args.chunk_tokens, overlap=args.chunk_overlap)


def index_documents(
    paths: Sequence[str],
    out: Path,
    kind: str,
    chunker: Chunker,
    console: Console,
    limits: dict[str, Any] | None = None,
    wait: float = 0.0,
) -> IngestReport:
    """Index ``paths`` into ``out`` (incrementally) with a progress bar, and print what it did
    (``limits``: :func:`read_limits`; ``wait``: seconds to wait for another process updating
    ``out``, 0 to refuse at once)."""
    from covrag.pipeline.stages import update_index

    with progress_bar(console) as progress:
        task = progress.add_task("read documents", total=None)
        report = update_index(
            paths,
            out,
            kind=kind,
            chunker=chunker,
            on_files=lambda n: progress.update(task, total=n),
            on_file=lambda path: progress.update(task, advance=1, description=path.name),
            wait=wait,
            **(limits or {}),
        )
    _print_report(report, out, kind, console)
    return report


def _print_report(report: IngestReport, out: Path, kind: str, console: Console) -> None:
    for skip in report.skipped[:_SHOWN_SKIPS]:
        console.print(f"[yellow]skipped[/] {skip.source}: {skip.reason}", highlight=False)
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


def cached_index(paths: Sequence[str], kind: str, chunker: Chunker) -> Path:
    """The cache folder of an index built on the fly for ``covrag ask --docs``: one per set of
    named paths, kind and chunk settings, updated incrementally (files by content hash), so
    asking again about the same documents reads none of them again."""
    from covrag.llm.cache import default_cache_dir

    named = sorted(os.path.abspath(p) for p in paths)
    key = json.dumps({"paths": named, "kind": kind, "chunks": chunker.settings}, sort_keys=True)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return default_cache_dir() / "docs-indexes" / digest
