"""Numpy kernels of the evaluation measures (private: the typed wrappers are in ``measures``).

Documents are rows of a padded table of local aspect indices, ascending per row and padded with a
sentinel ``s`` (one past the largest aspect index) whose gain is always 0. Kernels work on a batch
of topics at once: arrays have a leading topic axis.

The alpha-DCG kernels reproduce NIST ndeval's floating-point arithmetic, so values agree with
pyndeval to the last bit in practice: a document's gain is summed over its aspects in aspect order,
sequentially (``np.cumsum`` is sequential, unlike ``np.sum``); decayed gains are repeated products
``1 * (1-alpha) * (1-alpha) ...`` (never ``pow``); discounts are ``log(2)/log(rank+1)`` from libm.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from covrag.types import BoolArray, FloatArray, IntArray

AspectArray = npt.NDArray[np.signedinteger[Any]]
"""Local aspect indices: the smallest signed integers that hold the sentinel (memory)."""


def aspect_dtype(sentinel: int) -> type[np.signedinteger[Any]]:
    """The dtype of a table of local aspect indices up to ``sentinel``."""
    return np.int16 if sentinel <= np.iinfo(np.int16).max else np.int32


def decay_table(alpha: float, size: int) -> FloatArray:
    """``table[c]`` = the gain of an aspect already seen ``c`` times: (1-alpha)^c, by products."""
    table = np.empty(size + 1)
    gain = 1.0
    for c in range(size + 1):
        table[c] = gain
        gain *= 1.0 - alpha
    return table


@functools.lru_cache(maxsize=64)
def _discounts(size: int) -> FloatArray:
    values = np.array([math.log(2.0) / math.log(i + 2.0) for i in range(size)])
    values.setflags(write=False)
    return values


def discounts(size: int) -> FloatArray:
    """ndeval's discount of the 0-based rank i: log(2)/log(i+2) = 1/log2(rank + 1)."""
    return _discounts(size)


def sequential_sum(values: FloatArray) -> FloatArray:
    """Sum over the last axis left to right (the order C code adds in)."""
    if values.shape[-1] == 0:
        return np.zeros(values.shape[:-1])
    result: FloatArray = np.cumsum(values, axis=-1)[..., -1]
    return result


def ideal_alpha_gains(
    doc_aspects: AspectArray,
    n_aspects: IntArray,
    sentinel: int,
    rows: IntArray,
    alpha: float,
    depth: int,
) -> FloatArray:
    """Gains of ndeval's greedy ideal ranking, rank by rank, for a batch of topics.

    At each rank the unpicked document with the largest gain is picked; ties go to the first row,
    so rows must list each topic's documents by doc id descending (ndeval keeps the larger
    docno). Only relevant documents need to be listed: a document without aspects has gain 0 and
    never changes later gains. Padding rows (no aspects) score 0 and are equally harmless.

    Args:
        doc_aspects: (n_docs, width) local aspect indices per document, sentinel-padded.
        n_aspects: (n_docs,) number of real entries per row of ``doc_aspects``.
        sentinel: The padding index (at least every topic's number of aspects).
        rows: (topics, candidates) rows of ``doc_aspects`` per topic.
        alpha: Redundancy penalty of alpha-nDCG.
        depth: Number of ranks to fill.

    Returns:
        (topics, depth) gain of the ideal document at each rank (0 once all are placed).
    """
    n_topics, n_candidates = rows.shape
    gains = np.zeros((n_topics, depth))
    if n_topics == 0 or n_candidates == 0 or depth == 0:
        return gains
    columns = sentinel + 1
    offsets = np.arange(n_topics) * columns
    flat_rows = rows.ravel()
    topic_of = np.repeat(offsets, n_candidates)
    # Slot 0 (each doc's first aspect) densely; later slots only where a doc has that many
    # aspects. Adding slot after slot keeps ndeval's left-to-right summation order.
    first = (doc_aspects[flat_rows, 0] + topic_of).astype(np.intp).reshape(n_topics, n_candidates)
    counts = n_aspects[flat_rows]
    later = []
    for slot in range(1, doc_aspects.shape[1]):
        where = np.flatnonzero(counts > slot)
        if len(where) == 0:
            break
        index = doc_aspects[flat_rows[where], slot] + topic_of[where]
        later.append((where, index.astype(np.intp)))
    state = np.ones(n_topics * columns)
    state[sentinel::columns] = 0.0
    blocked = np.zeros((n_topics, n_candidates))
    topics = np.arange(n_topics)
    decay = 1.0 - alpha
    for rank in range(min(depth, n_candidates)):
        scores = state[first]
        flat_scores = scores.reshape(-1)
        for where, index in later:
            flat_scores[where] += state[index]
        scores += blocked
        best = np.argmax(scores, axis=1)
        gains[:, rank] = scores[topics, best]
        blocked[topics, best] = -np.inf
        state[doc_aspects[rows[topics, best]] + offsets[:, None]] *= decay
    return gains


def seen_counts(aspects: AspectArray, sentinel: int) -> tuple[IntArray, BoolArray]:
    """For ranked documents, how often each of their aspects was seen at earlier ranks.

    Args:
        aspects: (topics, ranks, width) local aspect indices, sentinel-padded.

    Returns:
        counts (topics, ranks, width) and the mask of real (non-sentinel) entries.
    """
    n_topics, n_ranks, _ = aspects.shape
    present = np.zeros((n_topics, n_ranks, sentinel + 1), dtype=np.int32)
    present[np.arange(n_topics)[:, None, None], np.arange(n_ranks)[None, :, None], aspects] = 1
    before = np.cumsum(present, axis=1) - present
    counts: IntArray = np.take_along_axis(before, aspects, axis=2)
    valid: BoolArray = aspects != sentinel
    return counts, valid


def alpha_gains(counts: IntArray, valid: BoolArray, alpha: float) -> FloatArray:
    """(topics, ranks) alpha gain of each ranked document: sum of (1-alpha)^seen over aspects."""
    table = decay_table(alpha, counts.shape[1])
    return sequential_sum(np.where(valid, table[counts], 0.0))


def alpha_ndcg(
    run_gains: FloatArray, ideal_gains: FloatArray, actual: IntArray, alpha: float, cutoff: int
) -> FloatArray:
    """alpha-nDCG@cutoff from per-rank gains, normalised exactly as ndeval does.

    ndeval divides both the run's and the ideal's cumulative DCG by an "ideal ideal" DCG (every
    aspect at every rank) before taking their ratio, except at rank 1; repeating that keeps the
    last bit identical. Zero when the run's DCG is 0 or the topic has no actual aspects.
    """
    disc = discounts(cutoff)
    run = np.cumsum(run_gains[:, :cutoff] * disc, axis=1)[:, -1]
    ideal = np.cumsum(ideal_gains[:, :cutoff] * disc, axis=1)[:, -1]
    if cutoff > 1:
        ideal_ideal = np.empty((len(actual), cutoff))
        gain = actual.astype(np.float64)
        for rank in range(cutoff):
            ideal_ideal[:, rank] = gain * disc[rank]
            gain = gain * (1.0 - alpha)
        norm = np.cumsum(ideal_ideal, axis=1)[:, -1]
        safe = np.where(norm > 0, norm, 1.0)
        run = run / safe
        ideal = ideal / safe
    ok = (run != 0) & (ideal > 0) & (actual > 0)
    result: FloatArray = np.where(ok, run / np.where(ideal > 0, ideal, 1.0), 0.0)
    return result


def subtopic_recall(new_aspects: IntArray, actual: IntArray, cutoff: int) -> FloatArray:
    """Distinct aspects covered in the top ``cutoff`` / actual aspects (0 when there are none)."""
    covered = new_aspects[:, :cutoff].sum(axis=1)
    result: FloatArray = np.where(actual > 0, covered / np.maximum(actual, 1), 0.0)
    return result


def precision(relevant: BoolArray, cutoff: int) -> FloatArray:
    """Relevant documents in the top ``cutoff`` / cutoff."""
    result: FloatArray = relevant[:, :cutoff].sum(axis=1) / cutoff
    return result


def binary_ndcg(relevant: BoolArray, n_relevant: IntArray, cutoff: int) -> FloatArray:
    """trec_eval's nDCG@cutoff for binary gains: log2(rank+1) discounts, ideal = all relevant."""
    disc = 1.0 / np.log2(np.arange(2, cutoff + 2))
    dcg = (relevant[:, :cutoff] * disc).sum(axis=1)
    ideal_cum = np.concatenate([[0.0], np.cumsum(disc)])
    ideal = ideal_cum[np.minimum(n_relevant, cutoff)]
    result: FloatArray = np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)
    return result


def budget_walk(costs: IntArray, budget: int) -> BoolArray:
    """Which ranked documents a token budget includes: each in order if it fits what is left.

    A document that does not fit is skipped (never truncated) and later, cheaper ones may still
    fit. Padding entries must carry a cost above the budget.
    """
    n_topics, n_ranks = costs.shape
    left = np.full(n_topics, budget, dtype=np.int64)
    included = np.zeros((n_topics, n_ranks), dtype=bool)
    for rank in range(n_ranks):
        fits = costs[:, rank] <= left
        included[:, rank] = fits
        left -= np.where(fits, costs[:, rank], 0)
    return included


def support_counts(aspects: AspectArray, included: BoolArray, sentinel: int) -> IntArray:
    """(topics, sentinel) number of included documents supporting each aspect."""
    n_topics = aspects.shape[0]
    columns = sentinel + 1
    flat = aspects + (np.arange(n_topics) * columns)[:, None, None]
    weights = np.broadcast_to(included[:, :, None], aspects.shape)
    counts = np.bincount(flat.ravel(), weights=weights.ravel(), minlength=n_topics * columns)
    result: IntArray = counts.reshape(n_topics, columns)[:, :sentinel].astype(np.int64)
    return result


def viewpoint_coverage(support: IntArray, actual: IntArray, graded: bool) -> FloatArray:
    """RVC (an aspect counts once supported) or, ``graded``, RVC2 (1/2 for one supporter)."""
    if graded:
        covered = np.minimum(support, 2).sum(axis=1) / 2.0
    else:
        covered = (support > 0).sum(axis=1).astype(np.float64)
    result: FloatArray = np.where(actual > 0, covered / np.maximum(actual, 1), 0.0)
    return result
