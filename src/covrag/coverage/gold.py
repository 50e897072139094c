"""Gold coverage: the human labels themselves, the oracle every estimator is measured against."""

from __future__ import annotations

import time
from dataclasses import dataclass

from covrag.coverage.base import ESTIMATORS, CoverageEstimator
from covrag.errors import DataError
from covrag.types import CoverageMatrix, Topic


@ESTIMATORS.register
@dataclass(frozen=True, repr=False)
class GoldCoverage(CoverageEstimator):
    """P = 1 where the labels say a passage supports an aspect, else 0 (threshold 0.5)."""

    name = "gold"

    def estimate(self, topic: Topic) -> CoverageMatrix:
        started = time.perf_counter()
        if not topic.labels:
            raise DataError(f"topic {topic.query_id!r} has no gold labels to use as coverage")
        return CoverageMatrix(
            passage_ids=topic.passage_ids,
            aspect_ids=topic.aspect_ids,
            probs=topic.label_matrix().astype(float),
            threshold=0.5,
            source=repr(self),
            pairs_scored=0,
            seconds=time.perf_counter() - started,
        )
