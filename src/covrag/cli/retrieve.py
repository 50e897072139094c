"""CLI commands for retrieval: ``covrag index`` and ``covrag search``."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from covrag.cli._docs import (
    add_chunk_args,
    add_read_args,
    document_options,
    index_documents,
)
from covrag.cli._executor import add_ray_option, executor_from_args
from covrag.cli.common import Subparsers, check_outputs
from covrag.errors import ConfigError

_SHOWN_CHARS = 160  # display only: the table shows the start of long passages


def register(sub: Subparsers) -> None:
    """Register ``covrag index`` and ``covrag search``."""
    p = sub.add_parser(
        "index",
        help="build and save a retrieval index over your documents or a passage corpus",
    )
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--docs",
        nargs="+",
        default=None,
        metavar="PATH",
        help="files, folders (searched recursively) or globs of .txt, .md, .html, .pdf and "
        "passage .jsonl files; an existing index at --out is updated incrementally",
    )
    source.add_argument(
        "--corpus",
        default=None,
        help="passage JSONL path, bundled name[:split], coverage JSONL path, or 'bundled' "
        "(default without --docs: the pools of all bundled datasets)",
    )
    p.add_argument("--kind", choices=["bm25", "dense", "hybrid", "cover"], default="bm25")
    p.add_argument(
        "--model",
        default=None,
        help="embedding model of a dense index (default: the packaged MiniLM); required for "
        "--kind cover: a CoveR model folder (covrag-lab train cover)",
    )
    add_chunk_args(p)
    add_read_args(p)
    p.add_argument("--out", required=True, type=Path, help="index folder to write")
    add_ray_option(p)
    p.set_defaults(run_command=run_index)

    p = sub.add_parser("search", help="search a saved index")
    p.add_argument("--index", required=True, type=Path, help="index folder (covrag index)")
    p.add_argument("query", help="the query text")
    p.add_argument("--k", type=int, default=10, help="number of results")
    p.add_argument(
        "--covered",
        nargs="+",
        default=[],
        metavar="ASPECT",
        help="aspects already covered (a cover index ranks first what answers something else)",
    )
    p.set_defaults(run_command=run_search)


def run_index(args: argparse.Namespace, console: Console) -> int:
    from covrag.pipeline.corpus import index_corpus

    if args.model is not None and args.kind not in ("dense", "cover"):
        raise ConfigError(f"--model applies to dense and cover indexes, not {args.kind}")
    if args.docs is not None:
        if getattr(args, "ray", None) is not None:
            raise ConfigError("--ray spreads --corpus indexing; --docs indexes in this process")
        options = document_options(args)
        check_outputs([("--docs", p) for p in args.docs], [], [("--out", args.out)])
        index_documents(args.docs, args.out, args.kind, options, console)
        return 0
    corpus = args.corpus or "bundled"
    check_outputs([("--corpus", corpus), ("--model", args.model)], [], [("--out", args.out)])
    with executor_from_args(args) as executor:
        built = index_corpus(corpus, args.kind, model=args.model, executor=executor)
    built.retriever.save(args.out)
    console.print(
        f"indexed {built.passages} passages from {corpus} ({args.kind}) in "
        f"{built.index_seconds:.2f} s (corpus read in {built.read_seconds:.2f} s) -> {args.out}",
        highlight=False,
    )
    return 0


def run_search(args: argparse.Namespace, console: Console) -> int:
    from covrag.pipeline.corpus import search

    started = time.perf_counter()
    results = search(args.index, args.query, args.k, args.covered)
    seconds = time.perf_counter() - started
    table = Table(title=f"{escape(args.query)} ({len(results)} results, {seconds:.3f} s)")
    table.add_column("rank", justify="right")
    table.add_column("id")
    table.add_column("score", justify="right")
    table.add_column("text")
    for rank, passage in enumerate(results, start=1):
        text = passage.text
        if len(text) > _SHOWN_CHARS:
            text = text[: _SHOWN_CHARS - 1] + "…"
        table.add_row(str(rank), escape(passage.id), f"{passage.score:.4g}", escape(text))
    console.print(table)
    return 0
