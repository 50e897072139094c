"""Top-k, top-k that completes the cover of the aspects (``topk(cover=True)``), and top-k that
represents the pool where relevance is flat (``topk(flat=...)``)."""

from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.pipeline.inputs import with_inputs
from covrag.pipeline.policy import LABEL_FREE_SELECTOR
from covrag.selectors import Candidates, parse_selector
from covrag.selectors.base import COVERAGE
from covrag.selectors.topk import FLAT_RANK, REPRESENT, TopKSelector, is_flat
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


def test_flatness_is_the_tenth_passages_relevance_relative_to_the_first() -> None:
    steep = np.linspace(1.0, 0.5, 12)  # the tenth at 0.59: 41% below the first
    assert not is_flat(steep, 0.08)
    assert is_flat(steep, 0.5)
    level = np.array([1.0] * 5 + [0.95] * 7)  # 5% below
    assert is_flat(level, 0.08) and not is_flat(level, 0.04)
    # fewer than FLAT_RANK passages, or nothing relevant, is never flat
    assert not is_flat(level[: FLAT_RANK - 1], 0.08)
    assert not is_flat(np.zeros(12), 0.08)
    assert is_flat(level[::-1], 0.08)  # pool order does not matter
    # a deeper rank: the whole pool near the first, or only its top
    deep = np.array([1.0] * 10 + [0.7] * 40)  # the top ten level, the 50th 30% below
    assert is_flat(deep, 0.08) and not is_flat(deep, 0.08, rank=50)
    assert is_flat(deep, 0.4, rank=50) and not is_flat(deep[:49], 0.4, rank=50)


def test_topk_reads_the_rank_it_is_given() -> None:
    # ten passages level, then a drop: flat by the tenth, not by the twelfth
    relevance = [1.0] * 10 + [0.5, 0.5]
    candidates = point_pool(relevance, POINTS)
    budget = Budget(max_passages=5)
    by_tenth = parse_selector("topk(flat=0.08)").select(candidates, budget)
    assert "relevance flat" in by_tenth.selector
    by_twelfth = parse_selector("topk(flat=0.08, rank=12)").select(candidates, budget)
    assert by_twelfth.selector == "topk(flat=0.08, rank=12)"
    assert by_twelfth.passage_ids == ("p0", "p1", "p2", "p3", "p4")
    for bad in ("1", "0", "-3"):
        with pytest.raises(ConfigError, match="rank must be a whole number >= 2"):
            parse_selector(f"topk(flat=0.4, rank={bad})")


def point_pool(relevance: list[float], points: list[int]) -> Candidates:
    """Passages p0.. whose same-point vectors are the unit vector of their point."""
    ids = tuple(f"p{i}" for i in range(len(points)))
    vectors = np.eye(max(points) + 1)[points]
    return Candidates(
        "q",
        "question",
        tuple(Passage(id=i, text=i) for i in ids),
        relevance=np.array(relevance),
        costs=np.array([10] * len(ids)),
        same_point={None: vectors},
    )


# twelve passages about equally near the question; the five nearest make one point
POINTS = [0, 0, 0, 0, 0, 1, 2, 3, 1, 2, 3, 4]
LEVEL = [1.0 - 0.004 * i for i in range(12)]


def test_flat_relevance_chooses_like_the_label_free_default() -> None:
    candidates = point_pool(LEVEL, POINTS)
    budget = Budget(max_passages=5)
    top = parse_selector("topk").select(candidates, budget)
    assert len({POINTS[int(p[1:])] for p in top.passage_ids}) == 1  # five times one point
    chosen = parse_selector("topk(flat=0.08)").select(candidates, budget)
    label_free = parse_selector(LABEL_FREE_SELECTOR).select(candidates, budget)
    assert chosen.passage_ids == label_free.passage_ids
    assert len({POINTS[int(p[1:])] for p in chosen.passage_ids}) == 5  # five points
    # the selection says which rule chose it
    assert chosen.selector == f"topk(flat=0.08), relevance flat: {LABEL_FREE_SELECTOR}"
    assert repr(REPRESENT) == LABEL_FREE_SELECTOR


def test_steep_relevance_stays_topk_and_embeds_nothing() -> None:
    steep = [1.0 - 0.05 * i for i in range(12)]
    candidates = point_pool(steep, POINTS)
    budget = Budget(max_passages=5)
    chosen = parse_selector("topk(flat=0.08)").select(candidates, budget)
    assert chosen.passage_ids == parse_selector("topk").select(candidates, budget).passage_ids
    assert chosen.selector == "topk(flat=0.08)"
    # the estimate step computes the same-point vectors only for a flat pool
    selector = parse_selector("topk(flat=0.08)")
    bare = Candidates("q", "question", candidates.passages, relevance=np.array(steep))
    assert with_inputs(bare, [selector]).same_point == {}


def test_a_flat_pool_gets_its_same_point_vectors_from_the_shipped_model() -> None:
    texts = ["School uniforms limit how pupils express themselves."] * 5 + [
        "Uniforms cost poor families money they do not have.",
        "Uniforms reduce bullying over clothes.",
        "Uniforms make a school look orderly.",
        "Pupils learn to dress for work.",
        "Uniforms save time in the morning.",
        "A uniform marks pupils as members of one school.",
        "Teachers spend less time on dress-code disputes.",
    ]
    passages = tuple(Passage(id=f"p{i}", text=t) for i, t in enumerate(texts))
    bare = Candidates("q", "Should schools require uniforms?", passages, relevance=np.array(LEVEL))
    ready = with_inputs(bare, [parse_selector("topk(flat=0.08)")])
    assert ready.same_point[None].shape[0] == len(texts)
    chosen = parse_selector("topk(flat=0.08)").select(ready, Budget(max_passages=5)).passage_ids
    assert sum(p in {"p0", "p1", "p2", "p3", "p4"} for p in chosen) == 1  # the repeat once


def test_flat_must_lie_between_0_and_1() -> None:
    for bad in ("0", "1", "-0.1", "1e999"):
        with pytest.raises(ConfigError, match="flat must be a number between 0 and 1"):
            parse_selector(f"topk(flat={bad})")
    with pytest.raises(ConfigError, match="flat must be a number between 0 and 1"):
        TopKSelector(flat=float("nan"))
