"""Properties every selector must keep, on random pools, coverage, costs and budgets."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from covrag.selectors import (
    Candidates,
    ClusterSelector,
    ExactSelector,
    ExpectedCoverageSelector,
    FacilityLocationSelector,
    GreedyCoverageSelector,
    MMKPSelector,
    MMRSelector,
    RandomSelector,
    Selector,
    TopKSelector,
)
from covrag.types import Budget, CoverageMatrix, Passage, Selection

# Selectors that fill the budget (nothing left out fits afterwards).
FILLING: list[Selector] = [
    TopKSelector(),
    RandomSelector(seed=3),
    GreedyCoverageSelector(),
    GreedyCoverageSelector(cost_aware=True),
    GreedyCoverageSelector(exclude="penalize"),
    ExpectedCoverageSelector(),
    ExpectedCoverageSelector(power=1.0, cost_aware=True, optimizer="lazy"),
    ExpectedCoverageSelector(exclude="penalize"),
    MMRSelector(lam=0.5),
    MMRSelector(lam=0.0),
    FacilityLocationSelector(),
    FacilityLocationSelector(cost_aware=True, optimizer="naive"),
    FacilityLocationSelector(similarity="coverage"),
    ClusterSelector(),
    MMKPSelector(),
    MMKPSelector(cap=2, cost_aware=True),
    ExactSelector(),
]
ALL: list[Selector] = [
    *FILLING,
    MMKPSelector(fill=False),
    GreedyCoverageSelector(exclude="forbid"),
    ExpectedCoverageSelector(exclude="forbid"),
]

budgets = st.builds(
    Budget,
    max_passages=st.none() | st.integers(1, 6),
    max_tokens=st.none() | st.integers(1, 80),
)


@st.composite
def pools(draw: st.DrawFn) -> Candidates:
    n = draw(st.integers(1, 10))
    m = draw(st.integers(0, 5))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    density = draw(st.sampled_from([0.2, 0.4, 0.7]))
    ids = tuple(f"p{i}" for i in range(n))
    embeddings = rng.normal(size=(n, 4))
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    query = None
    if draw(st.booleans()):
        query = embeddings[int(rng.integers(n))]
    return Candidates(
        "q",
        "question",
        tuple(Passage(id=i, text="t") for i in ids),
        relevance=rng.choice([0.1, 0.5, 0.9, 1.3], size=n),  # ties on purpose
        costs=rng.integers(0, 31, size=n),
        coverage=CoverageMatrix(
            ids, tuple(f"a{j}" for j in range(m)), (rng.random((n, m)) < density).astype(float)
        ),
        embeddings=embeddings,
        query_embedding=query,
        aspect_weights=rng.choice([0.0, 0.5, 1.0, 2.0], size=m),
        excluded=rng.random(m) < 0.2,
    )


def weighted_coverage(candidates: Candidates, selection: Selection) -> float:
    covered = set(selection.covered)
    weights = candidates.weights()
    assert candidates.coverage is not None
    return float(
        sum(w for a, w in zip(candidates.coverage.aspect_ids, weights, strict=True) if a in covered)
    )


@settings(max_examples=60, deadline=None)
@given(pools(), budgets)
def test_budgets_hold_and_no_duplicates(candidates: Candidates, budget: Budget) -> None:
    index = {p.id: i for i, p in enumerate(candidates.passages)}
    for selector in ALL:
        selection = selector.select(candidates, budget)
        ids = selection.passage_ids
        assert len(set(ids)) == len(ids), selector
        if budget.max_passages is not None:
            assert len(ids) <= budget.max_passages, selector
        tokens = sum(int(candidates.costs[index[i]]) for i in ids)
        assert tokens == selection.tokens_used
        if budget.max_tokens is not None:
            assert tokens <= budget.max_tokens, selector
        if selector in FILLING:
            # A full ranking within the budget: nothing left out would still fit.
            left = [i for p, i in index.items() if p not in set(ids)]
            room_k = budget.max_passages is None or len(ids) < budget.max_passages
            room_t = [
                budget.max_tokens is None or tokens + candidates.costs[i] <= budget.max_tokens
                for i in left
            ]
            assert not (room_k and any(room_t)), selector
            if budget.unlimited:
                assert len(ids) == len(candidates), selector


@settings(max_examples=60, deadline=None)
@given(pools(), budgets)
def test_exact_covers_at_least_as_much_as_any_selector(
    candidates: Candidates, budget: Budget
) -> None:
    best = weighted_coverage(candidates, ExactSelector().select(candidates, budget))
    for selector in ALL:
        value = weighted_coverage(candidates, selector.select(candidates, budget))
        assert value <= best + 1e-9, selector


@settings(max_examples=40, deadline=None)
@given(pools(), budgets)
def test_mmr_with_lam_one_equals_topk_without_query_embedding(
    candidates: Candidates, budget: Budget
) -> None:
    plain = Candidates(
        candidates.query_id,
        candidates.query,
        candidates.passages,
        relevance=candidates.relevance,
        costs=candidates.costs,
        embeddings=candidates.embeddings,
    )
    mmr = MMRSelector(lam=1.0).select(plain, budget).passage_ids
    assert mmr == TopKSelector().select(plain, budget).passage_ids
