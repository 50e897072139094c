"""``covrag bench`` (compare methods on a dataset) and ``covrag demo`` (the newcomer's tour)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from covrag.cli._executor import add_ray_option, executor_from_args
from covrag.cli.common import (
    Subparsers,
    add_config_options,
    add_prepare_args,
    aspect_sources,
    check_measures,
    check_outputs,
    config_from_args,
    load_topics,
    parse_budget,
    progress_bar,
    write_files,
)
from covrag.pipeline.config import BenchConfig
from covrag.types import Budget, Topic

if TYPE_CHECKING:
    from covrag.pipeline import BenchResult

#: The BenchConfig fields that are ``covrag bench`` options (the baseline of the paired tests is
#: the first method: order ``--selectors`` to choose it).
BENCH_OPTIONS = ("measures", "exact", "seed", "n_resamples")

#: What ``bench --out`` writes in its folder: a reused folder may hold only these.
BENCH_ENTRIES = frozenset({"summary.json", "runs"})

DEMO_DATASET = "argkp2021:dev"
DEMO_SELECTORS = ["random", "topk", "mmr(lam=0.5)", "greedy-coverage", "expected-coverage"]
DEMO_COVERAGE = ["gold", "embedding", "cross-encoder"]
DEMO_OUT = Path("demo-out/bench")


def register(sub: Subparsers) -> None:
    p = sub.add_parser("bench", help="compare selectors and coverage sources on a dataset")
    p.add_argument("--dataset", required=True, help="bundled name:split or coverage JSONL path")
    p.add_argument("--selectors", nargs="+", required=True, help="selector specs")
    p.add_argument("--coverage", nargs="+", default=["gold"], help="coverage estimator specs")
    p.add_argument(
        "--budgets",
        nargs="+",
        default=["k=10"],
        help="budgets as k=10, tokens=1024 or k=10,tokens=1024",
    )
    add_config_options(p, BenchConfig, BENCH_OPTIONS)
    add_prepare_args(p, multiple=True)
    p.add_argument("--out", type=Path, default=None, help="folder for runs and summary.json")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    add_ray_option(p)
    p.set_defaults(run_command=run_bench_command)

    p = sub.add_parser(
        "demo", help=f"the newcomer's tour: a bench on ArgKP dev, written to {DEMO_OUT}/"
    )
    p.set_defaults(run_command=run_demo, out=DEMO_OUT)


def run_bench_command(args: argparse.Namespace, console: Console) -> int:
    check_outputs([("--dataset", args.dataset)], [], [("--out", args.out)])
    if args.measures:
        check_measures(args.measures)
    budgets = [parse_budget(b) for b in args.budgets]
    # The folder is staged first: an unwritable --out fails before the work, and a killed or
    # failed bench leaves --out as it was.
    with bench_folder(args.out) as folder:
        result = _bench(args, budgets, console)
        if folder is not None:
            write_bench(result, folder)
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


def _bench(args: argparse.Namespace, budgets: list[Budget], console: Console) -> BenchResult:
    from covrag.pipeline import build_methods, config_for, run_bench

    topics = load_topics(args)
    methods = build_methods(args.selectors, args.coverage, args.aspects)
    names = sorted({m.aspects for m in methods} - {"gold"})
    sources = aspect_sources(args, names) if names else {}
    config = config_for([m.selector for m in methods], args.relevance)
    settings = config_from_args(BenchConfig, args, BENCH_OPTIONS)
    with executor_from_args(args) as executor, progress_bar(console) as progress:
        task = progress.add_task(f"bench {args.dataset}", total=len(topics))
        return run_bench(
            args.dataset,
            topics,
            methods,
            budgets,
            settings,
            config=config,
            progress=lambda _: progress.advance(task),
            aspect_sources=sources,
            executor=executor,
        )


def bench_folder(out: Path | None) -> contextlib.AbstractContextManager[Path | None]:
    """The staged folder a bench writes into (renamed to ``out`` at the end), or nothing."""
    from covrag.files import staged_folder

    if out is None:
        return contextlib.nullcontext()
    return staged_folder(out, BENCH_ENTRIES)


def bench_table(result: BenchResult, budget: Budget) -> Table:
    """One budget's rows of a bench: means with CIs and tests, headroom, costs."""
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
            cells.append("-" if row.method == result.oracle else f"{room:.3f}")
            skip = row.method in (result.oracle, result.baseline) or math.isnan(closed)
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


def write_bench(result: BenchResult, folder: Path) -> None:
    """Write a bench's runs and its ``summary.json``, which lists the run files it covers
    (``run_files``, relative to the folder; ``covrag report`` checks they are all there)."""
    from covrag.data.trec import format_run

    files: dict[Path, str] = {}
    for row in result.results:
        slug = "".join(c if c.isalnum() or c in "-_=." else "_" for c in row.method)
        budget = str(row.budget).replace(",", "_")
        run = {s.query_id: s.passage_ids for s in row.selections}
        files[folder / "runs" / f"{slug}__{budget}.trec"] = format_run(run, tag=row.method)
    summary = result.to_json()
    summary["run_files"] = [path.relative_to(folder).as_posix() for path in files]
    files[folder / "summary.json"] = json.dumps(summary, indent=2) + "\n"
    write_files(files)


def run_demo(args: argparse.Namespace, console: Console) -> int:
    """A bench on ArgKP dev that a newcomer can read, and one selection traced step by step."""
    from covrag.data import load_dataset

    with bench_folder(args.out) as folder:  # staged first, as for bench
        assert folder is not None
        topics = load_dataset(DEMO_DATASET)
        result = _demo_tour(topics, console)
        write_bench(result, folder)
    console.print(f"\nRuns and summary.json written to {args.out}/")
    return 0


def _demo_tour(topics: Sequence[Topic], console: Console) -> BenchResult:
    """Print the demo's trace and bench table; return the bench."""
    console.rule("[bold]covrag demo[/]")
    console.print(
        f"Dataset [bold]{DEMO_DATASET}[/]: {len(topics)} debate topics; per topic about "
        f"{sum(len(t.passages) for t in topics) // len(topics)} crowd arguments (the passages) and "
        "8-10 expert key points (the aspects a complete answer covers). Human labels say which "
        "argument makes which key point.\n"
    )
    _demo_trace(topics[0], console)
    result = _demo_bench(topics, console)
    console.print(bench_table(result, Budget(max_passages=10)))
    console.print(
        "How to read it: random is the floor. topk (most query-similar first) repeats the "
        "dominant key point. greedy-coverage @ gold shows what DES's selection rule reaches "
        "with perfect coverage estimates; @ embedding uses MiniLM similarity instead, a weak "
        "estimate; @ cross-encoder uses covrag's own coverage model (trained on the train "
        "splits, shipped as int8 ONNX), with no labels. expected-coverage reads the model's "
        "probabilities instead of a threshold, so a confident match beats a near miss. "
        "exact @ gold is the most key points any 10 arguments can cover: headroom is how far "
        "each method is from it on StRecall@10. These 4 dev topics are easier than most: on "
        "ArgKP topics the coverage model never saw (5-fold cross-validation, a model trained "
        "per fold) expected-coverage @ cross-encoder reaches 0.626 alpha-nDCG@10 "
        "(docs/experiments/20-question-aware-coverage.md)."
    )
    return result


def _demo_trace(topic: Topic, console: Console) -> None:
    """DES's greedy coverage on one topic's gold labels, pick by pick."""
    from covrag.pipeline.policy import SELECT
    from covrag.pipeline.usecases import select

    policy = dataclasses.replace(SELECT, selector="greedy-coverage", coverage="gold", k=5)
    selection = select(topic, policy).selection
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


def _demo_bench(topics: Sequence[Topic], console: Console) -> BenchResult:
    """The demo's bench: every demo selector and coverage source at k = 10, against random."""
    from covrag.pipeline import build_methods, config_for, run_bench

    methods = build_methods(DEMO_SELECTORS, DEMO_COVERAGE)
    with progress_bar(console) as progress:
        task = progress.add_task(f"bench {DEMO_DATASET}", total=len(topics))
        return run_bench(
            DEMO_DATASET,
            topics,
            methods,
            [Budget(max_passages=10)],
            BenchConfig(baseline=methods[0].name),
            config=config_for([m.selector for m in methods]),
            progress=lambda _: progress.advance(task),
        )
