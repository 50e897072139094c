"""Implementations of the CLI commands (rich output lives here, not in the library)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from covrag.coverage import parse_estimator
from covrag.data import load_dataset, write_run
from covrag.data.jsonl import atomic_write_text
from covrag.errors import ConfigError
from covrag.pipeline import PrepareConfig, prepare
from covrag.select import parse_selector
from covrag.types import Budget, Selection

T = TypeVar("T")


def progress_iter(items: Iterable[T], total: int, label: str, console: Console) -> Iterator[T]:
    """Iterate with a progress bar on the console (hidden when output is not a terminal)."""
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    ) as progress:
        task = progress.add_task(label, total=total)
        for item in items:
            yield item
            progress.advance(task)


def budget_from_args(k: int | None, tokens: int | None, default_k: int | None = 10) -> Budget:
    if k is None and tokens is None:
        return Budget(max_passages=default_k)
    try:
        return Budget(max_passages=k, max_tokens=tokens)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def parse_budget(spec: str) -> Budget:
    """``k=10``, ``tokens=1024``, ``k=10,tokens=1024`` or ``all``."""
    if spec.strip() in ("all", "unlimited"):
        return Budget()
    values: dict[str, int] = {}
    for part in spec.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("k", "tokens") or not value.strip().isdigit():
            raise ConfigError(f"budget {spec!r}: use k=N, tokens=N or k=N,tokens=N")
        values[key] = int(value)
    try:
        return Budget(max_passages=values.get("k"), max_tokens=values.get("tokens"))
    except ValueError as exc:
        raise ConfigError(f"budget {spec!r}: {exc}") from None


def selection_record(selection: Selection) -> dict[str, object]:
    return {
        "query_id": selection.query_id,
        "selector": selection.selector,
        "budget": str(selection.budget),
        "tokens_used": selection.tokens_used,
        "seconds": selection.seconds,
        "steps": [
            {
                "passage_id": s.passage_id,
                "score": s.score,
                "newly_covered": list(s.newly_covered),
                "tokens": s.tokens,
            }
            for s in selection.steps
        ],
    }


def run_select(args: argparse.Namespace, console: Console) -> int:
    topics = load_dataset(args.dataset)
    selector = parse_selector(args.selector)
    estimator = parse_estimator(args.coverage) if args.coverage else None
    budget = budget_from_args(args.k, args.budget_tokens)
    config = PrepareConfig(relevance=args.relevance)
    selections = []
    for topic in progress_iter(topics, len(topics), f"select {selector!r}", console):
        candidates = prepare(topic, estimator, config).candidates
        selections.append(selector.select(candidates, budget))
    # Outputs are written only once every topic succeeded: no partial files.
    write_run(args.out, {s.query_id: s.passage_ids for s in selections}, tag=repr(selector))
    if args.trace:
        atomic_write_text(
            args.trace, "".join(json.dumps(selection_record(s)) + "\n" for s in selections)
        )
    table = Table(title=f"{selector!r} on {args.dataset} ({budget})")
    for column in ("topics", "passages/topic", "tokens/topic", "aspects newly covered/topic"):
        table.add_column(column, justify="right")
    n = max(len(selections), 1)
    table.add_row(
        str(len(selections)),
        f"{sum(len(s) for s in selections) / n:.1f}",
        f"{sum(s.tokens_used for s in selections) / n:.0f}",
        f"{sum(len(s.covered) for s in selections) / n:.2f}" if estimator else "-",
    )
    console.print(table)
    console.print(f"wrote {args.out}" + (f" and {args.trace}" if args.trace else ""))
    return 0
