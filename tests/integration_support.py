"""Shared inputs of the integration tests: a small retrieved pool and a keyword coverage estimator.

The estimator is an input to the unit under test (like a dataset), not a mock of it: it makes the
expected selections easy to state and check by hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.types import CoverageMatrix, Topic

QUERY = "Should cities ban cars from their centres?"

# Retrieval order: three near-duplicates about pollution first, as a relevance ranking gives.
TEXTS = [
    "Car bans cut air pollution and smog in city centres.",
    "Banning cars reduces pollution from exhaust fumes.",
    "Less traffic means less pollution and quieter streets.",
    "Shops in car-free streets lose customers who drive: a cost for business.",
    "Emergency vehicles and disabled residents still need access by car.",
    "Bus and bike lanes need investment before any ban; the cost falls on taxpayers.",
]

ASPECTS = ["pollution", "business", "access"]


@dataclass(frozen=True, repr=False)
class KeywordCoverage(CoverageEstimator):
    """P = 1 when the aspect's text occurs in the passage (case-insensitive), else 0."""

    name = "keyword"

    def estimate(self, topic: Topic) -> CoverageMatrix:
        probs = np.array(
            [
                [float(a.text.lower() in p.text.lower()) for a in topic.aspects]
                for p in topic.passages
            ]
        ).reshape(len(topic.passages), len(topic.aspects))
        return CoverageMatrix(
            topic.passage_ids, topic.aspect_ids, probs, threshold=0.5, source="keyword"
        )
