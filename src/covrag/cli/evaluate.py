"""``covrag eval``: score a TREC run against a dataset's labels or a TREC qrels file."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from covrag.cli.common import Subparsers, add_exclude_args, check_measures, load_topics
from covrag.errors import ConfigError


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "eval",
        help="score a TREC run against a dataset's labels or qrels",
    )
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--dataset", help="bundled name:split or coverage JSONL path")
    source.add_argument(
        "--qrels",
        type=Path,
        help="TREC diversity qrels file instead of a dataset (query_id aspect_id doc_id relevance)",
    )
    p.add_argument("--run", required=True, type=Path, help="TREC run file")
    p.add_argument(
        "--measures",
        nargs="+",
        default=["alpha-nDCG@10", "StRecall@10", "P@10", "nDCG@10"],
        help="measure specs, e.g. alpha-nDCG@10 'alpha-nDCG(alpha=0.7)@20' RVC@1024",
    )
    add_exclude_args(p)
    p.add_argument("--per-query", action="store_true", help="show per-query values")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run_command=run_eval)


def run_eval(args: argparse.Namespace, console: Console) -> int:
    from covrag.data import read_run
    from covrag.pipeline.usecases import evaluate

    check_measures(args.measures)
    labels, measures = _labels(args)
    run = read_run(args.run)
    results = evaluate(run, measures, **labels)
    source = args.dataset if args.qrels is None else str(args.qrels)
    if args.json:
        payload: dict[str, object] = {
            "dataset" if args.qrels is None else "qrels": source,
            "run": str(args.run),
            "means": {repr(m): v for m, v in results.means().items()},
        }
        if args.per_query:
            payload["per_query"] = {repr(m): results[m] for m in results.measures}
        console.print_json(data=payload)
        return 0
    table = Table(title=f"{args.run} on {source} ({len(results.query_ids)} topics)")
    table.add_column("topic")
    for measure in results.measures:
        table.add_column(repr(measure), justify="right")
    if args.per_query:
        for i, query_id in enumerate(results.query_ids):
            table.add_row(query_id, *(f"{v:.4f}" for v in results.values[i]))
    table.add_row("[bold]mean[/]", *(f"[bold]{v:.4f}[/]" for v in results.means().values()))
    console.print(table)
    return 0


def _labels(args: argparse.Namespace) -> tuple[dict[str, Any], list[str]]:
    """What the run is judged on (``--dataset``'s topics or ``--qrels``), and the measures."""
    measures = list(args.measures)
    if args.qrels is not None:
        if args.exclude_aspects:
            raise ConfigError("--exclude-aspects needs --dataset (qrels name no gold aspects)")
        return {"qrels": args.qrels}, measures
    topics = load_topics(args)
    if args.exclude_aspects and not any(m.lower().startswith("excl") for m in measures):
        ranked = [m for m in measures if not m.upper().startswith("RVC") and "@" in m]
        measures.append("Excl@" + (ranked[0].rsplit("@", 1)[1] if ranked else "10"))
    return {"topics": topics}, measures
