"""Composes the stages for one topic: token costs -> coverage -> relevance -> selection."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.embed import Encoder, default_encoder
from covrag.errors import ConfigError, MissingExtraError
from covrag.select.base import Candidates, Selector
from covrag.tokens import TokenCounter, with_token_costs
from covrag.types import Budget, CoverageMatrix, Selection, Topic

logger = logging.getLogger(__name__)

RelevanceSource = Literal["dense", "score", "order"]
RELEVANCE_SOURCES: tuple[RelevanceSource, ...] = ("dense", "score", "order")


@dataclass
class PrepareConfig:
    """How a topic becomes a selector's input.

    Attributes:
        relevance: ``dense`` = cosine of query and passage under the encoder (the DES
            bi-encoder score); ``score`` = the passages' own retriever scores; ``order`` = the
            pool's order (first = most relevant).
        embeddings: Compute passage embeddings (needed by MMR, clustering, facility location).
            ``None`` = whenever the encoder is available.
        counter: Token counter for budgets (None = MiniLM WordPiece).
    """

    relevance: RelevanceSource = "dense"
    embeddings: bool | None = None
    counter: TokenCounter | None = None
    encoder: Encoder | None = field(default=None, repr=False)

    def get_encoder(self) -> Encoder:
        if self.encoder is None:
            self.encoder = default_encoder()
        return self.encoder


@dataclass(frozen=True)
class Prepared:
    candidates: Candidates
    seconds: float


def prepare(
    topic: Topic,
    estimator: CoverageEstimator | None,
    config: PrepareConfig | None = None,
) -> Prepared:
    """Build the :class:`Candidates` of a topic: token costs, coverage, relevance, embeddings."""
    config = config or PrepareConfig()
    if config.relevance not in RELEVANCE_SOURCES:
        raise ConfigError(f"relevance must be one of {RELEVANCE_SOURCES}, got {config.relevance!r}")
    started = time.perf_counter()
    topic = with_token_costs(topic, config.counter)
    coverage: CoverageMatrix | None = estimator.estimate(topic) if estimator else None

    want_embeddings = config.embeddings
    encoder: Encoder | None = None
    if config.relevance == "dense" or want_embeddings is not False:
        try:
            encoder = config.get_encoder()
        except MissingExtraError:
            if config.relevance == "dense" or want_embeddings:
                raise
            encoder = None
    embeddings = query_embedding = None
    if encoder is not None:
        embeddings = encoder.encode([p.text for p in topic.passages])
        query_embedding = encoder.encode([topic.query])[0]

    n = len(topic.passages)
    if config.relevance == "dense":
        assert embeddings is not None and query_embedding is not None
        relevance = embeddings @ query_embedding
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

    weights = excluded = None
    if coverage is not None:
        by_id = {a.id: a for a in topic.aspects}
        aspects = [by_id.get(a) for a in coverage.aspect_ids]
        weights = np.array([a.weight if a else 1.0 for a in aspects])
        excluded = np.array([bool(a and a.polarity == "exclude") for a in aspects])
    candidates = Candidates(
        query_id=topic.query_id,
        query=topic.query,
        passages=topic.passages,
        relevance=relevance,
        coverage=coverage,
        embeddings=embeddings,
        query_embedding=query_embedding,
        aspect_weights=weights,
        excluded=excluded,
    )
    return Prepared(candidates, time.perf_counter() - started)


def select_topic(
    topic: Topic,
    selector: Selector,
    budget: Budget,
    estimator: CoverageEstimator | None = None,
    config: PrepareConfig | None = None,
) -> Selection:
    """Prepare one topic and run one selector on it."""
    return selector.select(prepare(topic, estimator, config).candidates, budget)
