"""One leave-topics-out CV table of label-free selection (issue 36): which default to ship.

Rows, all at k = 10 on the pools ``covrag-lab cv`` prepares (same pools, same measures):

- baselines: random, MMR (lambda 0.5), cluster, facility location over MiniLM cosine;
- the same-point similarity (:mod:`covrag.selectors.similarity`) under MMR, cluster and facility
  location, with the model ``--same-point`` names (``shipped``: the packaged one);
- with the shipped coverage cross-encoder (``--coverage``), expected coverage (power 4) over
  the pool's representatives (``pool``: MiniLM cosine, the current label-free default of the
  framework components and ``/v1/select``) and over representatives found with the same-point
  similarity (``pool-sp``); expected coverage reads no similarity, so that is the one place
  the same-point similarity enters the default's path;
- with ``--contrast``, facility location over each similarity once more per value: a similarity
  counts by how many standard deviations it lies above the pool's mean pair, past the value;
- ``CV-chosen``: for each of 5 folds (seed 0, the folds of ``covrag-lab cv --folds 5 --seed 0``) the
  label-free row with the best mean alpha-nDCG@10 on the other folds' topics, scored on the
  held-out fold: the figure of choosing a default by this table; and the same choice among the
  rows that read no coverage estimator (the shipped estimator trained on ArgKP train topics and
  Perspectrum train claims, so its rows are partly in-sample there).

Each row's mean alpha-nDCG@10 and StRecall@10 over topics, its mean over the dev-split topics
beside, and its paired difference from facility location over MiniLM cosine (percentile
bootstrap 95% CI over topics, 10,000 resamples, seed 0; wins / losses). Test splits are never
read. Every (row, topic) value is appended to ``OUT.cache.jsonl`` as it is measured, so a
stopped run resumes where it stopped; ``--rows cheap`` runs the rows without the cross-encoder.

Usage::

    python benchmarks/cv_label_free.py argkp2021 train,dev OUT.json --same-point shipped
    python benchmarks/cv_label_free.py perspectrum train,dev OUT.json \
        --same-point /tmp/sp/no-perspectrum/onnx shipped --train-sample 100 --rows cheap
"""

from __future__ import annotations

import argparse
import json
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np

from covrag.data import load_dataset
from covrag.embed import Encoder
from covrag.evaluation.stats import bootstrap_ci
from covrag.pipeline.bench import Method, build_methods
from covrag.pipeline.config import config_for
from covrag.plan.pool import PoolAspectFinder
from covrag.plan.sources import PoolAspects
from covrag.types import Budget, Topic
from covrag_lab.cv import CVConfig, TopicScores, assign_folds, cv_measures

logger = logging.getLogger("cv_label_free")

FOLDS, SEED, K = 5, 0, 10
REFERENCE = "facility-location"
BASELINES = ["random", "mmr(lam=0.5)", "cluster", REFERENCE]
SAME_POINT = ["mmr(lam=0.5, similarity='same-point'{m})", "cluster(similarity='same-point'{m})",
              "facility-location(similarity='same-point'{m})"]  # fmt: skip
EXPECTED = "expected-coverage(power=4)"


def model_arg(model: str) -> str:
    """The ``similarity_model`` part of a spec (nothing for the shipped model)."""
    return "" if model == "shipped" else f", similarity_model='{model}'"


def cheap_methods(models: Sequence[str], contrasts: Sequence[float] = ()) -> list[Method]:
    """Rows that read no coverage estimator (facility location once more per ``contrasts``
    value, over MiniLM cosine and each same-point model)."""
    specs = list(BASELINES) + [f"facility-location(contrast={c:g})" for c in contrasts]
    for model in models:
        specs += [s.format(m=model_arg(model)) for s in SAME_POINT]
        specs += [f"facility-location(similarity='same-point', contrast={c:g}{model_arg(model)})"
                  for c in contrasts]  # fmt: skip
    return build_methods(specs, [])


def pool_sources(models: Sequence[str]) -> dict[str, PoolAspects]:
    """``pool`` (MiniLM cosine, the shipped default) and one ``pool-sp`` source per model."""
    from covrag.coverage.onnx_encoder import onnx_encoder

    sources = {"pool": PoolAspects(PoolAspectFinder())}
    for model in models:
        # Duck-typed: the finder only calls ``encode(texts)``, which the ONNX encoder has.
        encoder = cast(Encoder, onnx_encoder(None if model == "shipped" else model))
        sources[source_name(model)] = PoolAspects(PoolAspectFinder(encoder=encoder))
    return sources


def source_name(model: str) -> str:
    return "pool-sp" if model == "shipped" else f"pool-sp[{Path(model).parent.name}]"


def coverage_methods(models: Sequence[str], coverage: str) -> list[Method]:
    """Expected coverage over each pool aspect source (the cross-encoder rows)."""
    names = ["pool"] + [source_name(m) for m in models]
    return build_methods([EXPECTED], [coverage], names)


def load_topics(dataset: str, splits: Sequence[str], sample: int | None) -> dict[str, str]:
    """Query id -> split, of the topics to score (``sample``: every topic of the other splits
    and a seeded sample of this many train topics)."""
    split_of = {t.query_id: s for s in splits for t in load_dataset(f"{dataset}:{s}")}
    train = sorted(q for q, s in split_of.items() if s == "train")
    if sample is not None and sample < len(train):
        drawn = np.random.default_rng(SEED).choice(len(train), sample, replace=False)
        keep = {train[int(i)] for i in drawn}
        split_of = {q: s for q, s in split_of.items() if s != "train" or q in keep}
    return split_of


class Cache:
    """(row, topic) -> measure values, kept in a JSONL file appended as values come."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.values: dict[tuple[str, str], dict[str, float]] = {}
        if path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    record = json.loads(line)
                    self.values[(record["row"], record["topic"])] = record["values"]

    def add(self, row: str, topic: str, values: dict[str, float]) -> None:
        self.values[(row, topic)] = values
        with self.path.open("a") as f:
            f.write(json.dumps({"row": row, "topic": topic, "values": values}) + "\n")


def measure_all(
    scores: TopicScores, methods: Sequence[Method], ids: Sequence[str], cache: Cache
) -> None:
    """Every (method, topic) value not yet in ``cache``, topic by topic."""
    for n, query_id in enumerate(ids, start=1):
        started = time.perf_counter()
        for method in methods:
            if (method.name, query_id) in cache.values:
                continue
            values = scores.values(method, [query_id])
            cache.add(method.name, query_id, {m: v[query_id] for m, v in values.items()})
        logger.info("%d/%d %s %.1f s", n, len(ids), query_id, time.perf_counter() - started)


def row_summary(
    values: dict[str, dict[str, float]], reference: dict[str, float], split_of: dict[str, str]
) -> dict[str, object]:
    """Means, CI, dev mean, paired difference from the reference (alpha-nDCG@10)."""
    alpha = f"alpha-nDCG@{K}"
    ids = sorted(values)
    a = [values[q][alpha] for q in ids]
    diff = [values[q][alpha] - reference[q] for q in ids]
    dev = [values[q][alpha] for q in ids if split_of[q] == "dev"]
    return {
        "mean": float(np.mean(a)),
        "ci95": list(bootstrap_ci(a, n_resamples=10_000, seed=SEED)),
        "strecall": float(np.mean([values[q][f"StRecall@{K}"] for q in ids])),
        "dev_mean": float(np.mean(dev)) if dev else None,
        "dev_topics": len(dev),
        "minus_facility_location": float(np.mean(diff)),
        "diff_ci95": list(bootstrap_ci(diff, n_resamples=10_000, seed=SEED)),
        "wins": int(sum(d > 0 for d in diff)),
        "losses": int(sum(d < 0 for d in diff)),
        "topics": len(ids),
        "per_topic": {q: values[q] for q in ids},
    }


def cv_chosen(
    table: dict[str, dict[str, dict[str, float]]], candidates: Sequence[str]
) -> tuple[dict[str, dict[str, float]], list[str]]:
    """Per fold, the candidate row best on the other folds (alpha-nDCG@10), on the held-out fold
    (the candidates are scored on the same topics)."""
    alpha = f"alpha-nDCG@{K}"
    ids = sorted(table[candidates[0]])
    fold_of = assign_folds(ids, FOLDS, SEED)
    values: dict[str, dict[str, float]] = {}
    chosen = []
    for fold in range(FOLDS):
        train = [q for q in ids if fold_of[q] != fold]
        best = max(candidates, key=lambda r: float(np.mean([table[r][q][alpha] for q in train])))
        chosen.append(best)
        values.update({q: table[best][q] for q in ids if fold_of[q] == fold})
    return values, chosen


def report(cache: Cache, rows: Sequence[str], split_of: dict[str, str], out: Path) -> None:
    """Print the table and write it (per-topic values included) to ``out``."""
    ids = sorted(split_of)
    table = {r: {q: cache.values[(r, q)] for q in ids} for r in rows if all(
        (r, q) in cache.values for q in ids)}  # fmt: skip
    reference = {q: v[f"alpha-nDCG@{K}"] for q, v in table[REFERENCE].items()}
    summary = {r: row_summary(v, reference, split_of) for r, v in table.items()}
    if len(ids) >= FOLDS:
        with_estimator = [r for r in table if r != "random"]
        without = [r for r in with_estimator if " @ " not in r]
        pools = {"CV-chosen among the label-free rows (random excluded)": with_estimator}
        if len(without) < len(with_estimator):
            pools["CV-chosen among the rows without the estimator"] = without
        for name, candidates in pools.items():
            chosen_values, chosen = cv_chosen(table, candidates)
            summary[name] = {**row_summary(chosen_values, reference, split_of), "chosen": chosen}
            print(name, "chose per fold:", chosen)
    for row, s in summary.items():
        ci, dci = s["ci95"], s["diff_ci95"]
        dev = "  -  " if s["dev_mean"] is None else f"{s['dev_mean']:.3f}"
        print(f"{s['mean']:.3f} ({ci[0]:.3f}-{ci[1]:.3f})  StR {s['strecall']:.3f}  dev {dev}  "  # type: ignore[index]
              f"{s['minus_facility_location']:+.3f} ({dci[0]:+.3f}..{dci[1]:+.3f})  "  # type: ignore[index]
              f"{s['wins']}/{s['losses']}  {row}")  # fmt: skip
    print(markdown(summary))
    out.write_text(json.dumps({"topics": len(ids), "rows": summary}, indent=2) + "\n")


def markdown(summary: dict[str, dict[str, object]]) -> str:
    """The table as Markdown rows (row, alpha-nDCG@10 with CI, StRecall@10, dev, difference)."""
    lines = [
        "| row | alpha-nDCG@10 (95% CI) | StRecall@10 | dev | minus FL (95% CI) | better / worse |",
        "|---|---|---|---|---|---|",
    ]
    for row, s in summary.items():
        ci, dci = cast(list[float], s["ci95"]), cast(list[float], s["diff_ci95"])
        dev = "-" if s["dev_mean"] is None else f"{s['dev_mean']:.3f} ({s['dev_topics']})"
        lines.append(
            f"| {row} | {s['mean']:.3f} ({ci[0]:.3f}-{ci[1]:.3f}) | {s['strecall']:.3f} | {dev} "
            f"| {s['minus_facility_location']:+.3f} ({dci[0]:+.3f}..{dci[1]:+.3f}) "
            f"| {s['wins']} / {s['losses']} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset")
    parser.add_argument("splits", help="comma-separated splits (never test)")
    parser.add_argument("out", type=Path)
    parser.add_argument("--same-point", nargs="+", default=["shipped"],
                        help="same-point models: shipped or an ONNX folder")  # fmt: skip
    parser.add_argument("--pool-same-point", nargs="*",
                        help="models whose pool-sp rows run (default: --same-point's)")  # fmt: skip
    parser.add_argument("--coverage", default="cross-encoder")
    parser.add_argument("--train-sample", type=int,
                        help="a seeded sample of N train topics (others whole)")  # fmt: skip
    parser.add_argument("--rows", choices=["cheap", "all"], default="all")
    parser.add_argument("--contrast", nargs="*", type=float, default=[],
                        help="facility location rows with these contrast values")  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    splits = args.splits.split(",")
    if "test" in splits:
        parser.error("test splits are never read")
    split_of = load_topics(args.dataset, splits, args.train_sample)
    topics: list[Topic] = [
        t for s in splits for t in load_dataset(f"{args.dataset}:{s}") if t.query_id in split_of
    ]
    cheap = cheap_methods(args.same_point, args.contrast)
    pool_models = args.same_point if args.pool_same_point is None else args.pool_same_point
    costly = coverage_methods(pool_models, args.coverage) if args.rows == "all" else []
    budget = Budget(max_passages=K)
    measures = cv_measures(budget, CVConfig(), topics)
    config = config_for([m.selector for m in cheap + costly])
    scores = TopicScores(topics, budget, measures, config, pool_sources(pool_models))
    cache = Cache(args.out.with_suffix(".cache.jsonl"))
    ids = [t.query_id for t in topics]
    measure_all(scores, cheap, ids, cache)
    measure_all(scores, costly, ids, cache)
    report(cache, [m.name for m in cheap + costly], split_of, args.out)


if __name__ == "__main__":
    main()
