"""Composes the stages for one topic: token costs -> coverage -> relevance -> selection."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.embed import Encoder
from covrag.errors import ConfigError
from covrag.pipeline.config import PrepareConfig, RelevanceSource, config_for
from covrag.pipeline.inputs import with_inputs
from covrag.selectors.base import Candidates, Selector
from covrag.text import split_sentences
from covrag.tokens import TokenCounter, with_token_costs
from covrag.types import Budget, CoverageMatrix, FloatArray, IntArray, Selection, Topic

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A topic's selector input and the seconds preparing it took."""

    candidates: Candidates
    seconds: float


def prepare(
    topic: Topic,
    estimator: CoverageEstimator | None,
    config: PrepareConfig | None = None,
) -> Prepared:
    """Build the :class:`Candidates` of a topic: token costs, coverage, relevance, embeddings."""
    config = config or PrepareConfig()
    started = time.perf_counter()
    topic = with_token_costs(topic, config.counter)
    coverage: CoverageMatrix | None = estimator.estimate(topic) if estimator else None

    encoder: Encoder | None = None
    if config.relevance in ("dense", "sentences") or config.embeddings or config.pieces:
        encoder = config.resolved_encoder()
    embeddings = query_embedding = None
    if encoder is not None:
        embeddings = encoder.encode([p.text for p in topic.passages])
        query_embedding = encoder.encode([topic.query])[0]

    piece_embeddings = piece_owner = None
    if config.pieces or config.relevance == "sentences":
        if encoder is None or embeddings is None:
            raise ConfigError("piece embeddings need the encoder (install covrag[embed])")
        piece_embeddings, piece_owner = embed_pieces(topic, embeddings, encoder)

    n = len(topic.passages)
    if config.relevance in ("dense", "sentences"):
        assert embeddings is not None and query_embedding is not None
        relevance = embeddings @ query_embedding
        if config.relevance == "sentences":
            assert piece_embeddings is not None and piece_owner is not None
            nearest = nearest_piece(piece_embeddings @ query_embedding, piece_owner, n)
            relevance = relevance + nearest
    elif config.relevance == "score":
        missing = [p.id for p in topic.passages if p.score is None]
        if missing:
            raise ConfigError(
                f"topic {topic.query_id!r}: relevance 'score' needs a score on every passage; "
                f"{len(missing)} have none (first: {missing[0]!r})"
            )
        relevance = np.array([p.score for p in topic.passages], dtype=np.float64)
    else:
        relevance = -np.arange(n, dtype=np.float64)

    candidates = Candidates(
        query_id=topic.query_id,
        query=topic.query,
        passages=topic.passages,
        relevance=relevance,
        embeddings=embeddings,
        query_embedding=query_embedding,
        piece_embeddings=piece_embeddings,
        piece_owner=piece_owner,
    )
    if coverage is not None:
        candidates = attach_coverage(candidates, coverage, topic)
    return Prepared(candidates, time.perf_counter() - started)


def embed_pieces(
    topic: Topic, embeddings: FloatArray, encoder: Encoder
) -> tuple[FloatArray, IntArray]:
    """Sentence embeddings of every passage; a one-sentence passage reuses its own embedding.
    The sentences of all passages are encoded in one call (batched by length), not one call a
    passage: the same vectors, in about half the time on a 50-passage pool."""
    split = [split_sentences(p.text) for p in topic.passages]
    flat = [s for sentences in split if len(sentences) > 1 for s in sentences]
    encoded = encoder.encode(flat) if flat else None
    vectors: list[FloatArray] = []
    owners: list[int] = []
    start = 0
    for i, sentences in enumerate(split):
        if len(sentences) > 1:
            assert encoded is not None
            vectors.append(encoded[start : start + len(sentences)])
            start += len(sentences)
        else:
            vectors.append(embeddings[i : i + 1])
        owners.extend([i] * max(len(sentences), 1))
    if not vectors:
        return np.zeros((0, embeddings.shape[1] if embeddings.ndim == 2 else 0)), np.zeros(
            0, dtype=np.int64
        )
    return np.concatenate(vectors), np.array(owners, dtype=np.int64)


def nearest_piece(similarity: FloatArray, owner: IntArray, n: int) -> FloatArray:
    """Per passage (``0 .. n - 1``), the greatest ``similarity`` of its pieces (sentences)."""
    best = np.full(n, -np.inf)
    np.maximum.at(best, owner, similarity)
    return np.where(np.isfinite(best), best, 0.0)


def attach_coverage(candidates: Candidates, coverage: CoverageMatrix, topic: Topic) -> Candidates:
    """The same candidates with a coverage matrix, its aspects' weights and exclusion flags."""
    by_id = {a.id: a for a in topic.aspects}
    aspects = [by_id.get(a) for a in coverage.aspect_ids]
    return dataclasses.replace(
        candidates,
        coverage=coverage,
        aspect_weights=np.array([a.weight if a else 1.0 for a in aspects]),
        excluded=np.array([bool(a and a.polarity == "exclude") for a in aspects]),
    )


def prepare_for(
    topic: Topic,
    selector: Selector,
    estimator: CoverageEstimator | None = None,
    *,
    relevance: RelevanceSource = "dense",
    counter: TokenCounter | None = None,
) -> Prepared:
    """Prepare a topic as ``selector`` needs it (:func:`~covrag.pipeline.config.config_for` and
    :func:`~covrag.pipeline.inputs.with_inputs`), with ``estimator``'s coverage when one is
    given."""
    prepared = prepare(topic, estimator, config_for([selector], relevance, counter))
    candidates = with_inputs(prepared.candidates, [selector])
    return dataclasses.replace(prepared, candidates=candidates)


def select_topic(
    topic: Topic,
    selector: Selector,
    budget: Budget,
    estimator: CoverageEstimator | None = None,
    config: PrepareConfig | None = None,
) -> Selection:
    """Prepare one topic (with what the selector reads) and run one selector on it."""
    candidates = with_inputs(prepare(topic, estimator, config).candidates, [selector])
    return selector.select(candidates, budget)
