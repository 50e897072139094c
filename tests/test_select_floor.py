"""The coverage floor: selection stops rather than padding the context with passages that
answer nothing (every selector, every budget)."""

from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import (
    SELECTORS,
    above_floor,
    filter_pool,
    parse_selector,
    passage_support,
    select_above_floor,
)
from covrag.selectors.base import Candidates
from covrag.types import Budget, CoverageMatrix, Passage

# Support of each passage for aspects a, b (c is excluded).
PROBS = {
    "p0": [0.9, 0.1, 0.0],
    "p1": [0.2, 0.6, 0.0],
    "p2": [0.05, 0.1, 0.99],  # answers only the excluded aspect
    "p3": [0.01, 0.02, 0.0],
    "p4": [0.3, 0.0, 0.0],
}


def pool(probs: dict[str, list[float]] = PROBS) -> Candidates:
    ids = tuple(probs)
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(len(ids), 4))
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    return Candidates(
        "q",
        "question",
        tuple(Passage(p, f"text of {p}", tokens=5) for p in ids),
        relevance=np.array([0.1, 0.2, 0.9, 0.95, 0.3]),  # off-topic passages rank high
        coverage=CoverageMatrix(ids, ("a", "b", "c"), np.array(list(probs.values())), 0.5),
        embeddings=embeddings,
        query_embedding=embeddings[0],
        excluded=np.array([False, False, True]),
        piece_embeddings=np.repeat(embeddings, 2, axis=0),
        piece_owner=np.repeat(np.arange(len(ids)), 2),
    )


def test_support_ignores_excluded_aspects() -> None:
    assert passage_support(pool()).tolist() == [0.9, 0.6, 0.1, 0.02, 0.3]


def test_floor_keeps_only_passages_that_answer_something() -> None:
    kept = above_floor(pool(), 0.25)
    assert [p.id for p in kept.passages] == ["p0", "p1", "p4"]
    assert kept.coverage is not None and kept.coverage.passage_ids == ("p0", "p1", "p4")
    assert kept.relevance.tolist() == [0.1, 0.2, 0.3]
    assert kept.embeddings is not None and kept.embeddings.shape == (3, 4)
    assert kept.piece_owner is not None and kept.piece_owner.tolist() == [0, 0, 1, 1, 2, 2]
    assert above_floor(pool(), 0.0) is not None and len(above_floor(pool(), 0.0)) == 5
    with pytest.raises(ConfigError, match=r"\[0, 1\]"):
        above_floor(pool(), 1.5)


def test_the_gate_keeps_only_passages_close_enough_to_the_question() -> None:
    similarity = np.array([0.7, 0.2, 0.9, 0.8, 0.6])
    kept = above_floor(pool(), 0.25, gate=0.5, similarity=similarity)
    assert [p.id for p in kept.passages] == ["p0", "p4"]  # p1 answers b but is off the subject
    gated = above_floor(pool(), 0.0, gate=0.65, similarity=similarity)  # the gate alone
    assert [p.id for p in gated.passages] == ["p0", "p2", "p3"]
    assert kept.coverage is not None and kept.coverage.passage_ids == ("p0", "p4")
    with pytest.raises(ValueError, match="one similarity per candidate"):
        above_floor(pool(), 0.25, gate=0.5)
    with pytest.raises(ValueError, match="one similarity per candidate"):
        above_floor(pool(), 0.25, gate=0.5, similarity=similarity[:3])
    with pytest.raises(ConfigError, match=r"\[0, 1\]"):
        above_floor(pool(), 0.25, gate=-0.5, similarity=similarity)


def test_a_relative_gate_keeps_the_passages_near_a_weak_best() -> None:
    weak = np.array([0.40, 0.20, 0.35, 0.45, 0.10])
    # a fixed gate of 0.5 keeps nothing; relative to the best (0.45) with a margin of 0.1 the
    # gate applied is 0.35: the three passages near the best stay
    assert filter_pool(pool(), 0.0, gate=0.5, similarity=weak)[1].kept == 0
    kept, report = filter_pool(pool(), 0.0, gate=0.5, similarity=weak, gate_margin=0.1)
    assert [p.id for p in kept.passages] == ["p0", "p2", "p3"]
    assert report.gate == pytest.approx(0.35)
    # where the best passage is strong the gate is the one given
    strong = np.array([0.7, 0.2, 0.9, 0.8, 0.6])
    kept, report = filter_pool(pool(), 0.0, gate=0.65, similarity=strong, gate_margin=0.1)
    assert [p.id for p in kept.passages] == ["p0", "p2", "p3"] and report.gate == 0.65


@pytest.mark.parametrize("name", sorted(SELECTORS.names()))
def test_every_selector_stops_below_k_instead_of_padding(name: str) -> None:
    selector = parse_selector(name)
    budget = Budget(max_passages=4)
    unfloored = selector.select(pool(), budget)
    assert len(unfloored) == 4  # fills k, off-topic passages included
    chosen = select_above_floor(selector, pool(), budget, 0.25)
    assert set(chosen.passage_ids) <= {"p0", "p1", "p4"} and len(chosen) <= 3
    nothing = select_above_floor(selector, pool(), budget, 0.95)
    assert nothing.passage_ids == ()


def test_the_filter_report_names_the_filter_that_emptied_the_pool() -> None:
    similarity = np.array([0.41, 0.2, 0.3, 0.1, 0.35])
    kept, report = filter_pool(pool(), 0.25, gate=0.5, similarity=similarity)
    assert len(kept) == 0 and (report.pool, report.cleared_floor, report.cleared_gate) == (5, 3, 0)
    reason = report.reason()
    assert reason is not None and reason.startswith("the topic gate removed all 3 passages")
    assert "0.410 < gate 0.50" in reason and "--gate 0.41" in reason
    _, report = filter_pool(pool(), 0.95)
    reason = report.reason()
    assert reason is not None and reason.startswith("the coverage floor removed all 5")
    assert "0.900 < floor 0.95" in reason and "--floor 0.90" in reason
    _, report = filter_pool(pool(), 0.95, gate=0.5, similarity=similarity)
    assert (report.reason() or "").startswith("both filters removed all 5")
    _, report = filter_pool(pool(), 0.25, gate=0.4, similarity=similarity)
    assert report.kept == 1 and report.reason() is None  # p0 clears both
    empty = Candidates("q", "question", (), relevance=np.zeros(0), coverage=None)
    assert (filter_pool(empty, 0.0)[1].reason() or "").startswith("nothing was retrieved")


def test_the_gate_read_by_document_lets_in_the_passages_of_a_document_that_clears_it() -> None:
    import dataclasses

    base = pool()
    docs = ["ssh_config", "ssh_config", "curl", "curl", "ssh_config"]
    candidates = dataclasses.replace(
        base,
        passages=tuple(
            dataclasses.replace(p, metadata={"doc_id": d})
            for p, d in zip(base.passages, docs, strict=True)
        ),
    )
    # floor 0.25 keeps p0, p1, p4 (support 0.9, 0.6, 0.3); only p0 and p2 are near the question
    similarity = np.array([0.8, 0.2, 0.7, 0.1, 0.3])
    kept, report = filter_pool(candidates, 0.25, gate=0.5, similarity=similarity)
    assert [p.id for p in kept.passages] == ["p0"] and report.cleared_gate == 2
    kept, report = filter_pool(
        candidates, 0.25, gate=0.5, similarity=similarity, gate_scope="document"
    )
    # p1 and p4 are ssh_config's, whose p0 clears gate and floor; curl's p2 clears the gate but
    # not the floor, so curl's p3 gains nothing
    assert [p.id for p in kept.passages] == ["p0", "p1", "p4"]
    assert report.cleared_gate == 4 and report.kept == 3
    with pytest.raises(ConfigError, match="scope"):
        filter_pool(candidates, 0.25, gate=0.5, similarity=similarity, gate_scope="section")  # type: ignore[arg-type]


def test_filters_that_judge_the_question_keep_every_passage_once_one_clears_them() -> None:
    candidates = pool()
    similarity = np.array([0.8, 0.2, 0.7, 0.1, 0.3])
    by_passage, report = filter_pool(candidates, 0.25, gate=0.5, similarity=similarity)
    assert [p.id for p in by_passage.passages] == ["p0"]
    assert report.judged == "passages" and report.cleared == 1
    kept, report = filter_pool(candidates, 0.25, gate=0.5, similarity=similarity, judge="question")
    # p0 clears both, so the question is answered, and the selector sees the whole pool
    assert kept is candidates
    assert report.judged == "question" and report.cleared == 1 and report.kept == 5
    assert report.cleared_floor == 3 and report.cleared_gate == 2
    assert report.reason() is None and report.as_dict()["judged"] == "question"
    # when none clears them, the question is refused for the same reason as by passage
    none_near = np.array([0.1, 0.2, 0.3, 0.1, 0.3])
    kept, report = filter_pool(candidates, 0.25, gate=0.5, similarity=none_near, judge="question")
    refused, by_passage_report = filter_pool(candidates, 0.25, gate=0.5, similarity=none_near)
    assert len(kept) == 0 and len(refused) == 0
    assert report.reason() == by_passage_report.reason() is not None
    with pytest.raises(ConfigError, match="filters must be one of"):
        filter_pool(candidates, 0.25, judge="answer")  # type: ignore[arg-type]
