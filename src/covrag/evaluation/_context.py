"""What measures read while a batch of topics is evaluated (private).

A context maps a batch of topics' rankings onto the compiled judgments once, and memoises the
arrays several measures share (seen-counts, alpha gains per alpha, budget walks), so asking for
``alpha-nDCG@10`` and ``StRecall@10`` together costs about as much as one of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from covrag.evaluation import _kernels
from covrag.evaluation._compiled import Compiled
from covrag.evaluation.judgments import RunLike
from covrag.types import BoolArray, FloatArray, IntArray


class Context:
    """Shared, memoised arrays for one batch of topics and one run."""

    def __init__(self, compiled: Compiled, run: RunLike, topics: Sequence[int], depth: int) -> None:
        self.compiled = compiled
        self.run = run
        self.topics = np.asarray(topics, dtype=np.int64)
        self.depth = depth
        self.rows = compiled.run_rows(run, topics, depth)
        self.actual = compiled.actual[self.topics]
        self._counts: tuple[IntArray, BoolArray] | None = None
        self._gains: dict[float, FloatArray] = {}
        self._full: IntArray | None = None
        self._support: dict[int, IntArray] = {}

    def _seen(self) -> tuple[IntArray, BoolArray]:
        if self._counts is None:
            aspects = self.compiled.doc_aspects[self.rows]
            self._counts = _kernels.seen_counts(aspects, self.compiled.sentinel)
        return self._counts

    def alpha_ndcg(self, alpha: float, cutoff: int) -> FloatArray:
        if alpha not in self._gains:
            counts, valid = self._seen()
            self._gains[alpha] = _kernels.alpha_gains(counts, valid, alpha)
        ideal = self.compiled.ideal_gains(alpha, self.depth)[self.topics]
        return _kernels.alpha_ndcg(self._gains[alpha], ideal, self.actual, alpha, cutoff)

    def subtopic_recall(self, cutoff: int) -> FloatArray:
        counts, valid = self._seen()
        new_aspects = ((counts == 0) & valid).sum(axis=2)
        return _kernels.subtopic_recall(new_aspects, self.actual, cutoff)

    def _relevant(self) -> BoolArray:
        result: BoolArray = self.compiled.n_aspects_of_doc[self.rows] > 0
        return result

    def precision(self, cutoff: int) -> FloatArray:
        return _kernels.precision(self._relevant(), cutoff)

    def excluded_share(self, cutoff: int) -> FloatArray:
        """Share of the first ``cutoff`` ranks holding a doc that supports an excluded aspect."""
        hits = self.compiled.excluded_rows[self.rows[:, :cutoff]]
        result: FloatArray = hits.sum(axis=1) / cutoff
        return result

    def binary_ndcg(self, cutoff: int) -> FloatArray:
        n_relevant = self.compiled.n_relevant[self.topics]
        return _kernels.binary_ndcg(self._relevant(), n_relevant, cutoff)

    def budget_support(self, budget: int, what: str) -> IntArray:
        """(topics, aspects) how many docs the budget walk includes support each aspect."""
        if self._full is None:
            self._full = self.compiled.run_rows(self.run, list(self.topics), None)
            self.compiled.check_costs(self._full, list(self.topics), self.run, what)
        if budget not in self._support:
            costs = self.compiled.costs[self._full]
            costs = np.where(self._full == self.compiled.empty, budget + 1, costs)
            included = _kernels.budget_walk(costs, budget)
            aspects = self.compiled.doc_aspects[self._full]
            self._support[budget] = _kernels.support_counts(
                aspects, included, self.compiled.sentinel
            )
        return self._support[budget]
