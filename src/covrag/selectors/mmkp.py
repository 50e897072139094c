"""Per-cluster cap: a greedy multiple-choice knapsack (MMKP-style) baseline.

The pool is clustered (k-means over the embeddings, as in :mod:`covrag.selectors.cluster`); each
cluster is a "class" of the multiple-choice knapsack from which at most ``cap`` passages may be
taken, and the budget (passages and/or tokens) is the knapsack. Passages are taken greedily by
value (relevance, or relevance per token) under the cap; this is the greedy heuristic, not an exact
MMKP solution (for MMKP see Kellerer, Pferschy & Pisinger, *Knapsack Problems*, 2004, ch. 11).
LMVU lists MMKP among its baselines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.selectors._common import min_max, ratio_costs
from covrag.selectors.base import EMBEDDINGS, SELECTORS, Candidates, Input, Selector
from covrag.selectors.cluster import check_clusters, cluster_labels
from covrag.selectors.optimize import GreedyRun
from covrag.types import Budget, IntArray


@SELECTORS.register
@dataclass(frozen=True, repr=False, kw_only=True)
class MMKPSelector(Selector):
    """Passages by value with at most ``cap`` per cluster; then, if ``fill``, by relevance.

    Value is the relevance, or with ``cost_aware=True`` the relevance min-max normalised to
    [0, 1] divided by the token cost (cost 0 counts as 1), so a long passage must be more relevant
    to be worth its tokens. Ties go to the more relevant passage, then pool order.

    Attributes:
        cap: Most passages taken from one cluster before the fill.
        fill: Once nothing more fits under the cap, fill the rest of the budget by relevance
            (the cap relaxed); when False the selection stops there.
        cost_aware: Rank by normalised relevance per token.
        n_clusters: Number of clusters; None means as many as the budget holds.
        random_state: Seed of the k-means++ initialisation.

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("mmkp(cap=2)")
        mmkp(cap=2)
    """

    name = "mmkp"
    cap: int = 1
    fill: bool = True
    cost_aware: bool = False
    n_clusters: int | None = None
    random_state: int = 0

    @property
    def reads(self) -> tuple[Input, ...]:
        return (Input(EMBEDDINGS),)

    def __post_init__(self) -> None:
        if self.cap < 1:
            raise ConfigError(f"mmkp: cap must be >= 1, got {self.cap!r}")
        check_clusters(self.name, self.n_clusters)

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        labels = cluster_labels(candidates, budget, self.n_clusters, self.random_state)
        relevance = candidates.relevance
        run = GreedyRun(candidates, budget)
        if self.cost_aware:
            value = min_max(relevance) / ratio_costs(candidates.costs)
        else:
            value = relevance
        order: IntArray = np.lexsort((run.rank, -value)).astype(np.int64)
        run.fill(order, value, groups=labels, cap=self.cap)
        if self.fill:
            run.fallback()
        return run.result()
