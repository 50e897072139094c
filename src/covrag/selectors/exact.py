"""The exact optimum of budgeted (weighted) maximum coverage, by integer programming.

Maximum coverage under a budget is NP-hard in general, but the pools covrag sees are small enough
for a MILP solver (HiGHS through :func:`scipy.optimize.milp`) to prove the optimum in
milliseconds. The optimum gives the *headroom* of LMVU: how far any selector is from the best
context the coverage matrix allows. Model, with x_i binary per passage and y_j in [0, 1] per
aspect::

    maximise   sum_j w_j y_j - sum_i p_i x_i          (p_i: exclusion penalty, usually 0)
    subject to y_j <= sum_{i covers j} x_i            for every aspect j
               sum_i x_i <= k,  sum_i c_i x_i <= T    (the budget's limits, when given)

Exact pre-reductions shrink the model first (:func:`reduce_pool`). A second solve then picks,
among the optimal sets, the one with the fewest tokens and then the most relevant passages, with
the first optimum fixed by a constraint, so it can never lower the coverage.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from covrag.errors import ConfigError, CovragError
from covrag.selectors._common import min_max
from covrag.selectors.base import COVERAGE, SELECTORS, Candidates, Input, Selector
from covrag.selectors.exclusion import apply_exclusion, check_exclusion
from covrag.selectors.greedy import CoverageGain
from covrag.selectors.optimize import GreedyRun
from covrag.types import BoolArray, Budget, FloatArray, IntArray

logger = logging.getLogger(__name__)

# HiGHS's default relative gap (1e-4) could accept a sub-optimal set; ask for a proof instead.
_MIP_GAP = 1e-9


class NotProvenOptimalError(CovragError, RuntimeError):
    """HiGHS stopped (time limit) before proving the optimum; raise ``time_limit`` or pass
    ``strict=False`` to accept the best set found."""


@dataclass(frozen=True)
class ExactSolution:
    """An optimal set of passages for budgeted maximum coverage.

    Attributes:
        chosen: Pool indices of the set, increasing.
        value: Its objective: covered weight minus exclusion penalties.
        bound: The solver's proven upper bound (equal to ``value`` when proven optimal).
        proven_optimal: Whether HiGHS proved optimality; never assume it otherwise.
        passages_in_model: Passages left after the exact reductions.
        aspects_in_model: Aspects left after the exact reductions.
        seconds: Wall-clock time of reduction and solves.
    """

    chosen: tuple[int, ...]
    value: float
    bound: float
    proven_optimal: bool
    passages_in_model: int
    aspects_in_model: int
    seconds: float


def reduce_pool(
    covered: BoolArray,
    costs: IntArray,
    penalty: FloatArray,
    relevance: FloatArray,
    eligible: BoolArray,
) -> IntArray:
    """Indices of the passages that an optimal (and preferred) solution may need.

    Drops, keeping exactness, every candidate passage that:
    - gains no more than its penalty even alone (covers nothing of value, in particular);
    - is dominated: another passage covers a superset of its aspects with no higher penalty and
      fewer tokens, or as many tokens and at least its relevance. Among identical passages (same
      coverage, penalty, tokens, relevance) the first in pool order is kept.
    Swapping a dropped passage for its dominator keeps a solution feasible and never lowers its
    coverage nor worsens the token/relevance preference, so the optimum is unchanged.

    Args:
        covered: (n, a) coverage over the aspects that carry weight.
        costs, penalty, relevance: (n,) per passage.
        eligible: (n,) passages eligible at all (allowed and fitting the token budget alone).

    Memory: three r x r boolean/float32 arrays for the r eligible passages (fine to thousands).
    """
    rows = covered.astype(np.float32)  # float32 BLAS counts are exact below 2**24 aspects
    useful = eligible & covered.any(axis=1)
    index = np.flatnonzero(useful)
    sub = rows[index]
    cost, pen, rel = costs[index], penalty[index], relevance[index]
    subset = (sub @ (1 - sub).T) == 0  # subset[a, b]: row a within row b
    better_or_equal = (
        subset
        & (pen[None, :] <= pen[:, None])
        & (
            (cost[None, :] < cost[:, None])
            | ((cost[None, :] == cost[:, None]) & (rel[None, :] >= rel[:, None]))
        )
    )
    same = (
        subset
        & subset.T
        & (pen[None, :] == pen[:, None])
        & (cost[None, :] == cost[:, None])
        & (rel[None, :] == rel[:, None])
    )
    position = np.arange(len(index))
    dominates = better_or_equal & (~same | (position[None, :] < position[:, None]))
    np.fill_diagonal(dominates, False)
    result: IntArray = index[~dominates.any(axis=1)].astype(np.int64)
    return result


def _solve(c: FloatArray, constraints: list[Any], n_x: int, seconds: float) -> Any:
    from scipy.optimize import Bounds, milp  # scipy.optimize takes ~0.5 s to import

    integrality = np.concatenate([np.ones(n_x), np.zeros(len(c) - n_x)])
    return milp(
        c,
        integrality=integrality,
        bounds=Bounds(0.0, 1.0),
        constraints=constraints,
        options={"time_limit": max(seconds, 0.01), "mip_rel_gap": _MIP_GAP},
    )


def _bound(result: Any) -> float:
    """The proven upper bound of the maximisation (inf when the solver has none)."""
    dual = getattr(result, "mip_dual_bound", None)
    return np.inf if dual is None or not np.isfinite(dual) else -float(dual)


def solve_exact(
    candidates: Candidates,
    budget: Budget,
    *,
    exclude: str = "ignore",
    penalty: float = 1.0,
    time_limit: float = 60.0,
    secondary: bool = True,
) -> ExactSolution:
    """Solve budgeted maximum coverage over ``candidates.covered`` exactly.

    Args:
        candidates: The pool; needs a coverage matrix. Weights from ``candidates.weights()``.
        budget: ``max_passages`` and/or ``max_tokens`` (token costs from ``candidates.costs``).
        exclude: Exclusion mode (:mod:`covrag.selectors.exclusion`).
        penalty: Penalty per excluded aspect with ``exclude="penalize"``.
        time_limit: Seconds HiGHS may spend, both solves together.
        secondary: Also prefer, among optimal sets, fewer tokens then more relevant passages.

    Returns:
        The optimal set with its value and whether optimality was proven.
    """
    started = time.perf_counter()
    covered = candidates.covered
    effect = apply_exclusion(candidates, covered, exclude, penalty)
    columns = effect.weights > 0
    costs = candidates.costs
    eligible = effect.allowed.copy()
    if budget.max_tokens is not None:
        eligible &= costs <= budget.max_tokens
    values = covered[:, columns].astype(np.float64) @ effect.weights[columns]
    eligible &= values > effect.penalty
    items = reduce_pool(covered[:, columns], costs, effect.penalty, candidates.relevance, eligible)
    aspects = np.flatnonzero(columns)
    aspects = aspects[covered[np.ix_(items, aspects)].any(axis=0)] if len(items) else aspects[:0]
    r, a = len(items), len(aspects)

    def objective(chosen: IntArray) -> float:
        hit = covered[np.ix_(chosen, aspects)].any(axis=0)
        return float(effect.weights[aspects][hit].sum() - effect.penalty[chosen].sum())

    if r == 0 or a == 0:
        seconds = time.perf_counter() - started
        return ExactSolution((), 0.0, 0.0, True, r, a, seconds)

    item_costs = costs[items].astype(np.float64)
    constraints = _constraints(covered[np.ix_(items, aspects)], item_costs, budget)
    primary = np.concatenate([effect.penalty[items], -effect.weights[aspects]])
    first = _solve(primary, constraints, r, time_limit)
    if first.x is None:
        seconds = time.perf_counter() - started
        bound = _bound(first)
        logger.warning(
            "exact: HiGHS found no solution for %s: %s", candidates.query_id, first.message
        )
        return ExactSolution((), 0.0, bound, False, r, a, seconds)
    chosen = items[first.x[:r] > 0.5]
    value = objective(chosen)
    proven = bool(first.status == 0)
    bound = value if proven else _bound(first)
    left = time_limit - (time.perf_counter() - started)
    if secondary and proven and left > 0:
        tolerance = 1e-9 * max(1.0, abs(float(first.fun)))
        from scipy.optimize import LinearConstraint

        keep = LinearConstraint(primary, -np.inf, float(first.fun) + tolerance)
        preference = item_costs + (1.0 - min_max(candidates.relevance)[items] / 2.0) / (r + 1)
        second = _solve(np.concatenate([preference, np.zeros(a)]), [*constraints, keep], r, left)
        if second.x is not None:
            alternative = items[second.x[:r] > 0.5]
            if objective(alternative) >= value - 1e-9 * max(1.0, abs(value)):
                chosen = alternative
                value = max(value, objective(alternative))
                bound = value
    seconds = time.perf_counter() - started
    return ExactSolution(tuple(int(i) for i in chosen), value, bound, proven, r, a, seconds)


def _constraints(matrix: BoolArray, item_costs: FloatArray, budget: Budget) -> list[Any]:
    """Over variables ``[x (items), y (aspects)]``: an aspect counts only when a chosen item
    covers it (``y_j <= sum_i x_i``), and the budgets where they bind."""
    from scipy.optimize import LinearConstraint

    r, a = matrix.shape
    cover = np.hstack([-matrix.T.astype(np.float64), np.eye(a)])
    constraints = [LinearConstraint(cover, -np.inf, 0.0)]
    if budget.max_passages is not None and budget.max_passages < r:
        constraints.append(
            LinearConstraint(np.concatenate([np.ones(r), np.zeros(a)]), 0.0, budget.max_passages)
        )
    if budget.max_tokens is not None and item_costs.sum() > budget.max_tokens:
        constraints.append(
            LinearConstraint(np.concatenate([item_costs, np.zeros(a)]), 0.0, budget.max_tokens)
        )
    return constraints


def optimum_coverage(candidates: Candidates, budget: Budget, *, time_limit: float = 60.0) -> float:
    """The largest (weighted) coverage any selection within ``budget`` can reach.

    Raises:
        NotProvenOptimalError: HiGHS did not prove the optimum within ``time_limit`` seconds.
    """
    solution = solve_exact(candidates, budget, time_limit=time_limit, secondary=False)
    if not solution.proven_optimal:
        raise NotProvenOptimalError(
            f"topic {candidates.query_id}: optimum not proven within {time_limit} s "
            f"(best {solution.value:g}, bound {solution.bound:g}); raise time_limit"
        )
    return solution.value


@SELECTORS.register
@dataclass(frozen=True, repr=False, kw_only=True)
class ExactSelector(Selector):
    """The optimal set for the coverage matrix, ordered greedily, then DES greedy fill.

    The optimal set (:func:`solve_exact`) is ordered by marginal gain (ties by relevance) so the
    trace reads like a greedy one; the rest of the budget is filled by the DES rule over the other
    passages, which never lowers coverage. Coverage of the result is the proven optimum.

    Attributes:
        exclude: ``ignore``, ``penalize`` or ``forbid`` (see :mod:`covrag.selectors.exclusion`).
        penalty: Objective lost per excluded aspect a chosen passage covers (``penalize``).
        time_limit: Seconds HiGHS may spend per query.
        strict: Raise :class:`NotProvenOptimalError` when optimality is not proven; when False,
            log a warning and use the best set found.

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("exact(time_limit=10.0)")
        exact(time_limit=10.0)
    """

    name = "exact"
    exclude: str = "ignore"
    penalty: float = 1.0
    time_limit: float = 60.0
    strict: bool = True

    @property
    def reads(self) -> tuple[Input, ...]:
        return (Input(COVERAGE),)

    def __post_init__(self) -> None:
        check_exclusion(self.exclude, self.penalty)
        if not self.time_limit > 0:
            raise ConfigError(f"exact: time_limit must be > 0, got {self.time_limit!r}")

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        solution = solve_exact(
            candidates,
            budget,
            exclude=self.exclude,
            penalty=self.penalty,
            time_limit=self.time_limit,
        )
        if not solution.proven_optimal:
            message = (
                f"exact: optimum not proven for topic {candidates.query_id} within "
                f"{self.time_limit} s (best {solution.value:g}, bound {solution.bound:g})"
            )
            if self.strict:
                raise NotProvenOptimalError(message + "; raise time_limit or pass strict=False")
            logger.warning("%s; using the best set found", message)
        covered = candidates.covered
        effect = apply_exclusion(candidates, covered, self.exclude, self.penalty)
        chosen = np.zeros(len(candidates), dtype=bool)
        chosen[list(solution.chosen)] = True
        # The optimal set first, ordered by the DES greedy, then the rest of the pool likewise.
        objective = CoverageGain(covered, effect.weights, effect.penalty)
        run = GreedyRun(candidates, budget, allowed=effect.allowed | chosen)
        for part in (chosen, ~chosen):
            run.maximize(objective, among=part)
            run.fallback(last=effect.penalty, among=part)
        return run.result()
