"""CoveR coverage: the coverage-trained bi-encoder as a cheap estimator, or as a pre-filter.

``cover(model=DIR)`` scores P[p, a] as the cosine of passage and aspect embeddings under a CoveR
model (``covrag-lab train cover``, whose aspect examples teach "does this passage answer this
aspect"): one embedding per passage and per aspect instead of one forward pass per pair. Without
``model`` it is the packaged MiniLM, the baseline.

``cover(model=DIR, rerank=m)`` is the pre-filter: for each aspect only its ``m`` best passages by
the bi-encoder are scored by the cross-encoder (the shipped one unless ``cross_encoder`` names
another); the other pairs get 0 (``fill='zero'``) or their cosine held below the threshold
(``fill='cosine'``), so they never count as covered. Pairs scored drop from
``passages x aspects`` to at most ``m x aspects``.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Literal

import numpy as np

from covrag.coverage.base import ESTIMATORS, CoverageEstimator
from covrag.coverage.cross_encoder import CrossEncoderCoverage
from covrag.embed import Encoder, default_encoder
from covrag.types import CoverageMatrix, FloatArray, Topic

#: Threshold of the bi-encoder alone (not tuned: expected coverage reads the probabilities).
COSINE_THRESHOLD = 0.5


@functools.cache
def _encoder(model: str) -> Encoder:
    return Encoder(model)


@ESTIMATORS.register
@dataclass(frozen=True, repr=False)
class CoverCoverage(CoverageEstimator):
    """P[p, a] from a CoveR bi-encoder, optionally re-scored by a cross-encoder on its top pairs.

    Args:
        model: The CoveR model folder (``covrag-lab train cover --out DIR``); None = the packaged
            MiniLM, not coverage-trained (the baseline a CoveR model is measured against).
        threshold: Covered at or above this; None = the cross-encoder's threshold with
            ``rerank``, else 0.5 (cosine; not tuned).
        rerank: Score each aspect's ``rerank`` best passages with the cross-encoder; None =
            the bi-encoder alone.
        cross_encoder: The cross-encoder of ``rerank`` (None = covrag's shipped model).
        fill: What the pairs the cross-encoder skips get: ``zero`` or ``cosine`` (their
            cosine, capped just below the threshold).
    """

    name = "cover"
    model: str | None = None
    threshold: float | None = None
    rerank: int | None = None
    cross_encoder: str | None = None
    fill: Literal["zero", "cosine"] = "zero"

    def __post_init__(self) -> None:
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"threshold must lie in [0, 1], got {self.threshold}")
        if self.rerank is not None and self.rerank < 1:
            raise ValueError(f"rerank must be >= 1, got {self.rerank}")

    def model_pairs(self, n_passages: int, n_columns: int) -> int:
        return 0 if self.rerank is None else min(self.rerank, n_passages) * n_columns

    def _cross_encoder(self) -> CrossEncoderCoverage:
        return CrossEncoderCoverage(model=self.cross_encoder)

    def resolved_threshold(self) -> float:
        if self.threshold is not None:
            return self.threshold
        if self.rerank is not None:
            return self._cross_encoder().resolved_threshold()
        return COSINE_THRESHOLD

    def encoder(self) -> Encoder:
        """The CoveR bi-encoder (the packaged MiniLM when ``model`` is None), loaded once."""
        return default_encoder() if self.model is None else _encoder(self.model)

    def cosines(self, topic: Topic) -> FloatArray:
        """Cosine of every passage with every aspect under the CoveR model, clipped to [0, 1]."""
        encoder = self.encoder()
        if not topic.passages or not topic.aspects:
            return np.zeros((len(topic.passages), len(topic.aspects)))
        passages = encoder.encode([p.text for p in topic.passages])
        aspects = encoder.encode([a.text for a in topic.aspects])
        return np.clip(passages @ aspects.T, 0.0, 1.0)

    def estimate(self, topic: Topic) -> CoverageMatrix:
        started = time.perf_counter()
        cosines = self.cosines(topic)
        threshold = self.resolved_threshold()
        probs, scored, truncated = cosines, 0, 0
        if self.rerank is not None and cosines.size:
            probs, scored, truncated = self._rerank(topic, cosines, threshold)
        return CoverageMatrix(
            passage_ids=topic.passage_ids,
            aspect_ids=topic.aspect_ids,
            probs=probs,
            threshold=threshold,
            source=repr(self),
            pairs_scored=scored if self.rerank is not None else cosines.size,
            seconds=time.perf_counter() - started,
            truncated_pairs=truncated,
        )

    def _rerank(
        self, topic: Topic, cosines: FloatArray, threshold: float
    ) -> tuple[FloatArray, int, int]:
        """The cross-encoder's probabilities on each aspect's top ``rerank`` passages."""
        m = min(int(self.rerank or 0), len(topic.passages))
        # Per aspect (column), the m highest cosines; ties in passage order.
        top = np.argsort(-cosines, axis=0, kind="stable")[:m]
        chosen = np.zeros_like(cosines, dtype=bool)
        chosen[top, np.arange(cosines.shape[1])[None, :]] = True
        cross = self._cross_encoder()
        scorer = cross.scorer()
        where = np.argwhere(chosen)
        pairs = [(topic.passages[i].text, topic.aspects[j].text) for i, j in where.tolist()]
        values, scored, truncated = scorer.score(pairs)
        if self.fill == "zero":
            probs = np.zeros_like(cosines)
        else:
            probs = np.minimum(cosines, np.nextafter(threshold, 0.0))
        probs[where[:, 0], where[:, 1]] = values
        return probs, scored, truncated
