from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covrag.errors import ConfigError
from covrag.selectors import (
    Candidates,
    ExactSelector,
    GreedyCoverageSelector,
    NotProvenOptimalError,
    optimum_coverage,
    parse_selector,
    solve_exact,
)
from covrag.selectors.exact import reduce_pool
from covrag.types import Budget, CoverageMatrix, Passage

# The greedy trap: p0 covers the most (a-d), but p1 + p2 cover all six aspects.
ROWS = {"p0": "abcd", "p1": "abe", "p2": "cdf", "p3": ""}
RELEVANCE = [0.9, 0.8, 0.7, 0.95]


def pool(
    rows: dict[str, str] = ROWS,
    relevance: list[float] = RELEVANCE,
    aspects: str = "abcdef",
    costs: list[int] | None = None,
    weights: list[float] | None = None,
    excluded: str = "",
) -> Candidates:
    ids = tuple(rows)
    probs = np.array([[float(a in rows[p]) for a in aspects] for p in ids])
    return Candidates(
        "q",
        "question",
        tuple(Passage(id=p, text=p) for p in ids),
        relevance=np.array(relevance),
        costs=np.array(costs if costs is not None else [0] * len(ids)),
        coverage=CoverageMatrix(ids, tuple(aspects), probs),
        aspect_weights=None if weights is None else np.array(weights),
        excluded=np.array([a in excluded for a in aspects]) if excluded else None,
    )


def test_exact_beats_greedy_on_the_trap() -> None:
    budget = Budget(max_passages=2)
    assert GreedyCoverageSelector().select(pool(), budget).passage_ids == ("p0", "p1")
    selection = ExactSelector().select(pool(), budget)
    # Ordered by marginal gain: p1 and p2 both add 3 -> p1 (more relevant) first.
    assert selection.passage_ids == ("p1", "p2")
    assert [s.score for s in selection.steps] == [3.0, 3.0]
    assert len(selection.covered) == 6


def test_full_ranking_fills_with_the_des_rule() -> None:
    selection = ExactSelector().select(pool(), Budget())
    assert selection.passage_ids == ("p1", "p2", "p3", "p0")


def test_optimum_coverage() -> None:
    assert optimum_coverage(pool(), Budget(max_passages=1)) == 4.0
    assert optimum_coverage(pool(), Budget(max_passages=2)) == 6.0
    assert optimum_coverage(pool(weights=[1, 1, 1, 1, 5, 0]), Budget(max_passages=1)) == 7.0


def test_token_budget() -> None:
    candidates = pool(costs=[50, 60, 60, 10])
    selection = ExactSelector().select(candidates, Budget(max_tokens=100))
    assert selection.passage_ids == ("p0", "p3")  # p1 + p2 (120 tokens) do not fit
    assert optimum_coverage(candidates, Budget(max_tokens=120)) == 6.0
    assert optimum_coverage(candidates, Budget(max_tokens=49)) == 0.0


def test_prefers_fewer_tokens_then_relevance_among_optimal_sets() -> None:
    rows = {"long": "ab", "short": "ab", "a": "a", "b": "b", "b2": "b"}
    candidates = pool(rows, [0.9, 0.1, 0.5, 0.3, 0.4], "ab", costs=[30, 20, 5, 10, 10])
    solution = solve_exact(candidates, Budget(max_passages=2))
    # Optimal sets: {long}, {short}, {a, b}, {a, b2}: 15 tokens is the fewest; b2 is more
    # relevant than b at the same cost.
    assert solution.proven_optimal and solution.value == 2.0
    assert [candidates.passages[i].id for i in solution.chosen] == ["a", "b2"]


def test_reduce_pool_keeps_one_of_each_dominated_group() -> None:
    covered = np.array([[1, 0], [1, 0], [1, 0], [1, 1], [0, 0], [0, 1]], dtype=bool)
    costs = np.array([20, 10, 10, 10, 1, 10])
    relevance = np.array([0.9, 0.5, 0.7, 0.1, 1.0, 0.2])
    kept = reduce_pool(covered, costs, np.zeros(6), relevance, np.ones(6, dtype=bool))
    # p4 covers nothing. Of the duplicates p0-p2 the cheapest, then most relevant, p2 stays.
    # p3 covers a superset of p2 and p5 at the same cost, but it is less relevant than both,
    # so it does not dominate them (dropping them could change the relevance preference).
    assert kept.tolist() == [2, 3, 5]
    identical = reduce_pool(
        covered[:2], np.array([5, 5]), np.zeros(2), np.array([0.3, 0.3]), np.ones(2, dtype=bool)
    )
    assert identical.tolist() == [0]


def test_exclusion_forbid_and_penalize() -> None:
    rows = {"p0": "abx", "p1": "a", "p2": "b"}
    candidates = pool(rows, [0.9, 0.8, 0.7], "abx", excluded="x")
    budget = Budget(max_passages=1)
    assert ExactSelector().select(candidates, budget).passage_ids == ("p0",)
    forbid = ExactSelector(exclude="forbid").select(candidates, Budget())
    assert forbid.passage_ids == ("p1", "p2")
    small = solve_exact(candidates, budget, exclude="penalize", penalty=0.5)
    assert small.chosen == (0,) and small.value == 1.5
    large = ExactSelector(exclude="penalize", penalty=1.5).select(candidates, budget)
    assert large.passage_ids == ("p1",)


def test_unproven_optimum_is_never_silent() -> None:
    rng = np.random.default_rng(1)
    n, m = 300, 120
    ids = tuple(f"p{i}" for i in range(n))
    probs = (rng.random((n, m)) < 0.08).astype(float)
    candidates = Candidates(
        "hard",
        "q",
        tuple(Passage(id=i, text="t") for i in ids),
        coverage=CoverageMatrix(ids, tuple(f"a{j}" for j in range(m)), probs),
    )
    budget = Budget(max_passages=12)
    with pytest.raises(NotProvenOptimalError, match="not proven"):
        ExactSelector(time_limit=0.01).select(candidates, budget)
    with pytest.raises(NotProvenOptimalError):
        optimum_coverage(candidates, budget, time_limit=0.01)
    selection = ExactSelector(time_limit=0.01, strict=False).select(candidates, budget)
    assert len(selection) == 12
    assert solve_exact(candidates, budget, time_limit=0.01).proven_optimal is False


def test_validation_and_spec() -> None:
    selector = parse_selector("exact(time_limit=5.0)")
    assert selector == ExactSelector(time_limit=5.0)
    assert parse_selector(repr(selector)) == selector
    with pytest.raises(ConfigError):
        ExactSelector(time_limit=0)
    with pytest.raises(ConfigError):
        ExactSelector(exclude="skip")


@settings(max_examples=50, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n=st.integers(1, 8),
    m=st.integers(1, 5),
    k=st.none() | st.integers(1, 4),
    tokens=st.none() | st.integers(1, 60),
    exclude=st.sampled_from(["ignore", "penalize", "forbid"]),
)
def test_matches_brute_force(
    seed: int, n: int, m: int, k: int | None, tokens: int | None, exclude: str
) -> None:
    rng = np.random.default_rng(seed)
    ids = tuple(f"p{i}" for i in range(n))
    covered = rng.random((n, m)) < 0.4
    candidates = Candidates(
        "q",
        "q",
        tuple(Passage(id=i, text="t") for i in ids),
        relevance=rng.choice([0.1, 0.5, 0.9], size=n),
        costs=rng.integers(0, 25, size=n),
        coverage=CoverageMatrix(ids, tuple(f"a{j}" for j in range(m)), covered.astype(float)),
        aspect_weights=rng.choice([0.5, 1.0, 2.0], size=m),
        excluded=rng.random(m) < 0.3,
    )
    weights = candidates.weights().copy()
    flags = np.asarray(candidates.excluded)
    if exclude != "ignore":
        weights[flags] = 0.0
    best = 0.0
    for subset in itertools.product([False, True], repeat=n):
        chosen = np.array(subset)
        if k is not None and chosen.sum() > k:
            continue
        if tokens is not None and candidates.costs[chosen].sum() > tokens:
            continue
        if exclude == "forbid" and covered[chosen][:, flags].any():
            continue
        value = weights[covered[chosen].any(axis=0)].sum()
        if exclude == "penalize":
            value -= covered[chosen][:, flags].sum()
        best = max(best, float(value))
    budget = Budget(max_passages=k, max_tokens=tokens)
    solution = solve_exact(candidates, budget, exclude=exclude)
    assert solution.proven_optimal
    assert solution.value == pytest.approx(best)
