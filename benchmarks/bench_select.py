"""Timings of the selectors: prints markdown tables, asserts nothing.

Run from the repository root::

    .venv/bin/python benchmarks/bench_select.py [--data /work/shared/data] [--queries 1000]

- greedy-coverage per query at 100 passages x 10 aspects (random coverage, k=10 and unlimited);
- MMR per query at 100 and 1000 passages (384-d random unit embeddings, k=10 and unlimited);
- the exact selector per query on each bundled dev set, with the gold labels as coverage: k=10
  for argkp2021 and perspectrum, token budgets 512/1024/2048 for perspectrum-evidence (token
  costs from covrag.tokens when available, else 1.3 x whitespace words).

Times are wall-clock per ``selector.select`` call (including building the trace).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from covrag.selectors import (
    Candidates,
    ExactSelector,
    GreedyCoverageSelector,
    MMRSelector,
    Selector,
    solve_exact,
)
from covrag.types import Budget, CoverageMatrix, Passage, Topic

DEV_SETS = {
    "argkp2021": [Budget(max_passages=10)],
    "perspectrum": [Budget(max_passages=10)],
    "perspectrum-evidence": [Budget(max_tokens=t) for t in (512, 1024, 2048)],
}


def token_counter() -> tuple[str, Callable[[list[str]], list[int]]]:
    """The project's tokenizer if present, else 1.3 tokens per whitespace word."""
    try:
        from covrag.tokens import default_counter

        counter = default_counter()
        return counter.name, counter.count
    except Exception:  # noqa: BLE001 - any failure means: use the approximation
        return "1.3 x words", lambda texts: [round(len(t.split()) * 1.3) for t in texts]


def random_candidates(
    rng: np.random.Generator, n: int, m: int = 0, dim: int = 0, density: float = 0.15
) -> Candidates:
    passages = tuple(
        Passage(id=f"p{i}", text="", tokens=int(rng.integers(50, 300))) for i in range(n)
    )
    coverage = None
    if m:
        coverage = CoverageMatrix(
            tuple(p.id for p in passages),
            tuple(f"a{j}" for j in range(m)),
            (rng.random((n, m)) < density).astype(np.float64),
        )
    embeddings = query = None
    if dim:
        embeddings = rng.normal(size=(n, dim))
        embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
        query = embeddings[0]
    return Candidates(
        "q",
        "",
        passages,
        relevance=np.sort(rng.random(n))[::-1],
        coverage=coverage,
        embeddings=embeddings,
        query_embedding=query,
    )


def time_calls(selector: Selector, pools: list[Candidates], budget: Budget) -> list[float]:
    times = []
    for candidates in pools:
        started = time.perf_counter()
        selector.select(candidates, budget)
        times.append(time.perf_counter() - started)
    return times


def row(label: str, budget: Budget, times: list[float], extra: str = "") -> str:
    ms = np.array(times) * 1e3
    return (
        f"| {label} | {budget} | {len(ms)} | {np.median(ms):.3f} | "
        f"{np.percentile(ms, 95):.3f} | {ms.max():.3f} | {extra} |"
    )


def synthetic(queries: int) -> list[str]:
    rng = np.random.default_rng(0)
    lines = []
    pools = [random_candidates(rng, 100, m=10) for _ in range(queries)]
    for selector in (GreedyCoverageSelector(), GreedyCoverageSelector(cost_aware=True)):
        for budget in (Budget(max_passages=10), Budget(max_tokens=1024), Budget()):
            lines.append(
                row(f"{selector!r}, 100 x 10", budget, time_calls(selector, pools, budget))
            )
    for n, count in ((100, queries), (1000, max(20, queries // 20))):
        pools = [random_candidates(rng, n, dim=384) for _ in range(count)]
        for budget in (Budget(max_passages=10), Budget()):
            lines.append(
                row(f"mmr(lam=0.5), {n} x 384-d", budget, time_calls(MMRSelector(), pools, budget))
            )
    return lines


def gold_candidates(topic: Topic, count: Callable[[list[str]], list[int]]) -> Candidates:
    costs = np.array(count([p.text for p in topic.passages]), dtype=np.int64)
    coverage = CoverageMatrix(
        topic.passage_ids, topic.aspect_ids, topic.label_matrix().astype(np.float64)
    )
    return Candidates(topic.query_id, topic.query, topic.passages, costs=costs, coverage=coverage)


def datasets(folder: Path) -> list[str]:
    from covrag.data import read_topics

    name, count = token_counter()
    print(f"token costs: {name}", file=sys.stderr)
    lines = []
    for dataset, budgets in DEV_SETS.items():
        path = folder / dataset / f"{dataset}-dev.jsonl"
        pools = [gold_candidates(t, count) for t in read_topics(path)]
        shapes = np.array([c.covered.shape for c in pools])
        label = (
            f"exact, {dataset} dev ({len(pools)} q, n<={shapes[:, 0].max()}, "
            f"m<={shapes[:, 1].max()})"
        )
        for budget in budgets:
            selector = ExactSelector()
            times = time_calls(selector, pools, budget)
            solutions = [solve_exact(c, budget) for c in pools]
            proven = sum(s.proven_optimal for s in solutions)
            share = np.mean(
                [
                    s.value / max(c.weights()[c.covered.any(axis=0)].sum(), 1e-12)
                    for s, c in zip(solutions, pools, strict=True)
                ]
            )
            lines.append(
                row(
                    label,
                    budget,
                    times,
                    f"proven {proven}/{len(pools)}, mean optimum share {share:.4f}",
                )
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data"))
    parser.add_argument("--queries", type=int, default=1000)
    args = parser.parse_args()
    lines = [
        "| selector / pool | budget | queries | median ms | p95 ms | max ms | notes |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += synthetic(args.queries)
    if args.data.is_dir():
        lines += datasets(args.data)
    print(f"`{' '.join([Path(sys.executable).name, *sys.argv])}`\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
