"""Greedy coverage: DES's selection rule (decompose, estimate, select).

Repeatedly pick the passage that covers the most still-uncovered aspects (weighted), ties broken by
relevance, then pool order; once nothing new can be covered, fall back to relevance order, so the
output is always a full ranking within the budget. Relevance is never recomputed.

This is the standard greedy for maximum coverage, which reaches at least ``1 - 1/e`` of the optimum
under a passage-count budget (Nemhauser, Wolsey & Fisher, 1978); the DES paper applies it to an
estimated passages x sub-questions matrix for long-form RAG (TREC RAG 2024).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.selectors.base import COVERAGE, SELECTORS, Candidates, Input, Selector
from covrag.selectors.exclusion import apply_exclusion, check_exclusion
from covrag.selectors.optimize import greedy
from covrag.types import BoolArray, Budget, FloatArray, IntArray

# A gain at or below this is "nothing new": weights are >= 0, so real gains are far larger.
_NO_GAIN = 1e-12


class CoverageGain:
    """Weighted number of still-uncovered aspects a passage covers, minus its penalty.

    The DES objective over a boolean coverage matrix: the gain of passage i is
    ``weights @ (covered[i] & uncovered) - penalty[i]``; adding i marks its aspects covered.
    Monotone submodular without penalties (max coverage); the penalty is a modular term.

    Args:
        covered: (n, m) booleans, passage i covers aspect j.
        weights: (m,) aspect weights.
        penalty: (n,) subtracted from each gain (exclusion).
    """

    floor = _NO_GAIN
    submodular = True

    def __init__(self, covered: BoolArray, weights: FloatArray, penalty: FloatArray) -> None:
        self.covered = covered
        self.matrix = covered.astype(np.float64)
        self.weights = weights
        self.penalty = penalty
        self.uncovered = np.ones(covered.shape[1], dtype=bool)

    def gains(self, indices: IntArray) -> FloatArray:
        result: FloatArray = (self.matrix @ (self.weights * self.uncovered) - self.penalty)[indices]
        return result

    def add(self, index: int) -> None:
        self.uncovered &= ~self.covered[index]


@SELECTORS.register
@dataclass(frozen=True, repr=False, kw_only=True)
class GreedyCoverageSelector(Selector):
    """DES greedy selection over the coverage matrix (weighted by ``candidates.weights()``).

    Needs ``candidates.coverage``. Fast: boolean/matrix-vector operations per pick, well under a
    millisecond for 100 passages x 10 aspects.

    Attributes:
        cost_aware: Divide each gain by the passage's token cost (0 counts as 1), the usual
            greedy for a token (knapsack) budget.
        exclude: What to do with excluded aspects: ``ignore``, ``penalize`` or ``forbid`` (see
            :mod:`covrag.selectors.exclusion`).
        penalty: Gain lost per excluded aspect a passage covers, with ``exclude="penalize"``.

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("greedy-coverage(cost_aware=True)")
        greedy-coverage(cost_aware=True)
    """

    name = "greedy-coverage"
    cost_aware: bool = False
    exclude: str = "ignore"
    penalty: float = 1.0

    @property
    def reads(self) -> tuple[Input, ...]:
        return (Input(COVERAGE),)

    def __post_init__(self) -> None:
        check_exclusion(self.exclude, self.penalty)

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        covered = candidates.covered
        effect = apply_exclusion(candidates, covered, self.exclude, self.penalty)
        return greedy(
            CoverageGain(covered, effect.weights, effect.penalty),
            candidates,
            budget,
            cost_aware=self.cost_aware,
            allowed=effect.allowed,
            last=effect.penalty,
        )
