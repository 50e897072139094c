from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import Candidates, GreedyCoverageSelector, parse_selector
from covrag.types import Budget, CoverageMatrix, Passage

# Hand-made pool: aspects a, b, c, d.
ROWS = {
    "p0": "a",
    "p1": "ab",
    "p2": "c",
    "p3": "bcd",
    "p4": "",
    "p5": "d",
}
RELEVANCE = [0.9, 0.8, 0.7, 0.6, 0.95, 0.5]


def pool(
    rows: dict[str, str] = ROWS,
    relevance: list[float] = RELEVANCE,
    aspects: str = "abcd",
    costs: list[int] | None = None,
    weights: list[float] | None = None,
    excluded: str = "",
) -> Candidates:
    ids = tuple(rows)
    probs = np.array([[float(a in rows[p]) for a in aspects] for p in ids])
    passages = tuple(Passage(id=p, text=p) for p in ids)
    return Candidates(
        "q",
        "question",
        passages,
        relevance=np.array(relevance),
        costs=np.array(costs if costs is not None else [0] * len(ids)),
        coverage=CoverageMatrix(ids, tuple(aspects), probs),
        aspect_weights=None if weights is None else np.array(weights),
        excluded=np.array([a in excluded for a in aspects]) if excluded else None,
    )


def test_golden_full_ranking_with_relevance_fallback() -> None:
    # p3 covers b,c,d (gain 3); then p0 and p1 both add a: tie -> p0 (more relevant);
    # nothing new is left, so the rest follows relevance order: p4, p1, p2, p5.
    selection = GreedyCoverageSelector().select(pool(), Budget())
    assert selection.passage_ids == ("p3", "p0", "p4", "p1", "p2", "p5")
    assert [s.score for s in selection.steps] == [3.0, 1.0, 0.95, 0.8, 0.7, 0.5]
    assert selection.steps[0].newly_covered == ("b", "c", "d")
    assert selection.steps[1].newly_covered == ("a",)
    assert set(selection.covered) == set("abcd")


def test_passage_budget_cuts_the_ranking() -> None:
    selection = GreedyCoverageSelector().select(pool(), Budget(max_passages=3))
    assert selection.passage_ids == ("p3", "p0", "p4")


def test_ties_in_gain_and_relevance_go_to_pool_order() -> None:
    candidates = pool({"x": "a", "y": "a", "z": "b"}, [0.5, 0.5, 0.1], aspects="ab")
    assert GreedyCoverageSelector().select(candidates, Budget()).passage_ids == ("x", "z", "y")
    candidates = pool({"x": "a", "y": "a", "z": "b"}, [0.4, 0.5, 0.1], aspects="ab")
    assert GreedyCoverageSelector().select(candidates, Budget()).passage_ids == ("y", "z", "x")


def test_weights_change_the_first_pick() -> None:
    # a weighs 5: p1 (a, b) gains 6 > p3's 3; then p3 adds c, d.
    selection = GreedyCoverageSelector().select(pool(weights=[5, 1, 1, 1]), Budget())
    assert selection.passage_ids == ("p1", "p3", "p4", "p0", "p2", "p5")
    assert [s.score for s in selection.steps[:2]] == [6.0, 2.0]


def test_cost_aware_covers_more_under_a_token_budget() -> None:
    rows = {"big": "abc", "ab": "ab", "c": "c", "d": "d"}
    candidates = pool(rows, [0.9, 0.8, 0.7, 0.6], costs=[100, 30, 30, 30])
    budget = Budget(max_tokens=100)
    plain = GreedyCoverageSelector().select(candidates, budget)
    assert plain.passage_ids == ("big",)
    aware = GreedyCoverageSelector(cost_aware=True).select(candidates, budget)
    # ratios: ab 2/30, then c and d tie at 1/30 -> c (more relevant), then d.
    assert aware.passage_ids == ("ab", "c", "d")
    assert aware.steps[0].score == pytest.approx(2 / 30)
    assert len(aware.covered) == 4 and aware.tokens_used == 90


def test_cost_aware_zero_cost_counts_as_one() -> None:
    candidates = pool({"free": "a", "paid": "ab"}, [0.1, 0.9], aspects="ab", costs=[0, 4])
    selection = GreedyCoverageSelector(cost_aware=True).select(candidates, Budget())
    assert selection.passage_ids == ("free", "paid")
    assert [s.score for s in selection.steps] == [1.0, 0.25]


def test_token_budget_skips_passages_that_do_not_fit() -> None:
    candidates = pool(costs=[10, 40, 10, 100, 10, 0])
    selection = GreedyCoverageSelector().select(candidates, Budget(max_tokens=60))
    # p3 (100) never fits; p1 (a, b) gains 2; then c and d tie -> p2 (0.7) before p5 (0.5).
    assert selection.passage_ids == ("p1", "p2", "p5", "p4")
    assert selection.tokens_used == 60


EXCLUSION_ROWS = {"p0": "ax", "p1": "a", "p2": "b", "p3": "x"}
EXCLUSION_RELEVANCE = [0.9, 0.8, 0.7, 0.95]


def exclusion_pool() -> Candidates:
    return pool(EXCLUSION_ROWS, EXCLUSION_RELEVANCE, aspects="abx", excluded="x")


def test_exclusion_ignore_counts_excluded_aspects() -> None:
    selection = GreedyCoverageSelector().select(exclusion_pool(), Budget())
    assert selection.passage_ids == ("p0", "p2", "p3", "p1")


def test_exclusion_forbid_never_picks_an_excluded_aspect() -> None:
    selection = GreedyCoverageSelector(exclude="forbid").select(exclusion_pool(), Budget())
    assert selection.passage_ids == ("p1", "p2")
    assert "x" not in selection.covered


def test_exclusion_penalize_puts_penalised_passages_last() -> None:
    selector = GreedyCoverageSelector(exclude="penalize")
    # x is worth nothing; p0 gains 1 - 1 = 0, so p1 and p2 come first, then the penalised ones
    # in relevance order.
    assert selector.select(exclusion_pool(), Budget()).passage_ids == ("p1", "p2", "p3", "p0")


def test_exclusion_penalty_size_decides() -> None:
    candidates = pool({"p0": "abx", "p1": "a", "p2": "b"}, [0.9, 0.8, 0.7], "abx", excluded="x")
    budget = Budget(max_passages=1)
    small = GreedyCoverageSelector(exclude="penalize", penalty=0.5).select(candidates, budget)
    assert small.passage_ids == ("p0",) and small.steps[0].score == 1.5
    large = GreedyCoverageSelector(exclude="penalize", penalty=1.5).select(candidates, budget)
    assert large.passage_ids == ("p1",)


def test_spec_round_trip_and_validation() -> None:
    selector = parse_selector("greedy-coverage(cost_aware=True, exclude=forbid)")
    assert selector == GreedyCoverageSelector(cost_aware=True, exclude="forbid")
    assert parse_selector(repr(selector)) == selector
    with pytest.raises(ConfigError):
        parse_selector("greedy-coverage(exclude='drop')")
    with pytest.raises(ConfigError):
        GreedyCoverageSelector(penalty=-1.0)
    with pytest.raises(TypeError):
        GreedyCoverageSelector(True)  # type: ignore[misc]


def test_needs_a_coverage_matrix() -> None:
    candidates = Candidates("q", "question", (Passage(id="p", text="t"),))
    with pytest.raises(ConfigError, match="coverage matrix"):
        GreedyCoverageSelector().select(candidates, Budget())
