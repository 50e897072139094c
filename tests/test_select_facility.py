from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import Candidates, FacilityLocationSelector, parse_selector
from covrag.selectors.base import BudgetTracker
from covrag.selectors.facility import FacilityLocation, contrasted, embedding_similarity
from covrag.selectors.optimize import lazy_greedy, naive_greedy
from covrag.types import Budget, CoverageMatrix, Passage

E1, E2, E3 = np.eye(3)
# Three copies of e1 (p0-p2), two of e2 (p3, p5), one e3 (p4).
EMBEDDINGS = np.array([E1, E1, E1, E2, E3, E2])
RELEVANCE = np.array([0.5, 0.6, 0.4, 0.9, 0.8, 0.1])


def pool(costs: list[int] | None = None, coverage: CoverageMatrix | None = None) -> Candidates:
    passages = tuple(Passage(id=f"p{i}", text="t") for i in range(len(EMBEDDINGS)))
    return Candidates(
        "q",
        "question",
        passages,
        relevance=RELEVANCE,
        costs=np.array(costs or [0] * len(passages)),
        embeddings=EMBEDDINGS,
        coverage=coverage,
    )


@pytest.mark.parametrize("optimizer", ["lazy", "naive"])
def test_golden_ranking(optimizer: str) -> None:
    # Gains: each e1 copy represents 3 passages -> tie, p1 most relevant; then an e2 copy (2)
    # -> p3 more relevant than p5; then p4 (1). Saturated: the rest by relevance.
    selection = FacilityLocationSelector(optimizer=optimizer).select(pool(), Budget())
    assert selection.passage_ids == ("p1", "p3", "p4", "p0", "p2", "p5")
    assert [s.score for s in selection.steps] == pytest.approx([3, 2, 1, 0.5, 0.4, 0.1])


@pytest.mark.parametrize("optimizer", ["lazy", "naive"])
def test_cost_aware_golden(optimizer: str) -> None:
    # Gain per token: p4 1/1; then p0 and p2 tie at 3/10 -> p0 (more relevant); then p5 2/50
    # beats p3 2/100. Fill by relevance: p3 fits (161 tokens), p1 (191), p2 (201) does not.
    candidates = pool(costs=[10, 30, 10, 100, 1, 50])
    selector = FacilityLocationSelector(cost_aware=True, optimizer=optimizer)
    selection = selector.select(candidates, Budget(max_tokens=200))
    assert selection.passage_ids == ("p4", "p0", "p5", "p3", "p1")
    assert selection.tokens_used == 191


def test_passage_budget() -> None:
    selection = FacilityLocationSelector().select(pool(), Budget(max_passages=2))
    assert selection.passage_ids == ("p1", "p3")


def test_coverage_similarity() -> None:
    ids = tuple(f"p{i}" for i in range(6))
    rows = [[1, 0], [1, 0], [0, 1], [0, 0], [1, 1], [0, 0]]
    coverage = CoverageMatrix(ids, ("a", "b"), np.array(rows, dtype=float))
    # Jaccard: p0 = p1 (1), p4 (a, b) overlaps each single-aspect row by 1/2. Gains: p0 and p1
    # 1 + 1 + 0.5 = 2.5, p4 0.5 * 3 + 1 = 2.5, p2 1.5: a three-way tie -> p4 (relevance 0.8).
    # Then p0 and p1 gain 0.5 + 0.5 = 1 -> p1 (0.6); then p2 lifts itself 0.5 -> 1.
    # Saturated (p0 duplicates p1, p3 and p5 cover nothing): the rest by relevance.
    selector = FacilityLocationSelector(similarity="coverage")
    selection = selector.select(pool(coverage=coverage), Budget())
    assert selection.passage_ids == ("p4", "p1", "p2", "p3", "p0", "p5")
    assert [s.score for s in selection.steps] == pytest.approx([2.5, 1.0, 0.5, 0.9, 0.5, 0.1])


def test_optimizers_agree_on_random_pools() -> None:
    rng = np.random.default_rng(7)
    for _ in range(20):
        n = int(rng.integers(2, 40))
        vectors = rng.normal(size=(n, 5))
        costs = rng.integers(0, 20, size=n)
        rank = rng.permutation(n).astype(np.int64)
        budget = Budget(max_passages=int(rng.integers(1, 10)), max_tokens=int(rng.integers(1, 80)))
        results = []
        for optimize in (lazy_greedy, naive_greedy):
            objective = FacilityLocation(embedding_similarity(vectors))
            tracker = BudgetTracker(budget, costs)
            available = np.ones(n, dtype=bool)
            results.append(optimize(objective, tracker, available, rank, costs + 1.0))
        assert results[0][0] == results[1][0]
        assert results[0][1] == pytest.approx(results[1][1])


def test_validation_and_limits() -> None:
    assert parse_selector("facility-location(similarity=coverage)") == FacilityLocationSelector(
        similarity="coverage"
    )
    with pytest.raises(ConfigError):
        FacilityLocationSelector(similarity="bm25")
    with pytest.raises(ConfigError):
        FacilityLocationSelector(optimizer="stochastic")


def test_contrast_measures_similarity_from_the_pools_typical_pair() -> None:
    # Four passages: two near each other (0.9), the rest at the pool's usual 0.5.
    sim = np.full((4, 4), 0.5, dtype=np.float32)
    np.fill_diagonal(sim, 1.0)
    sim[0, 1] = sim[1, 0] = 0.9
    result = contrasted(sim, 1.0)
    assert result.dtype == np.float32 and np.allclose(result, result.T)
    off = sim[~np.eye(4, dtype=bool)]
    z = (0.9 - off.mean()) / off.std()
    assert result[0, 1] == pytest.approx(z - 1.0, rel=1e-5)
    assert result[0, 2] == 0.0 and result[2, 3] == 0.0  # typical pairs represent nothing
    assert np.all(np.diag(result) >= result.max(axis=1))  # a passage represents itself most
    # a pool whose pairs are all alike, or too small to have a spread, keeps its similarities
    flat = np.full((3, 3), 0.5, dtype=np.float32)
    assert np.array_equal(contrasted(flat, 1.0), flat)
    assert np.array_equal(contrasted(sim[:2, :2], 1.0), sim[:2, :2])


def test_contrast_changes_which_passage_represents_a_crowd() -> None:
    # p0..p3 share a loose theme (cosine 0.6 with each other); p4 and p5 are a tight pair
    # (0.95); everything else 0.3. Plain facility location takes the loose crowd first (it
    # represents 4 x 0.6); measured from the pool's typical pair, the tight pair counts for more.
    n = 6
    sim = np.full((n, n), 0.3)
    sim[:4, :4] = 0.6
    sim[4, 5] = sim[5, 4] = 0.95
    np.fill_diagonal(sim, 1.0)
    vectors = np.linalg.cholesky(sim)  # rows whose Gram matrix is ``sim``
    passages = tuple(Passage(id=f"p{i}", text="t") for i in range(n))
    candidates = Candidates("q", "question", passages, relevance=np.zeros(n), embeddings=vectors)
    plain = FacilityLocationSelector().select(candidates, Budget(max_passages=1))
    sharp = FacilityLocationSelector(contrast=1.0).select(candidates, Budget(max_passages=1))
    assert plain.passage_ids[0] in {"p0", "p1", "p2", "p3"}
    assert sharp.passage_ids[0] in {"p4", "p5"}


def test_contrast_validation() -> None:
    selector = parse_selector("facility-location(similarity='same-point', contrast=1.5)")
    assert selector == FacilityLocationSelector(similarity="same-point", contrast=1.5)
    assert "contrast=1.5" in repr(selector)
    with pytest.raises(ConfigError, match="contrast applies to cosine"):
        FacilityLocationSelector(similarity="coverage", contrast=1.0)
    with pytest.raises(ConfigError, match="contrast must be finite"):
        FacilityLocationSelector(contrast=float("nan"))


# -- focus: the passages to represent weighed by relevance -----------------------------------


def crowd_and_answer() -> Candidates:
    """Four near copies of an off-question point (p0-p3) and two passages near the question
    that make one other point (p4, p5)."""
    a, b = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    embeddings = np.array([a, a, a, a, b, b])
    passages = tuple(Passage(id=f"p{i}", text="t") for i in range(6))
    relevance = np.array([0.2, 0.25, 0.2, 0.2, 1.4, 1.2])
    return Candidates("q", "question", passages, relevance=relevance, embeddings=embeddings)


@pytest.mark.parametrize("optimizer", ["lazy", "naive"])
def test_focus_represents_the_passages_near_the_question(optimizer: str) -> None:
    candidates = crowd_and_answer()
    budget = Budget(max_passages=2)
    plain = FacilityLocationSelector(optimizer=optimizer).select(candidates, budget)
    focused = FacilityLocationSelector(focus=0.3, optimizer=optimizer).select(candidates, budget)
    assert plain.passage_ids[0] == "p1"  # the crowd's most relevant copy represents 4
    assert focused.passage_ids[0] == "p4"  # the crowd weighs exp(-1.15 / 0.3) each


def test_focus_spans_top_k_and_the_whole_pool() -> None:
    candidates = crowd_and_answer()
    budget = Budget(max_passages=4)
    by_relevance = tuple(candidates.passages[i].id for i in np.argsort(-candidates.relevance))
    sharp = FacilityLocationSelector(focus=1e-3).select(candidates, budget)
    assert sharp.passage_ids == by_relevance[:4]
    flat = FacilityLocationSelector(focus=1e6).select(candidates, budget)
    assert flat.passage_ids == FacilityLocationSelector().select(candidates, budget).passage_ids


def test_focus_validation_and_spec() -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="focus"):
            FacilityLocationSelector(focus=bad)
    assert parse_selector("facility-location(focus=0.1)") == FacilityLocationSelector(focus=0.1)
