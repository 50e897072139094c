"""The pipeline's preparation of a topic: token costs, coverage, relevance, what selectors need."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from covrag.coverage import parse_estimator
from covrag.data import load_dataset
from covrag.errors import ConfigError
from covrag.pipeline import (
    PrepareConfig,
    attach_coverage,
    config_for,
    prepare,
)
from covrag.pipeline.prepare import prepare_for, select_topic
from covrag.selectors import parse_selector
from covrag.types import Aspect, Budget, Passage, Topic

TOPIC = Topic(
    query_id="q1",
    query="Should cities ban cars?",
    passages=(
        Passage("p1", "Cars pollute the air in cities.", score=0.2),
        Passage("p2", "Car bans hurt the shops in the centre.", score=0.9),
        Passage("p3", "Bikes are healthy.", score=0.5),
    ),
    aspects=(
        Aspect("a1", "pollution", weight=2.0),
        Aspect("a2", "economy", polarity="exclude"),
    ),
    labels={"p1": frozenset({"a1"}), "p2": frozenset({"a2"})},
)


def test_prepare_sets_costs_coverage_and_the_relevance_asked_for() -> None:
    prepared = prepare(TOPIC, parse_estimator("gold"), PrepareConfig(relevance="order"))
    candidates = prepared.candidates
    assert all(p.tokens is not None and p.tokens > 0 for p in candidates.passages)
    assert candidates.relevance.tolist() == [0.0, -1.0, -2.0]
    assert candidates.embeddings is None and candidates.piece_embeddings is None
    assert candidates.coverage is not None
    assert candidates.coverage.probs.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    # The aspects' weights and exclusions travel with the coverage.
    assert candidates.aspect_weights is not None and candidates.aspect_weights.tolist() == [2, 1]
    assert candidates.excluded is not None and candidates.excluded.tolist() == [False, True]
    assert prepared.seconds >= 0

    scored = prepare(TOPIC, None, PrepareConfig(relevance="score")).candidates
    assert scored.coverage is None
    assert scored.relevance.tolist() == [0.2, 0.9, 0.5]


def test_score_relevance_names_the_first_passage_without_a_score() -> None:
    topic = dataclasses.replace(TOPIC, passages=(*TOPIC.passages, Passage("p4", "No score here.")))
    with pytest.raises(ConfigError, match="'p4'"):
        prepare(topic, None, PrepareConfig(relevance="score"))


def test_a_config_is_checked_when_made_and_never_changed_by_use() -> None:
    with pytest.raises(ConfigError, match="relevance must be one of"):
        PrepareConfig(relevance="bm25")  # type: ignore[arg-type]
    config = PrepareConfig(relevance="order")
    before = dataclasses.asdict(config)
    prepare(TOPIC, None, config)
    assert dataclasses.asdict(config) == before
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.relevance = "dense"  # type: ignore[misc]


@pytest.mark.model
def test_the_default_encoder_is_resolved_without_storing_it() -> None:
    config = PrepareConfig()
    candidates = prepare(TOPIC, None, config).candidates
    assert config.encoder is None
    assert candidates.embeddings is not None and candidates.query_embedding is not None
    expected = candidates.embeddings @ candidates.query_embedding
    assert np.allclose(candidates.relevance, expected)
    assert config.resolved_encoder() is PrepareConfig().resolved_encoder()


def test_config_for_asks_only_for_what_the_selectors_read() -> None:
    greedy, mmr, lmvu = (parse_selector(s) for s in ("greedy-coverage", "mmr", "lmvu"))
    assert config_for([greedy]) == PrepareConfig(embeddings=False, pieces=False)
    assert config_for([greedy, mmr], "order").embeddings is True
    assert config_for([lmvu]).pieces is True
    assert config_for([greedy], "score").relevance == "score"


def test_prepare_for_and_select_topic_agree_with_the_parts() -> None:
    selector = parse_selector("greedy-coverage")
    gold = parse_estimator("gold")
    by_parts = selector.select(
        prepare(TOPIC, gold, config_for([selector], "order")).candidates, Budget(max_passages=2)
    )
    composed = prepare_for(TOPIC, selector, gold, relevance="order").candidates
    config = PrepareConfig(relevance="order")
    for selection in (
        selector.select(composed, Budget(max_passages=2)),
        select_topic(TOPIC, selector, Budget(max_passages=2), gold, config),
    ):
        assert selection.steps == by_parts.steps and by_parts.passage_ids[0] == "p1"


def test_attach_coverage_on_bundled_data_matches_prepare() -> None:
    topic = load_dataset("argkp2021:dev")[0]
    gold = parse_estimator("gold")
    config = PrepareConfig(relevance="order")
    with_coverage = prepare(topic, gold, config).candidates
    base = prepare(topic, None, config).candidates
    costed = dataclasses.replace(topic, passages=base.passages)
    attached = attach_coverage(base, gold.estimate(costed), costed)
    assert attached.coverage is not None and with_coverage.coverage is not None
    assert np.array_equal(attached.coverage.probs, with_coverage.coverage.probs)
    assert attached.passages == with_coverage.passages


def test_sentence_relevance_adds_the_nearest_sentence_to_the_passage_cosine() -> None:
    question = "How do I keep an SSH connection alive when idle?"
    answer = (
        "The manual has many sections. It lists options for files, colours and paths. "
        "ServerAliveInterval keeps an idle SSH connection alive."
    )
    topic = Topic(
        "q",
        question,
        (Passage("long", answer), Passage("near", "SSH connections and SSH keys.")),
        (),
    )
    config = PrepareConfig(relevance="sentences")
    candidates = prepare(topic, None, config).candidates
    dense = prepare(topic, None, PrepareConfig(relevance="dense")).candidates
    assert candidates.piece_embeddings is not None and candidates.piece_owner is not None
    encoder = config.resolved_encoder()
    q = encoder.encode([question])[0]
    best = max(float(encoder.encode([s])[0] @ q) for s in answer.split(". "))
    # the passage's own cosine plus that of its sentence nearest the question
    assert candidates.relevance[0] == pytest.approx(dense.relevance[0] + best, abs=0.02)
    # a passage of one sentence is its own nearest sentence
    assert candidates.relevance[1] == pytest.approx(2 * dense.relevance[1], abs=1e-6)
    assert config_for([], "sentences").pieces


def test_pieces_are_each_sentence_encoded_alone_in_passage_order() -> None:
    from covrag.embed import Encoder, default_encoder
    from covrag.pipeline.prepare import embed_pieces
    from covrag.text import split_sentences

    texts = (
        "Set ServerAliveInterval in the config. The client then sends keepalives.",
        "One sentence only.",
        "",
        "Use -z for gzip. Use --exclude for files to skip. Both work with -c.",
    )
    topic = Topic("q", "question", tuple(Passage(f"p{i}", t) for i, t in enumerate(texts)), ())
    encoder = default_encoder()
    own = encoder.encode(list(texts))
    vectors, owners = embed_pieces(topic, own, encoder)
    expected_owners = [0, 0, 1, 2, 3, 3, 3]
    assert owners.tolist() == expected_owners
    fresh = Encoder()  # its own cache: each sentence encoded alone, not read back from the batch
    rows = iter(range(len(owners)))
    for i, text in enumerate(texts):
        sentences = split_sentences(text)
        if len(sentences) > 1:
            for sentence in sentences:  # one call for the pool, the same vector as alone
                alone = fresh.encode([sentence])[0]
                assert np.allclose(vectors[next(rows)], alone, atol=1e-5)
        else:  # its own embedding
            assert np.allclose(vectors[next(rows)], own[i])
