"""Embedding-similarity coverage: cosine of passage and aspect embeddings, thresholded."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from covrag.coverage.base import ESTIMATORS, CoverageEstimator, best_of, expand_answers
from covrag.embed import Encoder, default_encoder
from covrag.types import CoverageMatrix, Topic


@ESTIMATORS.register
@dataclass(frozen=True, repr=False)
class EmbeddingCoverage(CoverageEstimator):
    """P[p, a] = max(0, cos(e(p), e(a))) with a bi-encoder; covered when P >= threshold.

    A cheap, label-free estimator. Bi-encoder similarity measures topical closeness, not whether
    a passage answers a sub-question, so it is a weak coverage signal. The default threshold, 0.8,
    is the best mean alpha-nDCG@10 / RVC of greedy coverage over the three bundled dev splits in a
    sweep of 0.3-0.8 (docs/experiments/02-embedding-threshold.md); retune it for other data and
    sub-question sources.

    Args:
        threshold: Cosine at or above which a pair counts as covered.
        model: sentence-transformers model name or path; None for the packaged MiniLM.
    """

    name = "embedding"
    threshold: float = 0.8
    model: str | None = None

    def __post_init__(self) -> None:
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold}")

    def encoder(self) -> Encoder:
        return default_encoder() if self.model is None else _encoder_for(self.model)

    def estimate(self, topic: Topic) -> CoverageMatrix:
        started = time.perf_counter()
        encoder = self.encoder()
        expanded, owners = expand_answers(topic)
        passages = encoder.encode([p.text for p in topic.passages])
        aspects = encoder.encode([a.text for a in expanded.aspects])
        probs = (
            np.clip(passages @ aspects.T, 0.0, 1.0)
            if aspects.size
            else np.zeros((len(topic.passages), 0))
        )
        scored = probs.size
        probs = best_of(probs, owners, len(topic.aspects))
        return CoverageMatrix(
            passage_ids=topic.passage_ids,
            aspect_ids=topic.aspect_ids,
            probs=probs,
            threshold=self.threshold,
            source=repr(self),
            pairs_scored=scored,
            seconds=time.perf_counter() - started,
        )


_ENCODERS: dict[str, Encoder] = {}


def _encoder_for(model: str) -> Encoder:
    if model not in _ENCODERS:
        _ENCODERS[model] = Encoder(model)
    return _ENCODERS[model]
