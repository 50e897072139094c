"""LMVU against its baselines, its controls and the exact optimum, and its speed.

Fits on the bundled train splits only; every figure is on the dev splits. Prints markdown tables.

    .venv/bin/python benchmarks/bench_lmvu.py [--quick]

    .venv/bin/python benchmarks/bench_lmvu.py --states-cache DIR   # reuse training states

Variants: full (ArgKP + Perspectrum-evidence train, ArgKP states weighted 3, as shipped), the same
without dataset weights, M0 (retriever score, query cosine, length),
shuffle control (the 14 state features permuted within each state), without the atomic-level
group, and leave-one-dataset-out (fitted on the other dataset's train split only).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from covrag.data import load_dataset
from covrag.pipeline import BenchResult, Method, run_bench
from covrag.selectors import LMVUSelector, parse_selector
from covrag.selectors.base import Candidates
from covrag.selectors.lmvu import FEATURES, M0_FEATURES, STATE, LMVUModel
from covrag.types import Budget, Passage
from covrag_lab.train.lmvu import StateConfig, TrainingSet, cached_training_set, fit_lmvu

BASELINES = ["mmr", "random", "topk", "facility-location(cost_aware=True)"]
DEV = {"perspectrum-evidence:dev": "argkp2021:train", "argkp2021:dev": "perspectrum-evidence:train"}


def fit(
    name: str,
    training: TrainingSet,
    folder: Path,
    weights: dict[str, float] | None = None,
    **params: object,
) -> tuple[str, float]:
    model = LMVUModel(**params)  # type: ignore[arg-type]
    started = time.perf_counter()
    fit_lmvu(training, model, weights)
    seconds = time.perf_counter() - started
    path = folder / f"{name}.json"
    model.save(path, datasets=list(training.datasets), dataset_weights=weights or {})
    print(f"fitted {name}: {training.n_states} states, {model.n_pairs_} pairs, {seconds:.2f} s")
    return str(path), seconds


def shuffled_states(training: TrainingSet, seed: int = 0) -> TrainingSet:
    """The control: the 14 state features permuted among the candidates of each state, which
    destroys their link to the gains (the item features stay)."""
    rng = np.random.default_rng(seed)
    X = training.X.copy()
    for state in np.unique(training.groups):
        rows = np.flatnonzero(training.groups == state)
        X[rows, STATE] = X[rng.permutation(rows)][:, STATE]
    return dataclasses.replace(training, X=X)


def table(result: BenchResult, budget: Budget, labels: dict[str, str]) -> None:
    rows = result.for_budget(budget)
    rvc, rvc2 = f"RVC@{budget.max_tokens}", f"RVC2@{budget.max_tokens}"
    print(f"\n**{result.dataset}, {budget.max_tokens} tokens** ({result.topics} topics)\n")
    print("| method | RVC | RVC2 | alpha-nDCG@10 | p vs MMR (Holm) | gap to optimum closed |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        p = row.p_values.get(rvc)
        closed = row.gap_closed.get(rvc, float("nan"))
        print(
            f"| {labels.get(row.method, row.method)} | {row.means[rvc]:.3f} | "
            f"{row.means[rvc2]:.3f} | {row.means['alpha-nDCG@10']:.3f} | "
            f"{'-' if p is None else f'{p:.3f}'} | "
            f"{'-' if row.method in ('mmr', 'exact @ gold') else f'{closed:+.0%}'} |"
        )


def speed(model_path: str | None) -> None:
    rng = np.random.default_rng(0)
    selector = LMVUSelector(model=model_path)
    print("\n| pool | passage tokens | budget | picks | median ms | p95 ms |")
    print("|---|---|---|---|---|---|")
    for low, high in ((100, 250), (15, 40)):
        times, picks = [], 0
        for trial in range(200):
            n = 500
            vectors = rng.normal(size=(n, 384))
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            query = vectors[0] + rng.normal(scale=0.5, size=384)
            query /= np.linalg.norm(query)
            costs = rng.integers(low, high, size=n)
            passages = tuple(Passage(f"p{i}", "x", tokens=int(c)) for i, c in enumerate(costs))
            candidates = Candidates(
                f"q{trial}",
                "q",
                passages,
                relevance=vectors @ query,
                embeddings=vectors,
                query_embedding=query,
            )
            started = time.perf_counter()
            selection = selector.select(candidates, Budget(max_tokens=1024))
            times.append(time.perf_counter() - started)
            picks += len(selection)
        ms = 1000 * np.array(times)
        print(
            f"| 500 | {low}-{high} | 1024 | {picks / 200:.1f} | {np.median(ms):.2f} | "
            f"{np.percentile(ms, 95):.2f} |"
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="a few topics only (smoke run)")
    parser.add_argument(
        "--states-cache", type=Path, default=None, help="folder of cached training states"
    )
    parser.add_argument(
        "--argkp-weight",
        type=float,
        default=3.0,
        help="weight of the ArgKP train states (the shipped model's 3, chosen on dev)",
    )
    args = parser.parse_args()
    limit = 3 if args.quick else None
    print("command: python " + " ".join(sys.argv))
    started = time.perf_counter()
    sets = {}
    for name in ("argkp2021:train", "perspectrum-evidence:train"):
        topics = load_dataset(name)[:limit]
        t0 = time.perf_counter()
        cache = None if args.quick else args.states_cache
        sets[name] = cached_training_set(name, topics, StateConfig(), cache)
        print(f"states for {name}: {sets[name].n_states} in {time.perf_counter() - t0:.0f} s")
    both = TrainingSet.concat(list(sets.values()))
    weights = {"argkp2021:train": args.argkp_weight}
    folder = Path(tempfile.mkdtemp(prefix="lmvu-bench-"))
    no_atomic = [f for f in FEATURES if not f.startswith("piece_")]
    models = {
        "lmvu": fit("full", both, folder, weights),
        "lmvu, datasets unweighted": fit("unweighted", both, folder),
        "lmvu M0": fit("m0", both, folder, weights, features=M0_FEATURES),
        "lmvu shuffle": fit("shuffle", shuffled_states(both), folder, weights),
        "lmvu no-atomic": fit("no-atomic", both, folder, weights, features=no_atomic),
    }
    budgets = [Budget(max_tokens=t) for t in (512, 1024, 2048)]
    for dev, other in DEV.items():
        variants = dict(models)
        variants["lmvu LODO (other dataset only)"] = fit(f"lodo-{other}", sets[other], folder)
        labels = {}
        methods = [Method(parse_selector(s), None) for s in BASELINES]
        for label, (path, _) in variants.items():
            selector = LMVUSelector(model=path)
            labels[repr(selector)] = f"{label}"
            methods.append(Method(selector, None))
        topics = load_dataset(dev)[:limit]
        result = run_bench(dev, topics, methods, budgets, baseline="mmr")
        for budget in budgets:
            table(result, budget, labels)
    speed(models["lmvu"][0])
    print(f"\ntotal {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
