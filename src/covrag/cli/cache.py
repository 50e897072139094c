"""``covrag cache stats`` and ``covrag cache clear``: the LLM response cache.

Both read or change the SQLite store of :mod:`covrag.llm.cache` in one transaction, so they are
safe while a bench or a server uses the same cache.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from covrag.cli.common import Subparsers
from covrag.errors import ConfigError

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def register(sub: Subparsers) -> None:
    """Register ``covrag cache stats`` and ``covrag cache clear``."""
    p = sub.add_parser("cache", help="show or clear the LLM response cache")
    what = p.add_subparsers(dest="what", required=True, metavar="what")
    stats = what.add_parser("stats", help="what the cache holds, by backend and model")
    _add_path(stats)
    stats.add_argument("--json", action="store_true", help="print the numbers as JSON")
    stats.set_defaults(run_command=run_stats)
    clear = what.add_parser("clear", help="remove cached replies (all, or those filtered)")
    _add_path(clear)
    clear.add_argument(
        "--older-than",
        type=parse_age,
        metavar="AGE",
        help="only replies stored longer ago than AGE: a number and s, m, h, d or w (7d)",
    )
    clear.add_argument("--model", help="only the replies of this model (as stats lists it)")
    clear.set_defaults(run_command=run_clear)


def _add_path(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cache",
        type=Path,
        default=None,
        help="the cache file (default: llm-cache.sqlite in $COVRAG_CACHE_DIR, else in "
        "$XDG_CACHE_HOME/covrag, else in ~/.cache/covrag)",
    )


def parse_age(text: str) -> float:
    """Seconds in an age such as ``90s``, ``30m``, ``12h``, ``7d`` or ``2w``."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", text)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not an age: write a number and s, m, h, d or w (e.g. 7d)"
        )
    return float(match.group(1)) * _UNITS[match.group(2)]


def _cache_path(args: argparse.Namespace) -> Path:
    from covrag.llm.cache import default_cache_path

    path: Path = args.cache or default_cache_path()
    if path.exists() and not path.is_file():
        raise ConfigError(f"--cache {path} is not a file")
    return path


def run_stats(args: argparse.Namespace, console: Console) -> int:
    from covrag.llm.cache import ResponseCache

    path = _cache_path(args)
    if not path.exists():
        console.print(f"no response cache at {path} (nothing cached yet)")
        return 0
    cache = ResponseCache(path)
    try:
        stats = cache.stats()
    finally:
        cache.close()
    if args.json:
        record = {
            "path": str(stats.path),
            "entries": stats.entries,
            "memos": stats.memos,
            "bytes": stats.bytes,
            "oldest": stats.oldest,
            "newest": stats.newest,
            "models": [
                {"backend": m.backend, "model": m.model, "entries": m.entries, "bytes": m.bytes}
                for m in stats.models
            ],
        }
        console.print_json(json.dumps(record))
        return 0
    console.print(
        f"{stats.path}: {stats.entries} cached replies, {stats.memos} memos, "
        f"{_size(stats.bytes)} on disk"
        + (f", from {_ago(stats.oldest)} to {_ago(stats.newest)}" if stats.oldest else "")
    )
    if stats.models:
        table = Table()
        for column in ("backend", "model", "replies", "size"):
            table.add_column(column, justify="right" if column in ("replies", "size") else "left")
        for m in stats.models:
            table.add_row(m.backend, m.model, str(m.entries), _size(m.bytes))
        console.print(table)
    return 0


def run_clear(args: argparse.Namespace, console: Console) -> int:
    from covrag.llm.cache import ResponseCache

    path = _cache_path(args)
    if not path.exists():
        console.print(f"no response cache at {path} (nothing to clear)")
        return 0
    cache = ResponseCache(path)
    try:
        removed = cache.clear(older_than=args.older_than, model=args.model)
        left = len(cache)
    finally:
        cache.close()
    console.print(f"removed {removed} cached replies from {path}; {left} left")
    return 0


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    value = float(n)
    for unit in ("KiB", "MiB"):
        value /= 1024
        if value < 1024:
            return f"{value:.1f} {unit}"
    return f"{value / 1024:.1f} GiB"


def _ago(when: float | None) -> str:
    if when is None:
        return "-"
    seconds = max(0.0, time.time() - when)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} ago"
    return f"{seconds:.0f} s ago"
