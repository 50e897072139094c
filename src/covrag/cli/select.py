"""``covrag select``: select passages per topic and write a TREC run (and a run file)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from covrag.cli._executor import add_ray_option, executor_from_args
from covrag.cli.common import (
    Subparsers,
    add_budget_args,
    add_prepare_args,
    aspect_options,
    budget_from_args,
    build_llm,
    check_outputs,
    load_topics,
    needs_llm,
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
    from covrag.pipeline.policy import SELECT_BATCH
    from covrag.pipeline.usecases import built, run_file, select_topics

    check_outputs(
        [("--dataset", args.dataset)],
        [("--out", args.out), ("--run-json", args.run_json)],
    )
    topics = load_topics(args)
    budget = budget_from_args(args.k, args.budget_tokens)
    policy = built(
        dataclasses.replace(
            SELECT_BATCH,
            selector=args.selector,
            coverage=args.coverage or None,
            aspects=args.aspects if args.aspects != "gold" else None,
            aspect_options=aspect_options(args),
            k=budget.max_passages,
            max_tokens=budget.max_tokens,
            relevance=args.relevance,
        )
    )
    selector, estimator = policy.selector, policy.coverage
    with executor_from_args(args) as executor, progress_bar(console) as progress:
        task = progress.add_task(f"select {selector!r}", total=len(topics))
        done = select_topics(
            topics,
            policy,
            llm=build_llm(args.llm) if needs_llm(policy) else None,
            executor=executor,
            progress=lambda _: progress.advance(task),
        )
    selections = [selection for selection, _ in done]
    # Outputs are written only once every topic succeeded: no partial files.
    run = {s.query_id: s.passage_ids for s in selections}
    files = {args.out: format_run(run, tag=repr(selector))}
    if args.run_json:
        files[args.run_json] = json.dumps(run_file(topics, done, policy, args.dataset)) + "\n"
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
