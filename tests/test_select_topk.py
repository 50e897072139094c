"""Top-k, and top-k that completes the cover of the aspects (``topk(cover=True)``)."""

from __future__ import annotations

import numpy as np

from covrag.selectors import Candidates, parse_selector
from covrag.selectors.base import COVERAGE
from covrag.types import Budget, CoverageMatrix, Passage


def pool(
    probs: list[list[float]],
    relevance: list[float],
    tokens: list[int] | None = None,
    excluded: list[bool] | None = None,
) -> Candidates:
    matrix = np.array(probs, dtype=float)
    ids = tuple(f"p{i}" for i in range(len(matrix)))
    aspects = tuple(f"a{j}" for j in range(matrix.shape[1]))
    return Candidates(
        "q",
        "question",
        tuple(Passage(id=i, text=i) for i in ids),
        relevance=np.array(relevance),
        costs=np.array(tokens or [10] * len(ids)),
        coverage=CoverageMatrix(ids, aspects, matrix, threshold=0.5),
        excluded=None if excluded is None else np.array(excluded),
    )


def picked(spec: str, candidates: Candidates, budget: Budget) -> list[str]:
    return [s.passage_id for s in parse_selector(spec).select(candidates, budget).steps]


# p0, p1 and p2 are near the question and all make the same point (a0); p3 makes a1.
SIDES = [[0.9, 0.0], [0.8, 0.0], [0.7, 0.0], [0.0, 0.9]]
SIDES_RELEVANCE = [0.9, 0.8, 0.7, 0.2]


def test_cover_swaps_in_what_the_picks_leave_out() -> None:
    candidates = pool(SIDES, SIDES_RELEVANCE)
    assert picked("topk", candidates, Budget(max_passages=3)) == ["p0", "p1", "p2"]
    # the least relevant pick gives way; the picks stay in decreasing relevance
    assert picked("topk(cover=True)", candidates, Budget(max_passages=3)) == ["p0", "p1", "p3"]


def test_the_only_pick_covering_an_aspect_stays() -> None:
    # p1, the least relevant pick, alone covers a1: p0 (a0, which p1 also covers) gives way
    probs = [[0.9, 0.0, 0.0], [0.9, 0.9, 0.0], [0.0, 0.0, 0.9]]
    candidates = pool(probs, [0.9, 0.5, 0.1])
    assert picked("topk(cover=True)", candidates, Budget(max_passages=2)) == ["p1", "p2"]
    # each pick covers an aspect of its own: nothing is swapped, a2 stays uncovered
    probs = [[0.9, 0.0, 0.0], [0.0, 0.9, 0.0], [0.0, 0.0, 0.9]]
    candidates = pool(probs, [0.9, 0.5, 0.1])
    assert picked("topk(cover=True)", candidates, Budget(max_passages=2)) == ["p0", "p1"]


def test_an_excluded_aspect_is_never_sought() -> None:
    candidates = pool(SIDES, SIDES_RELEVANCE, excluded=[False, True])
    assert picked("topk(cover=True)", candidates, Budget(max_passages=3)) == ["p0", "p1", "p2"]


def test_a_swap_that_breaks_the_token_budget_is_not_made() -> None:
    candidates = pool(SIDES, SIDES_RELEVANCE, tokens=[10, 10, 10, 40])
    assert picked("topk(cover=True)", candidates, Budget(max_tokens=30)) == ["p0", "p1", "p2"]
    assert picked("topk(cover=True)", candidates, Budget(max_tokens=60)) == ["p0", "p1", "p3"]


def test_it_reads_coverage_only_when_covering() -> None:
    assert parse_selector("topk(cover=True)").needs(COVERAGE)
    assert not parse_selector("topk").needs(COVERAGE)
    # without a coverage matrix it is plain top-k
    plain = Candidates("q", "question", pool(SIDES, SIDES_RELEVANCE).passages,
                       relevance=np.array(SIDES_RELEVANCE))  # fmt: skip
    assert picked("topk(cover=True)", plain, Budget(max_passages=3)) == ["p0", "p1", "p2"]
