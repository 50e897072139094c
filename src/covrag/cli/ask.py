"""``covrag ask`` (question -> cited answer) and ``covrag eval-answers`` (answer measures)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from covrag.cli._docs import index_documents
from covrag.cli.ask_display import print_ask
from covrag.cli.common import (
    Subparsers,
    add_config_options,
    add_llm_args,
    check_outputs,
    config_from_args,
    err_console,
    progress_bar,
)
from covrag.cli.held import held_warnings
from covrag.pipeline.config import AskConfig
from covrag.types import Aspect

if TYPE_CHECKING:
    from rich.progress import Progress

    from covrag.llm.progress import ProgressCallback, TokenProgress
    from covrag.pipeline.ask_records import AskResult

DEFAULT_ASK_OUT = Path("ask-run.json")


#: The AskConfig fields that are ``covrag ask`` options. The others keep their defaults here
#: (issue 33 pruned them: no cross-validated result or user need behind a CLI option):
#: ``decompose_style`` and ``answers`` (lost their CV,
#: docs/experiments/20-question-aware-coverage.md), ``floor_question`` (the floor without the
#: question lost, same section), ``feedback``, ``max_words``,
#: ``sentences`` and ``rewrite_sentences`` (prompt details never compared), ``outline`` (the
#: QTree outline was never measured in ask; a trained or random outline, section 17).
#: ``aspect_source`` stays: the key points read off the pool are the label-free way to
#: sub-questions grounded in the corpus (issue 36; docs/experiments/keypoint-aspects.md);
#: ``gate_margin``, ``gate_scope``, ``filters``, ``evidence`` and ``quotes`` are measured on the
#: answer benchmark (benchmarks/bench_answer_nuggets.py; ``evidence``:
#: docs/experiments/42-draft-evidence.md).
ASK_OPTIONS = (
    "subquestions",
    "aspect_source",
    "pool",
    "definitions",
    "k",
    "selector",
    "coverage",
    "floor",
    "gate",
    "gate_margin",
    "gate_scope",
    "filters",
    "names",
    "pool_aspects",
    "writer",
    "passes",
    "unsupported",
    "fallback",
    "evidence",
    "quotes",
    "max_tokens",
)


def register(sub: Subparsers) -> None:
    """Register ``covrag ask`` and ``covrag eval-answers``."""
    p = sub.add_parser(
        "ask",
        help="answer a question: plan -> retrieve -> estimate -> select -> cited answer",
    )
    p.add_argument("question", help="the question")
    source = p.add_mutually_exclusive_group()
    source.add_argument(
        "--corpus",
        default="bundled",
        help="passage JSONL, bundled name[:split], coverage JSONL, or 'bundled' (default: the "
        "pools of all bundled datasets)",
    )
    source.add_argument(
        "--index", type=Path, default=None, help="a saved index (covrag index --docs/--corpus)"
    )
    source.add_argument(
        "--docs",
        nargs="+",
        default=None,
        metavar="PATH",
        help="answer from these files, folders or globs (.txt, .md, .html, .pdf, passage "
        ".jsonl), indexed on the fly (BM25, default chunks and read limits) and cached: "
        "unchanged files are not read again (other chunk sizes: covrag index, then --index)",
    )
    p.add_argument("--include", nargs="+", default=[], help="subtopics the answer must cover")
    p.add_argument("--exclude", nargs="+", default=[], help="subtopics the answer must leave out")
    p.add_argument(
        "--aspects",
        nargs="+",
        default=None,
        metavar="TEXT",
        help="use these sub-questions instead of asking the LLM for them",
    )
    add_config_options(p, AskConfig, ASK_OPTIONS)
    add_llm_args(p, cache_switch=True)
    p.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"run JSON to write (covrag report; default: {DEFAULT_ASK_OUT}, none with --json)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print the run record (the run file's JSON) to stdout and nothing else; progress "
        "and warnings go to stderr",
    )
    p.set_defaults(run_command=run_ask)

    p = sub.add_parser(
        "eval-answers",
        help="judge answers in run files: nugget support, transfer, V_strict, citation precision, "
        "copy rate",
    )
    p.add_argument("runs", nargs="+", type=Path, help="run JSON files (covrag ask, benchmarks)")
    p.add_argument(
        "--dataset",
        default=None,
        help="bundled name:split or coverage JSONL whose gold aspects and labels are the "
        "nuggets (default: each run's own aspects and estimated coverage)",
    )
    p.add_argument(
        "--all-passes",
        action="store_true",
        help="evaluate every draft stored in a run (answers after 0, 1, ... passes) as variants",
    )
    add_llm_args(p)
    p.add_argument("--no-llm", action="store_true", help="cross-encoder judge only (cheap)")
    p.add_argument("--out", type=Path, default=None, help="write per-topic judgments as JSON")
    p.set_defaults(run_command=run_eval_answers)


def _given_aspects(args: argparse.Namespace) -> tuple[Aspect, ...] | None:
    from covrag.pipeline.usecases import given_aspects

    return given_aspects(args.question, args.aspects, args.include, args.exclude)


def run_ask(args: argparse.Namespace, console: Console) -> int:
    from covrag.llm import parse_llm
    from covrag.llm.progress import reporting
    from covrag.pipeline import STAGES, StageCost, ask
    from covrag.pipeline.ask import load_models
    from covrag.pipeline.corpus import CACHE_WAIT, DocumentOptions, cached_index, open_corpus

    out = args.out if args.out is not None or args.json else DEFAULT_ASK_OUT
    inputs = [("--corpus", args.corpus), ("--index", args.index)]
    inputs += [("--docs", path) for path in args.docs or ()]
    check_outputs(inputs, [("--out", out)])
    if args.json:
        # stdout carries the record alone: everything shown goes to stderr.
        console = err_console
    config = config_from_args(AskConfig, args, ASK_OPTIONS)
    llm = parse_llm(args.llm, cache=not args.no_llm_cache)
    steps = len(STAGES) + 1 + 2 * args.passes
    started, cpu_started = time.perf_counter(), time.process_time()
    skipped: list[str] = []
    if args.docs is not None:
        # Two asks about the same files share the cached index: the second waits for the first.
        # Chunk sizes and read limits are `covrag index --docs` options.
        options = DocumentOptions()
        folder = cached_index(args.docs, "bm25", options)
        skipped = index_documents(args.docs, folder, "bm25", options, console, wait=CACHE_WAIT)
    with progress_bar(console) as progress:
        task = progress.add_task("load the corpus", total=steps)
        retriever = open_corpus(folder if args.docs is not None else args.index or args.corpus)
        progress.update(task, description="load the models")
        estimator = load_models(config)
        # Indexing the documents, loading the corpus and the models: part of what the command
        # cost, and not the estimate stage's (which then times the estimating alone).
        load = StageCost(
            time.perf_counter() - started, cpu_seconds=time.process_time() - cpu_started
        )
        progress.advance(task)

        running: list[tuple[str, float]] = []  # the stage under way and when it started

        def on_stage(name: str) -> None:
            now = time.perf_counter()
            if name in STAGES:
                progress.update(task, description=name)
                if not console.is_terminal:  # a log: what starts, then how long it took
                    if running:
                        _stage_done(console, *running[0], now)
                    console.print(f"[dim]{'':8}  {name} ...[/]")
                running[:] = [(name, now)]
            else:
                progress.update(task, description=f"generate: {name} done")
            progress.advance(task)

        with reporting(_llm_progress(progress, console)), held_warnings() as held:
            result = ask(
                args.question,
                llm,
                retriever,
                config,
                include=args.include,
                exclude=args.exclude,
                aspects=_given_aspects(args),
                estimator=estimator,
                on_stage=on_stage,
            )
        if running and not console.is_terminal:
            _stage_done(console, *running[0], time.perf_counter())
    result = dataclasses.replace(result, costs={"load": load, **result.costs})
    # each warning once on the screen, and every one in the run file
    logged = held.not_in(result.warnings)
    if skipped or logged:
        result = dataclasses.replace(result, warnings=(*result.warnings, *skipped, *logged))
    return _write_result(result, out, args.json, console)


def _write_result(result: AskResult, out: Path | None, as_json: bool, console: Console) -> int:
    """The run file (``--out``), then the record on stdout (``--json``) or the answer shown."""
    from covrag.files import atomic_write_text

    record = json.dumps(result.run_record())
    if out is not None:
        atomic_write_text(out, record + "\n")
    if as_json:
        sys.stdout.write(record + "\n")
        sys.stdout.flush()
        for warning in result.warnings:
            console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
        return 0
    print_ask(result, console)
    console.print(f"\nwrote {out} (render it: covrag report {out} -o answer.html)")
    return 0


def _llm_progress(progress: Progress, console: Console) -> ProgressCallback:
    """What shows each LLM call's tokens and tokens/s as they stream: a line of the progress
    display on a terminal; else (a pipe, a log) one line on stderr as each call ends."""
    task = progress.add_task("llm", total=None, visible=False)

    def show(now: TokenProgress) -> None:
        figures = f"{now.tokens} tokens, {now.tokens_per_second:.1f} tokens/s"
        if console.is_terminal:
            state = "done" if now.done else "writing"
            progress.update(task, description=f"llm {state}: {figures}", visible=True)
        elif now.done:
            err_console.print(f"[dim]llm: {figures} ({now.seconds:.1f} s)[/]", highlight=False)

    return show


def run_eval_answers(args: argparse.Namespace, console: Console) -> int:
    from covrag.files import atomic_write_text
    from covrag.llm import parse_llm
    from covrag.pipeline.usecases import judge_answers

    inputs = [("--dataset", args.dataset), *(("runs", path) for path in args.runs)]
    check_outputs(inputs, [("--out", args.out)])
    with progress_bar(console) as progress:
        task = progress.add_task("judge answers", total=None)
        judged = judge_answers(
            args.runs,
            None if args.no_llm else parse_llm(args.llm),
            dataset=args.dataset,
            all_passes=args.all_passes,
            on_variants=lambda total: progress.update(task, total=total),
            on_answer=lambda: progress.advance(task),
        )
    measures, summaries, pooled = judged.measures, judged.summaries, judged.agreement
    table = Table(title=f"Answers: {judged.total} judged")
    table.add_column("variant")
    table.add_column("topics", justify="right")
    for m in measures:
        table.add_column(m, justify="right")
    for s in summaries:
        cells = []
        for m in measures:
            mean = s.means[m]
            p = s.p_values.get(m)
            cell = "-" if mean != mean else f"{mean:.3f}"
            if p is not None:
                cell += f"{'*' if p < 0.05 else ''} [dim]p={p:.2f}[/]"
            cells.append(cell)
        table.add_row(s.name, str(s.topics), *cells)
    table.caption = (
        "~ce = judged by the coverage cross-encoder, else by the LLM; p = paired randomization "
        "test against the first variant, Holm-corrected per measure; * = p < 0.05"
    )
    console.print(table)
    if pooled["nuggets"]:
        console.print(
            f"LLM judge vs cross-encoder on nugget support: agreement {pooled['agreement']:.2f}, "
            f"Cohen's kappa {pooled['kappa']:.2f} over {pooled['nuggets']} nuggets"
        )
    if args.out:
        atomic_write_text(args.out, json.dumps(judged.as_dict(), indent=2) + "\n")
        console.print(f"wrote {args.out}")
    return 0


def _stage_done(console: Console, stage: str, started: float, now: float) -> None:
    """The log line of a finished stage: how long it took."""
    console.print(f"[dim]{now - started:6.1f} s  {stage} done[/]")
