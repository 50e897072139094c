"""The one greedy loop of covrag's selectors: an objective says what a pick gains, this picks.

An objective (as in apricot) answers two questions: the marginal gains of some passages given what
is already picked, and "add this passage". Everything else is done here, once, for every greedy
selector: the budget (k and tokens, through :class:`~covrag.selectors.base.BudgetTracker`; a passage
that does not fit is skipped, never truncated), cost-aware division, ties (relevance rank, then
pool order), stopping once nothing gains, and the fall-back that fills the rest of the budget in
relevance order.

- :func:`naive_greedy`: every gain recomputed at each step (one vectorised call; any objective).
- :func:`lazy_greedy`: Minoux's accelerated greedy (1978), for monotone submodular objectives only.
  Their marginal gains only shrink, so stale gains kept in a max-heap are upper bounds; only the
  top is re-evaluated. Both return the same picks.

With ``divisor`` (token costs) the key is gain per token, the cost-benefit greedy used for
knapsack budgets (Leskovec et al., KDD 2007); ratios of a submodular gain also only shrink, so
lazy evaluation stays valid.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Protocol

import numpy as np

from covrag.selectors._common import best_index, ratio_costs, relevance_rank
from covrag.selectors.base import BudgetTracker, Candidates
from covrag.types import BoolArray, Budget, FloatArray, IntArray

# A raw gain (before dividing by cost) at or below this is zero for objectives on a probability
# scale; when every item's is, the objective is saturated.
SATURATED = 1e-6


class Objective(Protocol):
    """What a greedy selector maximises, evaluated incrementally over one pool.

    ``floor``: a gain (before cost division) at or below it is nothing, and the greedy phase stops
    once no fitting passage gains more (``-inf`` for scores that rank every passage whatever their
    sign, such as MMR's: such objectives never saturate). ``submodular``: whether gains are
    monotone submodular (they only shrink as passages are added), which :func:`lazy_greedy` needs.
    """

    @property
    def floor(self) -> float: ...

    @property
    def submodular(self) -> bool: ...

    def gains(self, indices: IntArray) -> FloatArray:
        """Marginal gains of adding each of ``indices`` to the current set."""
        ...

    def add(self, index: int) -> None:
        """Add ``index`` to the current set."""
        ...


Optimizer = Callable[
    [Objective, BudgetTracker, BoolArray, IntArray, FloatArray | None],
    tuple[list[int], list[float]],
]


def lazy_greedy(
    objective: Objective,
    tracker: BudgetTracker,
    available: BoolArray,
    rank: IntArray,
    divisor: FloatArray | None = None,
) -> tuple[list[int], list[float]]:
    """Lazy greedy until the budget is spent or no fitting item gains more than the floor.

    An item is dropped for good once it does not fit or gains no more than ``objective.floor``:
    the budget left and the marginal gains only shrink.

    Args:
        objective: The monotone submodular function to maximise, updated in place.
        tracker: The budget so far; updated in place.
        available: (n,) items that may be picked; picked ones are cleared in place.
        rank: (n,) tie-break rank (lower wins), e.g. relevance rank.
        divisor: (n,) per-item divisor of the gain (cost-aware greedy) when given.

    Returns:
        Picked indices in order and the (possibly cost-divided) gain of each pick.
    """
    if not objective.submodular:
        raise ValueError("lazy greedy needs a monotone submodular objective; use naive_greedy")
    floor = objective.floor
    indices = np.flatnonzero(available).astype(np.int64)
    scale = np.ones(len(available)) if divisor is None else divisor
    gains = objective.gains(indices)
    heap = [
        (-float(g / scale[i]), int(rank[i]), int(i))
        for g, i in zip(gains, indices, strict=True)
        if g > floor
    ]
    heapq.heapify(heap)
    picked: list[int] = []
    scores: list[float] = []
    while heap and not tracker.full:
        _, item_rank, index = heapq.heappop(heap)
        if not tracker.fits(index):
            continue  # budgets only shrink: it will never fit again
        gain = float(objective.gains(np.array([index]))[0])
        if gain <= floor:
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
    """Plain greedy, every gain recomputed each step; same contract as :func:`lazy_greedy`.

    Gains within ``TIE_TOLERANCE`` of the best count as ties (see
    :func:`~covrag.selectors._common.best_index`); works for any objective, submodular or not.
    """
    floor = objective.floor
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
        mask &= gains > floor
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


OPTIMIZERS: dict[str, Optimizer] = {"lazy": lazy_greedy, "naive": naive_greedy}


def fill(
    tracker: BudgetTracker,
    available: BoolArray,
    order: IntArray,
    scores: FloatArray,
    picked: list[int],
    picked_scores: list[float],
    *,
    groups: IntArray | None = None,
    cap: int = 1,
) -> None:
    """Append the ``available`` passages in ``order`` while the budget lasts, skipping misfits.

    A passage that does not fit now never fits later (budgets only shrink), so one pass suffices.
    With ``groups``, at most ``cap`` passages of one group are taken (a multiple-choice cap).
    ``picked``, ``picked_scores`` and ``available`` are updated in place.
    """
    taken = np.zeros(0 if groups is None else int(groups.max()) + 1, dtype=np.int64)
    for index in order.tolist():
        if tracker.full:
            break
        if not available[index] or not tracker.fits(index):
            continue
        if groups is not None:
            if taken[groups[index]] >= cap:
                continue
            taken[groups[index]] += 1
        tracker.add(index)
        available[index] = False
        picked.append(index)
        picked_scores.append(float(scores[index]))


class GreedyRun:
    """One selection in progress over a pool: budget used, passages left, picks and their scores.

    Args:
        candidates: The pool (its relevance breaks ties and orders the fall-back; its token
            costs meet the budget).
        budget: The selection's budget.
        allowed: (n,) passages that may be picked at all (all when None).
        cost_aware: Divide each gain by the passage's token cost (0 counts as 1).
    """

    def __init__(
        self,
        candidates: Candidates,
        budget: Budget,
        *,
        allowed: BoolArray | None = None,
        cost_aware: bool = False,
    ) -> None:
        n = len(candidates)
        self.relevance = candidates.relevance
        self.rank = relevance_rank(candidates.relevance)
        self.tracker = BudgetTracker(budget, candidates.costs)
        self.available = np.ones(n, dtype=bool) if allowed is None else allowed.copy()
        self.divisor = ratio_costs(candidates.costs) if cost_aware else None
        self.picked: list[int] = []
        self.scores: list[float] = []

    def _available(self, among: BoolArray | None) -> BoolArray:
        return self.available if among is None else self.available & among

    def maximize(
        self, objective: Objective, *, optimizer: str = "naive", among: BoolArray | None = None
    ) -> None:
        """Pick by ``objective`` (among ``among`` only, when given) while a fitting pick gains."""
        available = self._available(among)
        picked, scores = OPTIMIZERS[optimizer](
            objective, self.tracker, available, self.rank, self.divisor
        )
        self.available[picked] = False
        self.picked += picked
        self.scores += scores

    def fill(
        self,
        order: IntArray,
        scores: FloatArray,
        *,
        among: BoolArray | None = None,
        groups: IntArray | None = None,
        cap: int = 1,
    ) -> None:
        """Take passages in ``order`` while they fit (see :func:`fill`), scored by ``scores``."""
        available = self._available(among)
        before = len(self.picked)
        fill(
            self.tracker,
            available,
            order,
            scores,
            self.picked,
            self.scores,
            groups=groups,
            cap=cap,
        )
        self.available[self.picked[before:]] = False

    def fallback(self, *, last: FloatArray | None = None, among: BoolArray | None = None) -> None:
        """Fill the rest of the budget in relevance order, scored by relevance (the DES fallback).

        Passages with a larger ``last`` (e.g. an exclusion penalty) come after the others.
        """
        order = np.argsort(self.rank) if last is None else np.lexsort((self.rank, last))
        self.fill(order.astype(np.int64), self.relevance, among=among)

    def result(self) -> tuple[list[int], list[float]]:
        return self.picked, self.scores


def greedy(
    objective: Objective,
    candidates: Candidates,
    budget: Budget,
    *,
    optimizer: str = "naive",
    cost_aware: bool = False,
    allowed: BoolArray | None = None,
    last: FloatArray | None = None,
) -> tuple[list[int], list[float]]:
    """Greedy selection by ``objective`` within ``budget``, then the relevance fall-back.

    Every greedy selector runs through here: picks by the largest gain (per token when
    ``cost_aware``; ties by relevance, then pool order) while some fitting passage gains more than
    ``objective.floor``, then the remaining ``allowed`` passages in relevance order (larger ``last``
    after) while they fit, so the result is always a full ranking within the budget.

    Returns:
        The picked pool indices in order and the score that chose each: the (cost-divided) gain
        in the greedy phase, the relevance in the fall-back.
    """
    run = GreedyRun(candidates, budget, allowed=allowed, cost_aware=cost_aware)
    run.maximize(objective, optimizer=optimizer)
    run.fallback(last=last)
    return run.result()
