"""Facility location: choose passages that best represent the whole pool.

Objective: ``f(S) = sum_i max_{j in S} max(0, sim(i, j))`` over every passage i of the pool, a
monotone submodular function (Cornuejols, Fisher & Nemhauser, 1977), used for extractive summaries
by Lin & Bilmes (ACL 2011) and implemented by apricot (Schreiber et al., JMLR 2020). It is
maximised by lazy greedy (:mod:`covrag.selectors.optimize`); once it saturates (every remaining
passage adds nothing) the rest of the budget is filled in relevance order. With ``focus``, each
passage of the pool counts by its relevance (``w_i``, :func:`demand`), so the picks represent the
passages near the question rather than the whole pool.

Memory: the similarity matrix is n x n float32, 4 n^2 bytes (4 MB at 1,000 passages, 100 MB at
5,000); pools above ``MAX_POOL`` passages are refused rather than risk exhausting memory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from covrag.errors import ConfigError
from covrag.selectors._common import unit_rows
from covrag.selectors.base import COVERAGE, SAME_POINT, SELECTORS, Candidates, Input, Selector
from covrag.selectors.optimize import OPTIMIZERS, SATURATED, greedy
from covrag.selectors.similarity import check_similarity, passage_vectors, vector_input
from covrag.types import Budget, FloatArray, IntArray

MAX_POOL = 10_000
SIMILARITIES = ("embedding", "coverage", SAME_POINT)

Float32Array = npt.NDArray[np.float32]


class FacilityLocation:
    """``f(S) = sum_i max(start, max_{j in S} sim[j, i])``: row j is a candidate, column i a
    passage it represents.

    Keeps ``current[i] = max(start, max_{j in S} sim[j, i])``; the gain of j is
    ``sum_i max(0, sim[j, i] - current[i])``. With ``start`` 0 and non-negative similarities
    this is the usual facility location; ``start=-1`` over raw cosines lets negative
    similarities count too. Columns scaled by non-negative weights (:func:`demand`) keep it
    monotone submodular.

    Args:
        similarity: (n, n) similarities, symmetric unless weighted by column; gains are
            computed in its dtype.
        start: The level every row starts from before anything is picked.
    """

    floor = SATURATED
    submodular = True

    def __init__(self, similarity: npt.NDArray[np.floating[Any]], start: float = 0.0) -> None:
        self.similarity = similarity
        self.current = np.full(similarity.shape[0], start, dtype=similarity.dtype)

    def gains(self, indices: IntArray) -> FloatArray:
        excess = np.maximum(self.similarity[indices] - self.current, 0.0)
        result: FloatArray = excess.sum(axis=1, dtype=np.float64)
        return result

    def add(self, index: int) -> None:
        np.maximum(self.current, self.similarity[index], out=self.current)


def embedding_similarity(embeddings: FloatArray) -> Float32Array:
    """Cosine similarities of the embeddings, negatives clipped to 0, as float32."""
    vectors = unit_rows(embeddings).astype(np.float32)
    similarity: Float32Array = np.maximum(vectors @ vectors.T, np.float32(0.0))
    return similarity


def contrasted(similarity: Float32Array, contrast: float) -> Float32Array:
    """Similarities measured from the pool's typical pair: ``max(0, z - contrast)`` where ``z``
    standardises each similarity by the mean and standard deviation of the pool's off-diagonal
    pairs. A passage then represents only passages much closer to it than two passages of the
    pool usually are; the diagonal (a passage represents itself) stays the largest entry."""
    n = similarity.shape[0]
    if n < 3:
        return similarity
    off = similarity[~np.eye(n, dtype=bool)]
    spread = float(off.std())
    if spread <= 0.0:
        return similarity
    z = (similarity - np.float32(off.mean())) / np.float32(spread)
    result: Float32Array = np.maximum(z - np.float32(contrast), np.float32(0.0)).astype(np.float32)
    return result


def vector_similarity(
    candidates: Candidates, similarity: str, model: str | None, contrast: float | None
) -> Float32Array:
    """The pool's clipped cosines under ``similarity`` (``embedding`` or ``same-point``, with
    ``model``), measured from the pool's typical pair when ``contrast`` is set."""
    result = embedding_similarity(passage_vectors(candidates, similarity, model))
    return result if contrast is None else contrasted(result, contrast)


def demand(relevance: FloatArray, focus: float) -> Float32Array:
    """Each passage's weight as one to represent: ``exp((r - max r) / focus)``, 1 for the most
    relevant. Scaling the similarity matrix's columns by it keeps each row a candidate and each
    column a passage to represent, which is how :class:`FacilityLocation` reads it."""
    values = np.asarray(relevance, dtype=np.float64)
    weights: Float32Array = np.exp((values - values.max()) / focus).astype(np.float32)
    return weights


def coverage_similarity(candidates: Candidates) -> Float32Array:
    """Weighted Jaccard overlap of coverage rows (0 when neither passage covers anything)."""
    covered = candidates.covered.astype(np.float64)
    weighted = covered * candidates.weights()
    inter = weighted @ covered.T
    size = weighted.sum(axis=1)
    union = size[:, None] + size[None, :] - inter
    ratio = np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)
    result: Float32Array = ratio.astype(np.float32)
    return result


@SELECTORS.register
@dataclass(frozen=True, repr=False, kw_only=True)
class FacilityLocationSelector(Selector):
    """Greedy facility location over the pool, then relevance order once it saturates.

    Attributes:
        cost_aware: Rank by gain per token (cost 0 counts as 1), for token budgets.
        similarity: ``embedding`` (cosine of ``candidates.embeddings``), ``coverage``
            (weighted Jaccard overlap of the coverage matrix's rows) or ``same-point`` (cosine
            of the same-point bi-encoder's vectors, :mod:`covrag.selectors.similarity`).
        similarity_model: For ``same-point``, another ONNX bi-encoder folder (None: shipped).
        contrast: For ``embedding`` and ``same-point``: count a similarity only by how many
            standard deviations it lies above the pool's mean pair similarity, past
            ``contrast`` (:func:`contrasted`); None uses the clipped cosines as they are.
        optimizer: ``lazy`` (Minoux's lazy greedy) or ``naive``; both give the same picks.
        focus: Weigh what each pooled passage asks to be represented by its relevance:
            ``f(S) = sum_i w_i max_{j in S} sim(i, j)`` with ``w_i = exp((r_i - max r) / focus)``,
            ``r`` the candidates' relevance (query-focused facility location, after Lin &
            Bilmes, ACL 2011). A small ``focus`` represents only the passages nearest the
            question (top-k order, in the limit); a large one the whole pool (None: every
            passage weighs 1). It is in relevance units (``sentences`` relevance spans about
            0 to 2); ``benchmarks/compare_selector_domains.py`` measures settings on documents
            and on debates (docs/experiments/34-one-selector-two-kinds.md).

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("facility-location(cost_aware=True)")
        facility-location(cost_aware=True)
    """

    name = "facility-location"
    cost_aware: bool = False
    similarity: str = "embedding"
    similarity_model: str | None = None
    contrast: float | None = None
    optimizer: str = "lazy"
    focus: float | None = None

    @property
    def reads(self) -> tuple[Input, ...]:
        if self.similarity == "coverage":
            return (Input(COVERAGE),)
        return (vector_input(self.similarity, self.similarity_model),)

    def __post_init__(self) -> None:
        check_similarity(self.name, self.similarity, self.similarity_model, SIMILARITIES)
        if self.contrast is not None and self.similarity == "coverage":
            raise ConfigError("facility-location: contrast applies to cosine similarities, "
                              "not similarity='coverage'")  # fmt: skip
        if self.contrast is not None and not math.isfinite(self.contrast):
            raise ConfigError(f"facility-location: contrast must be finite, got {self.contrast!r}")
        if self.focus is not None and not (math.isfinite(self.focus) and self.focus > 0.0):
            raise ConfigError(
                f"facility-location: focus must be a number above 0, got {self.focus!r}"
            )
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(
                f"facility-location: optimizer must be one of {tuple(OPTIMIZERS)}, "
                f"got {self.optimizer!r}"
            )

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        n = len(candidates)
        if n > MAX_POOL:
            raise ConfigError(
                f"facility-location keeps an n x n similarity matrix; {n} passages exceed "
                f"its limit of {MAX_POOL}: shorten the pool first (e.g. top-k by relevance)"
            )
        if self.similarity == "coverage":
            similarity = coverage_similarity(candidates)
        else:
            similarity = vector_similarity(
                candidates, self.similarity, self.similarity_model, self.contrast
            )
        if self.focus is not None and n:
            similarity = similarity * demand(candidates.relevance, self.focus)[None, :]
        return greedy(
            FacilityLocation(similarity),
            candidates,
            budget,
            optimizer=self.optimizer,
            cost_aware=self.cost_aware,
        )
