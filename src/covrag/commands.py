"""Implementations of the CLI commands (rich output lives here, not in the library)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from covrag.bench import ORACLE, BenchResult, Method, build_methods, run_bench
from covrag.coverage import parse_estimator
from covrag.data import load_dataset, write_run
from covrag.data.trec import format_run
from covrag.errors import ConfigError
from covrag.files import atomic_write_text
from covrag.pipeline import PrepareConfig, config_for, prepare
from covrag.plan.sources import AspectSource
from covrag.report.runfile import run_file_record, selection_record, topic_run_record
from covrag.select import parse_selector
from covrag.types import Budget, Selection, Topic

T = TypeVar("T")


def progress_bar(console: Console) -> Progress:
    """The CLI's progress bar: transient, and hidden when output is not a terminal."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )


def progress_iter(items: Iterable[T], total: int, label: str, console: Console) -> Iterator[T]:
    """Iterate with a progress bar on the console (hidden when output is not a terminal)."""
    with progress_bar(console) as progress:
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


def trace_record(selection: Selection) -> dict[str, object]:
    """One line of ``select --trace``: the topic id and its selection's steps."""
    return {"query_id": selection.query_id, **selection_record(selection)}


def load_topics(args: argparse.Namespace) -> list[Topic]:
    """The dataset ``--dataset`` names, with ``--exclude-aspects`` applied."""
    from covrag.data.exclusion import exclude_aspects

    topics = load_dataset(args.dataset)
    return exclude_aspects(topics, args.exclude_aspects, args.exclude_seed)


def run_select(args: argparse.Namespace, console: Console) -> int:
    topics = load_topics(args)
    selector = parse_selector(args.selector)
    estimator = parse_estimator(args.coverage) if args.coverage else None
    budget = budget_from_args(args.k, args.budget_tokens)
    config = config_for([selector], args.relevance)
    source = _aspect_source(args)
    selections = []
    records: list[dict[str, Any]] = []
    for topic in progress_iter(topics, len(topics), f"select {selector!r}", console):
        # Coverage is estimated against the chosen aspects; the run is judged on the gold labels.
        estimated = source.apply(topic) if source is not None else topic
        candidates = prepare(estimated, estimator, config).candidates
        selection = selector.select(candidates, budget)
        selections.append(selection)
        if args.run_json:
            costed = dataclasses.replace(topic, passages=candidates.passages)
            records.append(topic_run_record(costed, selection, candidates.coverage))
    # Outputs are written only once every topic succeeded: no partial files.
    write_run(args.out, {s.query_id: s.passage_ids for s in selections}, tag=repr(selector))
    if args.trace:
        atomic_write_text(
            args.trace, "".join(json.dumps(trace_record(s)) + "\n" for s in selections)
        )
    if args.run_json:
        run_file = run_file_record(
            records,
            dataset=args.dataset,
            selector=repr(selector),
            coverage=repr(estimator) if estimator else "",
            budget=str(budget),
        )
        atomic_write_text(args.run_json, json.dumps(run_file) + "\n")
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
    extra = [str(p) for p in (args.trace, args.run_json) if p]
    console.print(f"wrote {args.out}" + "".join(f" and {p}" for p in extra))
    return 0


def run_eval(args: argparse.Namespace, console: Console) -> int:
    from covrag.data import read_run
    from covrag.evaluate import Judgments, evaluate
    from covrag.tokens import with_token_costs

    topics = load_topics(args)
    measures = list(args.measures)
    if args.exclude_aspects and not any(m.lower().startswith("excl") for m in measures):
        ranked = [m for m in measures if not m.upper().startswith("RVC") and "@" in m]
        measures.append("Excl@" + (ranked[0].rsplit("@", 1)[1] if ranked else "10"))
    if any(m.upper().startswith("RVC") for m in measures):
        topics = [with_token_costs(t) for t in topics]
    run = read_run(args.run)
    results = evaluate(Judgments.from_topics(topics), run, measures)
    if args.json:
        payload: dict[str, object] = {
            "dataset": args.dataset,
            "run": str(args.run),
            "means": {repr(m): v for m, v in results.means().items()},
        }
        if args.per_query:
            payload["per_query"] = {repr(m): results[m] for m in results.measures}
        console.print_json(data=payload)
        return 0
    table = Table(title=f"{args.run} on {args.dataset} ({len(results.query_ids)} topics)")
    table.add_column("topic")
    for measure in results.measures:
        table.add_column(repr(measure), justify="right")
    if args.per_query:
        for i, query_id in enumerate(results.query_ids):
            table.add_row(query_id, *(f"{v:.4f}" for v in results.values[i]))
    table.add_row("[bold]mean[/]", *(f"[bold]{v:.4f}[/]" for v in results.means().values()))
    console.print(table)
    return 0


def bench_table(result: BenchResult, budget: Budget) -> Table:
    rows = result.for_budget(budget)
    specs = result.measures[str(budget)]
    table = Table(title=f"{result.dataset}: {result.topics} topics, budget {budget}")
    table.add_column("method", overflow="fold", min_width=16)
    for spec in specs:
        table.add_column(spec, justify="right")
    has_headroom = any(r.headroom for r in rows)
    if has_headroom:
        table.add_column("headroom", justify="right")
        table.add_column("gap closed", justify="right")
    table.add_column("select ms/topic", justify="right")
    has_cost = any(r.coverage_pairs for r in rows)
    if has_cost:
        table.add_column("coverage pairs/topic", justify="right")
        table.add_column("coverage s/topic", justify="right")
    for row in rows:
        cells = []
        for spec in specs:
            mean = row.means[spec]
            low, high = row.ci[spec]
            p = row.p_values.get(spec)
            mark = "" if p is None else ("*" if p < 0.05 else "")
            cells.append(f"{mean:.3f}{mark} [dim]±{(high - low) / 2:.2f}[/]")
        if has_headroom:
            ((spec, room),) = row.headroom.items() if row.headroom else (("", float("nan")),)
            closed = row.gap_closed.get(spec, float("nan"))
            cells.append("-" if row.method == ORACLE else f"{room:.3f}")
            skip = row.method in (ORACLE, result.baseline) or math.isnan(closed)
            cells.append("-" if skip else f"{closed:.0%}")  # nan: the baseline has no gap
        cells.append(f"{1000 * row.select_seconds:.2f}")
        if has_cost:
            cells.append(f"{row.coverage_pairs:.0f}" if row.coverage_pairs else "-")
            cells.append(f"{row.coverage_seconds:.2f}" if row.coverage_pairs else "-")
        name = f"[bold]{row.method}[/]" if row.method == result.baseline else row.method
        table.add_row(name, *cells)
    few = " (too few topics for any difference to reach p < 0.05)" if result.topics < 6 else ""
    table.caption = (
        "mean ± half-width of the 95% bootstrap CI; * = differs from the baseline "
        f"[bold]{result.baseline}[/] (paired randomization test, Holm-corrected, p < 0.05){few}; "
        "headroom = exact optimum minus method on the coverage measure; "
        "gap closed = share of the baseline-to-optimum gap"
    )
    return table


def run_bench_command(args: argparse.Namespace, console: Console) -> int:
    topics = load_topics(args)
    methods = build_methods(args.selectors, args.coverage, args.aspects)
    budgets = [parse_budget(b) for b in args.budgets]
    baseline = None
    if args.baseline:
        baseline = next((m.name for m in methods if m.name.startswith(args.baseline)), None)
        if baseline is None:
            raise ConfigError(f"--baseline {args.baseline!r} matches none of the methods")
    result = _bench_with_progress(args.dataset, topics, methods, budgets, args, baseline, console)
    if args.out:
        _write_bench(result, args.out)
    if args.json:
        summary = result.to_json()
        for row in summary["results"]:
            row.pop("per_query")
        console.print_json(data=summary)
    else:
        for budget in budgets:
            console.print(bench_table(result, budget))
    if args.out and not args.json:
        console.print(f"wrote runs and summary.json to {args.out}")
    return 0


def _bench_with_progress(
    dataset: str,
    topics: list[Topic],
    methods: list[Method],
    budgets: list[Budget],
    args: argparse.Namespace,
    baseline: str | None,
    console: Console,
) -> BenchResult:
    with progress_bar(console) as progress:
        task = progress.add_task(f"bench {dataset}", total=len(topics))
        return run_bench(
            dataset,
            topics,
            methods,
            budgets,
            measures=args.measures,
            baseline=baseline,
            exact=not args.no_exact,
            config=config_for([m.selector for m in methods], args.relevance),
            seed=args.seed,
            progress=lambda _: progress.advance(task),
            aspect_sources=_aspect_sources(args, methods),
        )


def _aspect_source(args: argparse.Namespace) -> AspectSource | None:
    """The ``--aspects`` source of ``select`` (None for the gold aspects)."""
    if getattr(args, "aspects", "gold") == "gold":
        return None
    from covrag.commands_plan import aspect_sources

    source: AspectSource = aspect_sources(args, [args.aspects])[args.aspects]
    return source


def _aspect_sources(args: argparse.Namespace, methods: list[Method]) -> dict[str, AspectSource]:
    names = sorted({m.aspects for m in methods} - {"gold"})
    if not names:
        return {}
    from covrag.commands_plan import aspect_sources

    return aspect_sources(args, names)


def _write_bench(result: BenchResult, folder: Path) -> None:
    files: dict[Path, str] = {
        folder / "summary.json": json.dumps(result.to_json(), indent=2) + "\n",
    }
    for row in result.results:
        slug = "".join(c if c.isalnum() or c in "-_=." else "_" for c in row.method)
        budget = str(row.budget).replace(",", "_")
        run = {s.query_id: s.passage_ids for s in row.selections}
        files[folder / "runs" / f"{slug}__{budget}.trec"] = format_run(run, tag=row.method)
    # Render everything first, then write: an error never leaves half a result folder.
    for path, text in files.items():
        atomic_write_text(path, text)


DEMO_DATASET = "argkp2021:dev"
DEMO_SELECTORS = ["random", "topk", "mmr(lam=0.5)", "greedy-coverage", "expected-coverage"]
DEMO_COVERAGE = ["gold", "embedding", "cross-encoder"]


def run_demo(args: argparse.Namespace, console: Console) -> int:
    """A bench on ArgKP dev that a newcomer can read, and one selection traced step by step."""
    topics = load_dataset(DEMO_DATASET)
    console.rule("[bold]covrag demo[/]")
    console.print(
        f"Dataset [bold]{DEMO_DATASET}[/]: {len(topics)} debate topics; per topic about "
        f"{sum(len(t.passages) for t in topics) // len(topics)} crowd arguments (the passages) and "
        "8-10 expert key points (the aspects a complete answer covers). Human labels say which "
        "argument makes which key point.\n"
    )
    topic = topics[0]
    candidates = prepare(topic, parse_estimator("gold"), PrepareConfig()).candidates
    selection = parse_selector("greedy-coverage").select(candidates, Budget(max_passages=5))
    texts = {p.id: p.text for p in topic.passages}
    aspect_text = {a.id: a.text for a in topic.aspects}
    table = Table(
        title=f"greedy-coverage on the gold labels, first 5 picks for: {topic.query!r}",
        show_lines=True,
    )
    table.add_column("#", justify="right")
    table.add_column("argument")
    table.add_column("key points it newly covers")
    for rank, step in enumerate(selection.steps, start=1):
        table.add_row(
            str(rank),
            texts[step.passage_id],
            "\n".join(aspect_text[a] for a in step.newly_covered) or "-",
        )
    console.print(table)
    missing = [a.text for a in topic.aspects if a.id not in set(selection.covered)]
    console.print(
        f"{len(selection.covered)} of {len(topic.aspects)} key points covered by 5 arguments"
        + (f"; still missing: {'; '.join(missing)}" if missing else "")
        + "\n"
    )

    methods = build_methods(DEMO_SELECTORS, DEMO_COVERAGE)
    budgets = [Budget(max_passages=10)]
    bench_args = argparse.Namespace(measures=None, no_exact=False, relevance="dense", seed=0)
    result = _bench_with_progress(
        DEMO_DATASET, topics, methods, budgets, bench_args, methods[0].name, console
    )
    console.print(bench_table(result, budgets[0]))
    console.print(
        "How to read it: random is the floor. topk (most query-similar first) repeats the "
        "dominant key point. greedy-coverage @ gold shows what DES's selection rule reaches "
        "with perfect coverage estimates; @ embedding uses MiniLM similarity instead, a weak "
        "estimate; @ cross-encoder uses covrag's own coverage model (trained on the train "
        "splits, shipped as int8 ONNX), with no labels. expected-coverage reads the model's "
        "probabilities instead of a threshold, so a confident match beats a near miss. "
        "exact @ gold is the most key points any 10 arguments can cover: headroom is how far "
        "each method is from it on StRecall@10."
    )
    _write_bench(result, args.out)
    console.print(f"\nRuns and summary.json written to {args.out}/")
    return 0
