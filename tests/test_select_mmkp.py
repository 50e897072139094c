from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import Candidates, MMKPSelector, parse_selector
from covrag.types import Budget, Passage

# Group A (p0-p2) near e1, group B (p3, p4) near e2.
EMBEDDINGS = np.array([[1.0, 0.0], [0.999, 0.01], [0.998, -0.01], [0.0, 1.0], [0.01, 0.999]])
RELEVANCE = np.array([0.5, 0.9, 0.8, 0.7, 0.6])


def pool(costs: list[int] | None = None) -> Candidates:
    passages = tuple(Passage(id=f"p{i}", text="t") for i in range(len(EMBEDDINGS)))
    return Candidates(
        "q",
        "question",
        passages,
        relevance=RELEVANCE,
        costs=np.array(costs or [0] * len(passages)),
        embeddings=EMBEDDINGS,
    )


def test_cap_one_then_fill_by_relevance() -> None:
    # By relevance: p1 (A), p2 (A, capped), p3 (B), p4 (B, capped), p0 (A, capped); fill: p2.
    selection = MMKPSelector(n_clusters=2).select(pool(), Budget(max_passages=3))
    assert selection.passage_ids == ("p1", "p3", "p2")
    assert [s.score for s in selection.steps] == [0.9, 0.7, 0.8]


def test_without_fill_stops_at_the_cap() -> None:
    selection = MMKPSelector(n_clusters=2, fill=False).select(pool(), Budget(max_passages=3))
    assert selection.passage_ids == ("p1", "p3")


def test_cap_two() -> None:
    selection = MMKPSelector(n_clusters=2, cap=2, fill=False).select(pool(), Budget())
    assert selection.passage_ids == ("p1", "p2", "p3", "p4")


def test_cost_aware_golden() -> None:
    # Normalised relevance p0 0, p1 1, p2 0.75, p3 0.5, p4 0.25; per token (costs below):
    # p4 0.25, p2 0.075, p3 0.05, p1 0.01, p0 0 -> p4 (B), p2 (A); B and A then capped.
    # Fill by relevance within 200 tokens: p1 (100), p3 (10), p0 (1).
    candidates = pool([1, 100, 10, 10, 1])
    selector = MMKPSelector(n_clusters=2, cost_aware=True)
    selection = selector.select(candidates, Budget(max_tokens=200))
    assert selection.passage_ids == ("p4", "p2", "p1", "p3", "p0")
    assert [s.score for s in selection.steps[:2]] == pytest.approx([0.25, 0.075])


def test_token_budget_skips_misfits() -> None:
    selection = MMKPSelector(n_clusters=2).select(pool([5, 30, 10, 10, 10]), Budget(max_tokens=25))
    # p1 (30) never fits: p2 (A), p3 (B); fill: p0 (5) fits exactly, p4 not.
    assert selection.passage_ids == ("p2", "p3", "p0")


def test_validation_and_spec() -> None:
    selector = parse_selector("mmkp(cap=2, fill=False)")
    assert selector == MMKPSelector(cap=2, fill=False)
    assert parse_selector(repr(selector)) == selector
    with pytest.raises(ConfigError):
        MMKPSelector(cap=0)
