"""Cluster-then-pick: one passage per k-means cluster, most relevant first, round-robin after.

Clustering the pool and taking each cluster's best passage is the classic diversification
baseline (e.g. the clustering baseline of LMVU); clusters stand in for aspects when no coverage
matrix is available. k-means uses k-means++ seeding (Arthur & Vassilvitskii, SODA 2007) and
Lloyd iterations, in numpy only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.selectors.base import SELECTORS, Candidates, Input, Selector
from covrag.selectors.optimize import greedy
from covrag.selectors.similarity import (
    VECTOR_SIMILARITIES,
    check_similarity,
    passage_vectors,
    vector_input,
)
from covrag.types import Budget, FloatArray, IntArray

# Clusters for a budget with no limit: the usual evaluation depth (@10).
UNLIMITED_CLUSTERS = 10


def kmeans(
    points: FloatArray, n_clusters: int, *, random_state: int = 0, max_iter: int = 100
) -> IntArray:
    """Cluster labels of ``points`` by k-means (k-means++ seeding, Lloyd iterations).

    Deterministic for a given ``random_state``. Fewer than ``n_clusters`` clusters come out when
    the points have fewer distinct positions; a cluster emptied during the iterations keeps its
    centre (and stays empty).

    Args:
        points: (n, d) array.
        n_clusters: Wanted number of clusters (capped at n).
        random_state: Seed of the k-means++ sampling.
        max_iter: Cap on Lloyd iterations; they stop earlier once labels no longer change.

    Returns:
        (n,) int labels in ``[0, n_clusters)``.
    """
    x = np.asarray(points, dtype=np.float64)
    n = x.shape[0]
    rng = np.random.default_rng(random_state)
    norms = np.einsum("ij,ij->i", x, x)

    def sq_dist(centres: FloatArray) -> FloatArray:
        result: FloatArray = np.maximum(
            norms[:, None] - 2.0 * x @ centres.T + np.einsum("ij,ij->i", centres, centres), 0.0
        )
        return result

    seeds = [int(rng.integers(n))]
    nearest = sq_dist(x[seeds])[:, 0]
    for _ in range(1, min(n_clusters, n)):
        total = nearest.sum()
        if total <= 0.0:
            break  # every point sits on a chosen centre
        seeds.append(int(rng.choice(n, p=nearest / total)))
        nearest = np.minimum(nearest, sq_dist(x[seeds[-1:]])[:, 0])
    centres = x[seeds].copy()
    k = len(seeds)
    labels = np.full(n, -1, dtype=np.int64)
    for _ in range(max_iter):
        new_labels = sq_dist(centres).argmin(axis=1).astype(np.int64)
        if np.array_equal(new_labels, labels):
            break
        labels = new_labels
        counts = np.bincount(labels, minlength=k)
        sums = np.zeros_like(centres)
        np.add.at(sums, labels, x)
        filled = counts > 0
        centres[filled] = sums[filled] / counts[filled, None]
    return labels


def default_n_clusters(candidates: Candidates, budget: Budget) -> int:
    """As many clusters as passages the budget holds, within [1, n].

    ``max_passages`` when given; for a token budget, ``max_tokens // median cost`` (the smaller of
    the two when both are given); ``UNLIMITED_CLUSTERS`` for an unlimited budget.
    """
    n = len(candidates)
    wanted: list[int] = []
    if budget.max_passages is not None:
        wanted.append(budget.max_passages)
    if budget.max_tokens is not None:
        median = float(np.median(candidates.costs)) if n else 0.0
        wanted.append(n if median <= 0 else int(budget.max_tokens // median))
    k = min(wanted) if wanted else UNLIMITED_CLUSTERS
    return max(1, min(k, n))


def cluster_labels(
    candidates: Candidates,
    budget: Budget,
    n_clusters: int | None,
    random_state: int,
    embeddings: FloatArray | None = None,
) -> IntArray:
    """k-means labels of ``embeddings`` (default: the pool's), with the default number of
    clusters if ``n_clusters`` is None."""
    if embeddings is None:
        embeddings, _ = candidates.require_embeddings()
    k = default_n_clusters(candidates, budget) if n_clusters is None else n_clusters
    return kmeans(embeddings, min(k, len(candidates)), random_state=random_state)


def check_clusters(name: str, n_clusters: int | None) -> None:
    if n_clusters is not None and n_clusters < 1:
        raise ConfigError(f"{name}: n_clusters must be >= 1 or None, got {n_clusters!r}")


class ClusterRounds:
    """Round-robin over clusters as a greedy objective: relevance, within clusters not yet served.

    A passage's gain is its relevance when its cluster has not been served in the current round,
    ``-inf`` (never picked) otherwise; when no candidate of an unserved cluster is left, every
    candidate counts again and the pick that follows starts a new round. Never saturates.

    Args:
        labels: (n,) cluster of each passage.
        relevance: (n,) relevance scores.
    """

    floor = -np.inf
    submodular = False

    def __init__(self, labels: IntArray, relevance: FloatArray) -> None:
        self.labels = labels
        self.relevance = relevance
        self.served = np.zeros(int(labels.max()) + 1, dtype=bool)

    def gains(self, indices: IntArray) -> FloatArray:
        fresh = ~self.served[self.labels[indices]]
        if not fresh.any():
            return self.relevance[indices]
        result: FloatArray = np.where(fresh, self.relevance[indices], -np.inf)
        return result

    def add(self, index: int) -> None:
        if self.served[self.labels[index]]:
            self.served[:] = False  # every cluster was served: a new round
        self.served[self.labels[index]] = True


@SELECTORS.register
@dataclass(frozen=True, repr=False, kw_only=True)
class ClusterSelector(Selector):
    """k-means over the embeddings; each round takes the most relevant fitting passage of every
    cluster not yet served in that round, in decreasing relevance, until the budget is spent.

    Round 1 is "the best passage of each cluster, ordered by relevance"; later rounds continue
    round-robin (the next best of each cluster), so the whole pool is ranked when the budget
    allows. A cluster whose remaining passages do not fit is passed over in that round.

    Attributes:
        n_clusters: Number of clusters; None means as many as the budget holds
            (:func:`default_n_clusters`).
        random_state: Seed of the k-means++ initialisation.
        similarity: The vectors clustered: ``embedding`` (the pool's embeddings) or
            ``same-point`` (the same-point bi-encoder's, :mod:`covrag.selectors.similarity`).
        similarity_model: For ``same-point``, another ONNX bi-encoder folder (None: shipped).

    Example:
        >>> from covrag.selectors import parse_selector
        >>> parse_selector("cluster(n_clusters=5)")
        cluster(n_clusters=5)
    """

    name = "cluster"
    n_clusters: int | None = None
    random_state: int = 0
    similarity: str = "embedding"
    similarity_model: str | None = None

    @property
    def reads(self) -> tuple[Input, ...]:
        return (vector_input(self.similarity, self.similarity_model),)

    def __post_init__(self) -> None:
        check_clusters(self.name, self.n_clusters)
        check_similarity(self.name, self.similarity, self.similarity_model, VECTOR_SIMILARITIES)

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        vectors = passage_vectors(candidates, self.similarity, self.similarity_model)
        labels = cluster_labels(candidates, budget, self.n_clusters, self.random_state, vectors)
        return greedy(ClusterRounds(labels, candidates.relevance), candidates, budget)
