"""Small array helpers the selectors share: tie-break ranks, normalisation, cost divisors."""

from __future__ import annotations

import numpy as np

from covrag.types import BoolArray, FloatArray, IntArray

# Two gains closer than this (relative to the larger) count as a tie, so that float noise from
# summing weights in a different order never decides a pick.
TIE_TOLERANCE = 1e-12


def relevance_rank(relevance: FloatArray) -> IntArray:
    """Position of each passage in decreasing relevance, ties in pool order (0 = most relevant).

    Every selector breaks ties of its own score by this rank, so two selectors that agree on the
    score agree on the order, and relevance ties fall back to pool order as in ``topk``.
    """
    order = np.argsort(-relevance, kind="stable")
    rank = np.empty(len(relevance), dtype=np.int64)
    rank[order] = np.arange(len(relevance), dtype=np.int64)
    return rank


def best_index(scores: FloatArray, mask: BoolArray, rank: IntArray) -> int:
    """The masked passage with the highest score; ties (within tolerance) go to the lower rank.

    ``mask`` must have at least one True entry.
    """
    masked = np.where(mask, scores, -np.inf)
    best = masked.max()
    ties = masked >= best - TIE_TOLERANCE * max(1.0, abs(float(best)))
    return int(np.where(ties, rank, len(rank)).argmin())


def min_max(values: FloatArray) -> FloatArray:
    """``values`` rescaled to [0, 1]; all ones when they are all equal."""
    low, high = float(values.min()), float(values.max())
    if high <= low:
        return np.ones_like(values, dtype=np.float64)
    return (values - low) / (high - low)


def ratio_costs(costs: IntArray) -> FloatArray:
    """Token costs as divisors for cost-aware gains: a cost of 0 counts as 1."""
    return np.maximum(costs, 1).astype(np.float64)


def unit_rows(vectors: FloatArray) -> FloatArray:
    """Rows scaled to unit L2 norm (zero rows stay zero), so dot products are cosines."""
    array = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    result: FloatArray = array / np.where(norms > 0, norms, 1.0)
    return result
