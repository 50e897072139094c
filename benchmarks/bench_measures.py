"""Time covrag's alpha-nDCG@10 + StRecall@10 against ir_measures + pyndeval.

Synthetic topics: each with ``--docs`` judged docs, ``--aspects`` aspects, every (doc, aspect)
pair supported with probability ``--density``, and a run of ``--run-length`` docs drawn from the
judged docs plus 20% unjudged ones. Prints a markdown table; asserts nothing.

    python benchmarks/bench_measures.py [--queries 10000] [--repeat 3] [--end-to-end]

``--end-to-end`` writes the qrels and the run as TREC files and times both tools from the files
(reading included) side by side: covrag ``read_judgments`` + ``read_run`` + ``evaluate`` (what
``covrag eval --qrels`` runs) against ir_measures ``read_trec_qrels`` + ``read_trec_run`` +
``iter_calc``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from covrag.data import read_run, write_run
from covrag.evaluation import EvalResults, Judgments, evaluate
from covrag.evaluation.qrels import (
    diversity_qrels,
    read_judgments,
    run_to_ir_measures,
    to_ir_measures,
    write_qrels,
)

MEASURES = ("alpha-nDCG@10", "StRecall@10")
IR_MEASURES = ("alpha_nDCG@10", "StRecall@10")


def synthetic(
    queries: int, docs: int, aspects: int, density: float, run_length: int, seed: int
) -> tuple[dict[str, dict[str, list[str]]], dict[str, tuple[str, ...]]]:
    rng = np.random.default_rng(seed)
    labels: dict[str, dict[str, list[str]]] = {}
    run: dict[str, tuple[str, ...]] = {}
    aspect_ids = [f"a{j}" for j in range(aspects)]
    doc_ids = [f"d{i:04d}" for i in range(docs + docs // 5)]
    for q in range(queries):
        support = rng.random((docs, aspects)) < density
        labels[f"q{q}"] = {
            doc_ids[i]: [aspect_ids[j] for j in np.flatnonzero(support[i])] for i in range(docs)
        }
        picks = rng.choice(len(doc_ids), size=min(run_length, len(doc_ids)), replace=False)
        run[f"q{q}"] = tuple(doc_ids[i] for i in picks)
    return labels, run


def best_of(repeat: int, action: Callable[[], Any]) -> tuple[float, Any]:
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--aspects", type=int, default=10)
    parser.add_argument("--density", type=float, default=0.1)
    parser.add_argument("--run-length", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--end-to-end", action="store_true", help="time both tools from TREC files, side by side"
    )
    args = parser.parse_args()
    if args.end_to_end:
        end_to_end(args)
        return

    labels, run = synthetic(
        args.queries, args.docs, args.aspects, args.density, args.run_length, args.seed
    )
    t_build, judgments = best_of(args.repeat, lambda: Judgments.from_labels(labels))
    fresh = [Judgments.from_labels(labels) for _ in range(args.repeat)]
    t_cold, ours = best_of(args.repeat, lambda: evaluate(fresh.pop(), run, MEASURES))
    t_warm, _ = best_of(args.repeat, lambda: evaluate(judgments, run, MEASURES))
    rows: list[tuple[str, float]] = [
        ("covrag evaluate, fresh judgments record (cold: computes the ideal rankings)", t_cold),
        ("covrag evaluate again (warm: ideal gains cached on the record)", t_warm),
        (
            "covrag Judgments.from_labels (validates and compiles the record; once per dataset)",
            t_build,
        ),
        ("covrag end to end: Judgments.from_labels + cold evaluate", t_build + t_cold),
    ]

    ir_measures: Any = None
    try:
        import ir_measures
    except ImportError:
        pass
    max_diff = float("nan")
    if ir_measures is not None:
        qrels = to_ir_measures(diversity_qrels(judgments))
        scored = run_to_ir_measures(run)
        measures = [ir_measures.parse_measure(m) for m in IR_MEASURES]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_ref, reference = best_of(
                args.repeat, lambda: list(ir_measures.iter_calc(measures, qrels, scored))
            )
            evaluator = ir_measures.evaluator(measures, qrels)
            t_ref_run, _ = best_of(args.repeat, lambda: list(evaluator.iter_calc(scored)))
        rows += [
            ("ir_measures.iter_calc + pyndeval (qrels and run)", t_ref),
            ("ir_measures + pyndeval, evaluator prebuilt (run only)", t_ref_run),
        ]
        theirs = {(str(m.measure), m.query_id): m.value for m in reference}
        diffs = [
            abs(value - theirs[(ref_name, query_id)])
            for ours_name, ref_name in zip(MEASURES, IR_MEASURES, strict=True)
            for query_id, value in ours[ours_name].items()
        ]
        max_diff = max(diffs)

    print(f"`{shlex.join([sys.executable, *sys.argv])}`\n")
    print(
        f"{args.queries} queries, {args.docs} judged docs, {args.aspects} aspects, density "
        f"{args.density}, runs of {args.run_length}; measures {', '.join(MEASURES)}; "
        f"best of {args.repeat}\n"
    )
    print("| what | seconds | vs covrag cold |")
    print("|---|---:|---:|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.4f} | {seconds / t_cold:.1f}x |")
    if ir_measures is not None:
        print(
            f"\nspeed-up over ir_measures.iter_calc: {t_ref / t_cold:.1f}x cold, "
            f"{t_ref / t_warm:.1f}x warm; over a prebuilt evaluator: "
            f"{t_ref_run / t_cold:.1f}x cold, {t_ref_run / t_warm:.1f}x warm"
        )
        print(f"max |covrag - pyndeval| over all per-query values: {max_diff:.3g}")
    else:
        print("\nir_measures/pyndeval not installed: pip install 'covrag[reference]'")


def end_to_end(args: argparse.Namespace) -> None:
    """Both tools from the qrels and run files, reading included; prints the ratio."""
    import ir_measures  # covrag[reference]

    labels, run = synthetic(
        args.queries, args.docs, args.aspects, args.density, args.run_length, args.seed
    )
    with tempfile.TemporaryDirectory() as folder:
        qrels_path, run_path = f"{folder}/bench.qrels", f"{folder}/bench.trec"
        write_qrels(qrels_path, diversity_qrels(Judgments.from_labels(labels)))
        write_run(run_path, run)
        del labels, run

        def ours() -> EvalResults:
            return evaluate(read_judgments(qrels_path), read_run(run_path), MEASURES)

        measures = [ir_measures.parse_measure(m) for m in IR_MEASURES]

        def theirs() -> list[Any]:
            qrels = ir_measures.read_trec_qrels(qrels_path)
            return list(ir_measures.iter_calc(measures, qrels, ir_measures.read_trec_run(run_path)))

        # Interleaved (ours, theirs, ours, ...): on a shared machine both sides meet the same
        # load; the best wall-clock, user and system seconds of each side are kept.
        best = {"ours": [float("inf")] * 3, "theirs": [float("inf")] * 3}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(args.repeat):
                values = _timed(ours, best["ours"])
                reference = _timed(theirs, best["theirs"])
    by_key = {(str(m.measure), m.query_id): m.value for m in reference}
    max_diff = max(
        abs(value - by_key[(ref_name, query_id)])
        for ours_name, ref_name in zip(MEASURES, IR_MEASURES, strict=True)
        for query_id, value in values[ours_name].items()
    )
    print(f"`{shlex.join([sys.executable, *sys.argv])}`\n")
    print(
        f"end to end from TREC files: {args.queries} queries, {args.docs} judged docs, "
        f"{args.aspects} aspects, density {args.density}, runs of {args.run_length}; measures "
        f"{', '.join(MEASURES)}; best of {args.repeat}, interleaved\n"
    )
    print("| what | wall seconds | user CPU seconds | system CPU seconds |")
    print("|---|---:|---:|---:|")
    rows = {
        "covrag read_judgments + read_run + evaluate": best["ours"],
        "ir_measures read_trec_qrels + read_trec_run + iter_calc (pyndeval)": best["theirs"],
    }
    for name, (wall, user, system) in rows.items():
        print(f"| {name} | {wall:.3f} | {user:.3f} | {system:.3f} |")
    ratios = [theirs / max(ours, 1e-9) for ours, theirs in zip(*rows.values(), strict=True)]
    print(
        f"\nspeed-up end to end: {ratios[0]:.1f}x wall-clock, {ratios[1]:.1f}x user CPU "
        f"({ratios[2]:.1f}x system)"
    )
    print(f"max |covrag - pyndeval| over all per-query values: {max_diff:.3g}")


def _timed(action: Callable[[], Any], best: list[float]) -> Any:
    """Run ``action``; keep the least wall-clock, user CPU and system CPU seconds in ``best``."""
    wall, times = time.perf_counter(), os.times()
    result = action()
    after = os.times()
    spent = (time.perf_counter() - wall, after.user - times.user, after.system - times.system)
    best[:] = [min(b, x) for b, x in zip(best, spent, strict=True)]
    return result


if __name__ == "__main__":
    main()
