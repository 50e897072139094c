"""What selectors read is computed before selecting (covrag.pipeline.inputs), never by them."""

from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.pipeline import question_similarity, with_inputs
from covrag.selectors import SELECTORS, Candidates, Input, above_floor, parse_selector
from covrag.types import Budget, CoverageMatrix, Passage

IDS = ("p0", "p1", "p2", "p3")


def pool(same_point: dict[str | None, np.ndarray] | None = None) -> Candidates:
    rng = np.random.default_rng(0)
    embeddings = rng.normal(size=(len(IDS), 4))
    embeddings /= np.linalg.norm(embeddings, axis=1, keepdims=True)
    probs = np.array([[0.9, 0.1], [0.2, 0.6], [0.05, 0.1], [0.8, 0.7]])
    return Candidates(
        "q",
        "question",
        tuple(Passage(p, f"text of {p}", tokens=5) for p in IDS),
        coverage=CoverageMatrix(IDS, ("a", "b"), probs, 0.5),
        embeddings=embeddings,
        query_embedding=embeddings[0],
        same_point=same_point or {},
    )


def test_each_selector_declares_what_it_reads() -> None:
    kinds = {"coverage", "embeddings", "pieces", "same-point"}
    for name in SELECTORS.names():
        reads = parse_selector(name).reads
        assert all(isinstance(i, Input) and i.kind in kinds for i in reads), name
    assert parse_selector("topk").reads == ()
    assert parse_selector("greedy-coverage").reads == (Input("coverage"),)
    assert parse_selector("lmvu").reads == (Input("embeddings"), Input("pieces"))
    assert parse_selector("mmr").reads == (Input("embeddings"),)
    assert parse_selector("cluster(similarity='same-point')").reads == (Input("same-point"),)


def test_with_inputs_computes_nothing_a_selector_does_not_read() -> None:
    candidates = pool()
    selectors = [parse_selector(s) for s in ("topk", "mmr", "greedy-coverage", "lmvu")]
    assert with_inputs(candidates, selectors) is candidates


def test_with_inputs_keeps_vectors_already_computed() -> None:
    vectors = np.eye(len(IDS))
    candidates = pool({None: vectors})
    selector = parse_selector("facility-location(similarity='same-point')")
    assert with_inputs(candidates, [selector]) is candidates
    picked = selector.select(candidates, Budget(max_passages=2)).passage_ids
    assert len(picked) == 2


def test_a_same_point_selector_refuses_to_embed_the_pool_itself() -> None:
    selector = parse_selector("mmr(similarity='same-point', similarity_model='elsewhere')")
    with pytest.raises(ConfigError, match="elsewhere.*computed before selecting"):
        selector.select(pool({None: np.eye(len(IDS))}), Budget(max_passages=2))


def test_the_vectors_must_match_the_pool() -> None:
    with pytest.raises(ConfigError, match="same-point vectors of None have 2 rows, expected 4"):
        pool({None: np.eye(2)})


def test_the_floor_cuts_the_same_point_vectors_with_the_pool() -> None:
    vectors = np.arange(len(IDS) * 2, dtype=np.float64).reshape(len(IDS), 2)
    kept = above_floor(pool({"m": vectors}), 0.7)
    assert [p.id for p in kept.passages] == ["p0", "p3"]
    assert kept.same_point["m"].tolist() == [vectors[0].tolist(), vectors[3].tolist()]


def test_question_similarity_reuses_the_embeddings_made_for_the_query() -> None:
    candidates = pool()
    assert candidates.embeddings is not None and candidates.query_embedding is not None
    expected = candidates.embeddings @ candidates.query_embedding
    assert np.allclose(question_similarity(candidates), expected)
    assert question_similarity(candidates)[0] == pytest.approx(1.0)
