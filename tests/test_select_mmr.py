from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import Candidates, MMRSelector, TopKSelector, parse_selector
from covrag.types import Budget, Passage

COS = 0.99
SIN = float(np.sqrt(1 - COS**2))
# p0 and p1 are near-duplicates; p2 is orthogonal to p0; p3 sits between p0 and p2.
EMBEDDINGS = np.array([[1.0, 0.0], [COS, SIN], [0.0, 1.0], [np.sqrt(0.5), np.sqrt(0.5)]])
RELEVANCE = np.array([1.0, 0.9, 0.5, 0.0])


def pool(
    query: np.ndarray | None = None,
    costs: list[int] | None = None,
    relevance: np.ndarray = RELEVANCE,
) -> Candidates:
    passages = tuple(Passage(id=f"p{i}", text="t") for i in range(len(EMBEDDINGS)))
    return Candidates(
        "q",
        "question",
        passages,
        relevance=relevance,
        costs=np.array(costs or [0, 0, 0, 0]),
        embeddings=EMBEDDINGS,
        query_embedding=query,
    )


def test_golden_lam_half() -> None:
    # Relevance (min-max) is already in [0, 1]. Step 1: 0.5 * rel -> p0 (0.5).
    # Step 2: p1 0.45 - 0.5 * 0.99 = -0.045, p2 0.25 - 0 = 0.25, p3 0 - 0.5 * 0.707 -> p2.
    # Step 3: p1 -0.045 beats p3 -0.354; p3 last, now penalised by its cosine to p1.
    selection = MMRSelector(lam=0.5).select(pool(), Budget())
    assert selection.passage_ids == ("p0", "p2", "p1", "p3")
    expected = [0.5, 0.25, 0.45 - 0.5 * COS, -0.5 * np.sqrt(0.5) * (COS + SIN)]
    assert [s.score for s in selection.steps] == pytest.approx(expected)


def test_lam_zero_is_pure_novelty() -> None:
    # First pick: all scores 0, tie -> most relevant p0; then p2 (sim 0), p3 (0.707), p1 (0.99).
    selection = MMRSelector(lam=0.0).select(pool(), Budget())
    assert selection.passage_ids == ("p0", "p2", "p3", "p1")


def test_lam_one_equals_topk() -> None:
    relevance = np.array([0.2, 0.9, 0.9, 0.1])  # a tie: pool order, as in topk
    for budget in (Budget(), Budget(max_passages=2), Budget(max_tokens=25)):
        candidates = pool(costs=[10, 20, 5, 10], relevance=relevance)
        mmr = MMRSelector(lam=1.0).select(candidates, budget)
        assert mmr.passage_ids == TopKSelector().select(candidates, budget).passage_ids


def test_query_embedding_gives_relevance() -> None:
    # Cosine to the query (0, 1): p2 1, p3 0.707, p1 0.141, p0 0.
    selection = MMRSelector(lam=1.0).select(pool(query=np.array([0.0, 1.0])), Budget())
    assert selection.passage_ids == ("p2", "p3", "p1", "p0")


def test_token_budget_skips_without_truncating() -> None:
    selection = MMRSelector(lam=0.5).select(pool(costs=[10, 10, 50, 10]), Budget(max_tokens=30))
    # p2 (50 tokens) never fits: p0, then p1 (-0.045) beats p3 (-0.354), then p3.
    assert selection.passage_ids == ("p0", "p1", "p3")
    assert selection.tokens_used == 30


def test_validation_and_spec() -> None:
    assert repr(MMRSelector()) == "mmr"
    assert repr(MMRSelector(lam=0.7)) == "mmr(lam=0.7)"
    assert parse_selector("mmr(lam=0.7)") == MMRSelector(lam=0.7)
    with pytest.raises(ConfigError):
        MMRSelector(lam=1.5)
    with pytest.raises(ConfigError, match="embeddings"):
        MMRSelector().select(Candidates("q", "q", (Passage(id="p", text="t"),)), Budget())
