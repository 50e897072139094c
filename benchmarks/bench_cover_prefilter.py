"""CoveR as a pre-filter of the cross-encoder: pairs and seconds saved at equal selection quality.

For each topic and each coverage spec (interleaved, so machine load hits all alike), the pair
caches are emptied, the matrix is estimated (wall seconds and process CPU seconds, all threads),
then expected coverage selects k passages (relevance = MiniLM query cosine, as in ``covrag
bench``) and alpha-nDCG@k / StRecall@k are computed on the gold labels.

Usage::

    python benchmarks/bench_cover_prefilter.py --dataset argkp2021:dev \
        --specs cross-encoder "cover(model='M')" "cover(model='M', rerank=20)"
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass

import numpy as np

from covrag.coverage import CoverageEstimator, CoverCoverage, parse_estimator
from covrag.coverage.cross_encoder import clear_scorers
from covrag.data import load_dataset
from covrag.embed import Encoder, default_encoder
from covrag.evaluation import Judgments, evaluate
from covrag.pipeline import prepare, with_inputs
from covrag.pipeline.config import PrepareConfig
from covrag.selectors import parse_selector
from covrag.types import Budget, CoverageMatrix, Topic


@dataclass(frozen=True, repr=False)
class _Fixed(CoverageEstimator):
    """A matrix estimated beforehand (so selection does not re-time the estimate)."""

    name = "fixed"
    matrix: CoverageMatrix

    def estimate(self, topic: Topic) -> CoverageMatrix:
        return self.matrix


def _empty_caches(encoders: list[Encoder]) -> None:
    """No pair score and no embedding is reused from an earlier estimate."""
    clear_scorers()
    for encoder in encoders:
        encoder.clear_cache()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--specs", nargs="+", required=True)
    parser.add_argument("--limit-topics", type=int, default=None)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--selector", default="expected-coverage")
    args = parser.parse_args()
    topics = load_dataset(args.dataset)[: args.limit_topics]
    estimators = {spec: parse_estimator(spec) for spec in args.specs}
    encoders = [default_encoder()]
    for estimator in estimators.values():  # load every model once, outside the timings
        estimator.estimate(topics[0])
        if isinstance(estimator, CoverCoverage) and estimator.model is not None:
            encoders.append(estimator.encoder())
    selector = parse_selector(args.selector)
    judgments = Judgments.from_topics(topics)
    rows: dict[str, dict[str, list[float]]] = {s: {} for s in args.specs}
    runs: dict[str, dict[str, list[str]]] = {s: {} for s in args.specs}
    for topic in topics:
        for spec, estimator in estimators.items():
            _empty_caches(encoders)
            wall, cpu = time.perf_counter(), time.process_time()
            matrix = estimator.estimate(topic)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            prepared = prepare(topic, _Fixed(matrix), PrepareConfig(relevance="dense"))
            candidates = with_inputs(prepared.candidates, [selector])
            selection = selector.select(candidates, Budget(max_passages=args.k))
            runs[spec][topic.query_id] = list(selection.passage_ids)
            for key, value in (("pairs", matrix.pairs_scored), ("wall", wall), ("cpu", cpu)):
                rows[spec].setdefault(key, []).append(float(value))
    summary = {}
    for spec in args.specs:
        measures = [f"alpha-nDCG@{args.k}", f"StRecall@{args.k}"]
        result = evaluate(judgments, runs[spec], measures)
        summary[spec] = {
            **{m: round(result.mean(m), 4) for m in measures},
            "pairs_per_topic": round(float(np.mean(rows[spec]["pairs"])), 1),
            "wall_s_per_topic": round(float(np.mean(rows[spec]["wall"])), 3),
            "cpu_s_per_topic": round(float(np.mean(rows[spec]["cpu"])), 3),
        }
        print(spec, summary[spec], flush=True)
    print(json.dumps({"dataset": args.dataset, "topics": len(topics), **summary}, indent=2))


if __name__ == "__main__":
    main()
