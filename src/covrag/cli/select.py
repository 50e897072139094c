"""``covrag select``: select passages per topic and write a TREC run (and a run file)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from covrag.cli._executor import add_ray_option, executor_from_args
from covrag.cli.common import (
    Subparsers,
    add_budget_args,
    add_prepare_args,
    aspect_sources,
    budget_from_args,
    check_outputs,
    load_topics,
    progress_bar,
    write_files,
)
from covrag.types import Selection


def register(sub: Subparsers) -> None:
    p = sub.add_parser("select", help="select passages per topic and write a TREC run")
    p.add_argument("--dataset", required=True, help="bundled name:split or coverage JSONL path")
    p.add_argument("--selector", required=True, help="e.g. greedy-coverage, 'mmr(lam=0.7)'")
    p.add_argument("--coverage", default=None, help="gold, embedding, 'embedding(threshold=.6)'")
    add_budget_args(p)
    add_prepare_args(p)
    p.add_argument("--out", required=True, type=Path, help="TREC run to write")
    p.add_argument(
        "--run-json",
        type=Path,
        default=None,
        help="also write the run file `covrag report` reads: per topic the aspects, passages, "
        "coverage matrix, selection and trace",
    )
    add_ray_option(p)
    p.set_defaults(run_command=run_select)


def run_select(args: argparse.Namespace, console: Console) -> int:
    from covrag.data.trec import format_run
    from covrag.pipeline import config_for
    from covrag.pipeline.batch import select_topics
    from covrag.pipeline.stages import (
        parse_estimator,
        parse_selector,
        run_file_record,
        topic_run_record,
    )

    check_outputs(
        [("--dataset", args.dataset)],
        [("--out", args.out), ("--run-json", args.run_json)],
    )
    topics = load_topics(args)
    selector = parse_selector(args.selector)
    estimator = parse_estimator(args.coverage) if args.coverage else None
    budget = budget_from_args(args.k, args.budget_tokens)
    config = config_for([selector], args.relevance)
    source = aspect_sources(args, [args.aspects])[args.aspects] if args.aspects != "gold" else None
    with executor_from_args(args) as executor, progress_bar(console) as progress:
        task = progress.add_task(f"select {selector!r}", total=len(topics))
        done = select_topics(
            topics,
            selector,
            budget,
            estimator,
            config,
            source=source,
            executor=executor,
            progress=lambda _: progress.advance(task),
        )
    selections = [selection for selection, _ in done]
    records: list[dict[str, Any]] = []
    if args.run_json:
        for topic, (selection, candidates) in zip(topics, done, strict=True):
            costed = dataclasses.replace(topic, passages=candidates.passages)
            records.append(topic_run_record(costed, selection, candidates.coverage))
    # Outputs are written only once every topic succeeded: no partial files.
    run = {s.query_id: s.passage_ids for s in selections}
    files = {args.out: format_run(run, tag=repr(selector))}
    if args.run_json:
        run_file = run_file_record(
            records,
            dataset=args.dataset,
            selector=repr(selector),
            coverage=repr(estimator) if estimator else "",
            budget=str(budget),
        )
        files[args.run_json] = json.dumps(run_file) + "\n"
    write_files(files)
    console.print(_summary(selections, f"{selector!r} on {args.dataset} ({budget})", estimator))
    console.print(f"wrote {args.out}" + (f" and {args.run_json}" if args.run_json else ""))
    return 0


def _summary(selections: list[Selection], title: str, estimator: object) -> Table:
    table = Table(title=title)
    for column in ("topics", "passages/topic", "tokens/topic", "aspects newly covered/topic"):
        table.add_column(column, justify="right")
    n = max(len(selections), 1)
    table.add_row(
        str(len(selections)),
        f"{sum(len(s) for s in selections) / n:.1f}",
        f"{sum(s.tokens_used for s in selections) / n:.0f}",
        f"{sum(len(s.covered) for s in selections) / n:.2f}" if estimator else "-",
    )
    return table
