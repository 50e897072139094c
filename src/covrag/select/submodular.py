"""Greedy optimisers for monotone submodular objectives under a budget (objective kept apart).

An objective only answers two questions (as in apricot): the marginal gains of some items given
the current set, and "add this item". The optimisers pick items, enforce the budget through
:class:`~covrag.select.base.BudgetTracker` (an item that does not fit is skipped, never truncated)
and break ties of gain by relevance rank, then pool order. Both optimisers return the same picks.

- :func:`lazy_greedy`: Minoux's accelerated greedy (1978). Marginal gains of a submodular function
  only shrink, so stale gains kept in a max-heap are upper bounds; only the top is re-evaluated.
- :func:`naive_greedy`: re-evaluates every candidate at each step (the reference).

With ``divisor`` (token costs) the key is gain per token, the cost-benefit greedy used for
knapsack budgets (Leskovec et al., KDD 2007); ratios of a submodular gain also only shrink, so
lazy evaluation stays valid.
"""

from __future__ import annotations

import heapq
from typing import Protocol

import numpy as np

from covrag.select._common import best_index
from covrag.select.base import BudgetTracker
from covrag.types import BoolArray, FloatArray, IntArray

# A raw gain (before dividing by cost) at or below this is zero; when every item's is, the
# objective is saturated.
SATURATED = 1e-6


class Objective(Protocol):
    """A monotone submodular set function, evaluated incrementally."""

    def gains(self, indices: IntArray) -> FloatArray:
        """Marginal gains of adding each of ``indices`` to the current set."""
        ...

    def add(self, index: int) -> None:
        """Add ``index`` to the current set."""
        ...


def lazy_greedy(
    objective: Objective,
    tracker: BudgetTracker,
    available: BoolArray,
    rank: IntArray,
    divisor: FloatArray | None = None,
) -> tuple[list[int], list[float]]:
    """Lazy greedy until the budget is spent or no fitting item gains more than ``SATURATED``.

    An item is dropped for good once it does not fit or gains no more than ``SATURATED``: the
    budget left and the marginal gains only shrink.

    Args:
        objective: The function to maximise, updated in place as items are added.
        tracker: The budget so far; updated in place.
        available: (n,) items that may be picked; picked ones are cleared in place.
        rank: (n,) tie-break rank (lower wins), e.g. relevance rank.
        divisor: (n,) per-item divisor of the gain (cost-aware greedy) when given.

    Returns:
        Picked indices in order and the (possibly cost-divided) gain of each pick.
    """
    indices = np.flatnonzero(available).astype(np.int64)
    scale = np.ones(len(available)) if divisor is None else divisor
    gains = objective.gains(indices)
    heap = [
        (-float(g / scale[i]), int(rank[i]), int(i))
        for g, i in zip(gains, indices, strict=True)
        if g > SATURATED
    ]
    heapq.heapify(heap)
    picked: list[int] = []
    scores: list[float] = []
    while heap and not tracker.full:
        _, item_rank, index = heapq.heappop(heap)
        if not tracker.fits(index):
            continue  # budgets only shrink: it will never fit again
        gain = float(objective.gains(np.array([index]))[0])
        if gain <= SATURATED:
            continue  # gains only shrink: it will never gain again
        key = gain / float(scale[index])
        if heap and (-key, item_rank) > heap[0][:2]:
            heapq.heappush(heap, (-key, item_rank, index))
            continue
        objective.add(index)
        tracker.add(index)
        available[index] = False
        picked.append(index)
        scores.append(key)
    return picked, scores


def naive_greedy(
    objective: Objective,
    tracker: BudgetTracker,
    available: BoolArray,
    rank: IntArray,
    divisor: FloatArray | None = None,
) -> tuple[list[int], list[float]]:
    """Plain greedy, every gain recomputed each step; same contract as :func:`lazy_greedy`."""
    scale = np.ones(len(available)) if divisor is None else divisor
    picked: list[int] = []
    scores: list[float] = []
    while not tracker.full:
        mask = tracker.fitting(available)
        if not mask.any():
            break
        indices = np.flatnonzero(mask).astype(np.int64)
        gains = np.zeros(len(available))
        gains[indices] = objective.gains(indices)
        mask &= gains > SATURATED
        if not mask.any():
            break
        keys = gains / scale
        index = best_index(keys, mask, rank)
        objective.add(index)
        tracker.add(index)
        available[index] = False
        picked.append(index)
        scores.append(float(keys[index]))
    return picked, scores


OPTIMIZERS = {"lazy": lazy_greedy, "naive": naive_greedy}
