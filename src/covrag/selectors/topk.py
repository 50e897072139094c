"""Relevance top-k: the baseline every retriever already gives."""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from covrag.selectors.base import SELECTORS, Candidates, Selector
from covrag.selectors.optimize import GreedyRun
from covrag.types import Budget, FloatArray, IntArray


def fill_in_order(
    order: IntArray, scores: FloatArray, candidates: Candidates, budget: Budget
) -> tuple[list[int], list[float]]:
    """Take passages in ``order`` while they fit, skipping (never truncating) those that do not."""
    run = GreedyRun(candidates, budget)
    run.fill(order, scores)
    return run.result()


@SELECTORS.register
@dataclass(frozen=True, repr=False)
class TopKSelector(Selector):
    """Passages in decreasing relevance (ties in pool order), as many as the budget allows."""

    name = "topk"

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        order: IntArray = np.argsort(-candidates.relevance, kind="stable")
        return fill_in_order(order, candidates.relevance, candidates, budget)


@SELECTORS.register
@dataclass(frozen=True, repr=False)
class RandomSelector(Selector):
    """A uniformly random order (seeded per topic), the floor any method must clear.

    Attributes:
        seed: Base seed; the topic id is mixed in so topics get different but repeatable orders.
    """

    name = "random"
    seed: int = 0

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        topic_seed = zlib.crc32(candidates.query_id.encode())
        rng = np.random.default_rng([self.seed, topic_seed])
        order = rng.permutation(len(candidates))
        scores = np.empty(len(candidates))
        scores[order] = np.arange(len(candidates), 0, -1, dtype=np.float64)
        return fill_in_order(order, scores, candidates, budget)
