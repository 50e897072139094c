"""Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.selectors._common import min_max, unit_rows
from covrag.selectors.base import EMBEDDINGS, SELECTORS, Candidates, Input, Selector
from covrag.selectors.optimize import greedy
from covrag.selectors.similarity import (
    VECTOR_SIMILARITIES,
    check_similarity,
    passage_vectors,
    vector_input,
)
from covrag.types import Budget, FloatArray, IntArray


class MarginalRelevance:
    """MMR's score as a greedy objective: ``lam * rel[d] - (1 - lam) * max_{s in S} sim(d, s)``.

    Not submodular and possibly negative, so it never saturates (``floor`` is ``-inf``): every
    fitting passage is ranked. The redundancy term is 0 before the first pick; the max-similarity
    vector is updated incrementally (one matrix-vector product per pick, no n x n matrix).

    Args:
        relevance: (n,) relevance on the similarity's scale.
        vectors: (n, d) unit passage vectors.
        lam: Weight of relevance (1) against novelty (0).
    """

    floor = -np.inf
    submodular = False

    def __init__(self, relevance: FloatArray, vectors: FloatArray, lam: float) -> None:
        self.relevance = relevance
        self.vectors = vectors
        self.lam = lam
        self.redundancy = np.zeros(len(relevance))
        self.max_sim = np.full(len(relevance), -np.inf)

    def gains(self, indices: IntArray) -> FloatArray:
        score: FloatArray = self.lam * self.relevance - (1.0 - self.lam) * self.redundancy
        return score[indices]

    def add(self, index: int) -> None:
        np.maximum(self.max_sim, self.vectors @ self.vectors[index], out=self.max_sim)
        self.redundancy = self.max_sim


@SELECTORS.register
@dataclass(frozen=True, repr=False, kw_only=True)
class MMRSelector(Selector):
    """Pick, step by step, ``argmax_d lam * rel(q, d) - (1 - lam) * max_{s in S} sim(d, s)``.

    Convention: ``lam`` weighs relevance, as LangChain's ``lambda_mult``: ``lam=1`` is pure
    relevance (the same order as ``topk`` when no query embedding is given), ``lam=0`` pure
    diversity. The redundancy term is 0 for the first pick and may be negative afterwards (a
    passage dissimilar to everything chosen gets a bonus), as in the original formula.

    - ``sim``: cosine of ``candidates.embeddings`` (rows are re-normalised defensively).
    - ``rel``: cosine to ``candidates.query_embedding`` when given, else ``candidates.relevance``
      min-max normalised to [0, 1] (so both terms share a scale).

    Score ties go to the more relevant passage (``candidates.relevance``), then pool order. The
    max-similarity vector is updated incrementally: one (n x d) matrix-vector product and O(n)
    work per pick, no n x n matrix. Passages that do not fit the budget are skipped.

    Attributes:
        lam: Trade-off in [0, 1] between relevance (1) and novelty (0).
        similarity: What ``sim`` compares: ``embedding`` (the pool's embeddings) or
            ``same-point`` (the same-point bi-encoder's, :mod:`covrag.selectors.similarity`);
            relevance stays the query cosine of the pool's embeddings.
        similarity_model: For ``same-point``, another ONNX bi-encoder folder (None: shipped).

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("mmr(lam=0.7)")
        mmr(lam=0.7)
    """

    name = "mmr"
    lam: float = 0.5
    similarity: str = "embedding"
    similarity_model: str | None = None

    @property
    def reads(self) -> tuple[Input, ...]:
        # Relevance is always the embeddings' query cosine; ``sim`` may read other vectors.
        compared = vector_input(self.similarity, self.similarity_model)
        return tuple(dict.fromkeys((Input(EMBEDDINGS), compared)))

    def __post_init__(self) -> None:
        if not 0.0 <= self.lam <= 1.0:
            raise ConfigError(f"mmr: lam must lie in [0, 1], got {self.lam!r}")
        check_similarity(self.name, self.similarity, self.similarity_model, VECTOR_SIMILARITIES)

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        embeddings, query = candidates.require_embeddings()
        vectors = unit_rows(embeddings)
        if query is not None:
            relevance = vectors @ unit_rows(query)
        else:
            relevance = min_max(candidates.relevance)
        if self.similarity != "embedding":
            vectors = unit_rows(passage_vectors(candidates, self.similarity, self.similarity_model))
        return greedy(MarginalRelevance(relevance, vectors, self.lam), candidates, budget)
