"""The 18 features of LMVU (learned marginal viewpoint utility), computed incrementally.

For every candidate, given what is already selected:

- candidate (4): retriever score, cosine to the query, length in tokens, number of atomic pieces;
- candidate vs selection (5): max, mean and min cosine to the selected items, novelty
  ``1 - max``, dot product with the mean selected vector;
- atomic level (5): for each piece of the candidate (its sentences, as
  :func:`covrag.text.split_sentences` splits them), ``m_a`` = its max cosine to any selected
  piece; mean ``m_a``, max ``m_a``, ``1 - max m_a``, mean ``1 - m_a``, max ``1 - m_a``;
- selection (4): items selected, tokens used, tokens left, mean retriever score of the selection
  (the same for every candidate of a state, so their weights come out near 0).

With nothing selected, similarities are 0 and novelties 1. The state keeps running statistics per
candidate (max, min and sum of cosines, the sum of selected vectors, each piece's max cosine), so
each pick costs one pass over the candidates and their pieces; no pool x pool similarity matrix is
ever built.
"""

from __future__ import annotations

import numpy as np

from covrag.types import BoolArray, FloatArray, IntArray

FEATURES: tuple[str, ...] = (
    "retriever_score",
    "query_cosine",
    "length",
    "n_pieces",
    "max_sim",
    "mean_sim",
    "min_sim",
    "novelty",
    "dot_mean_selected",
    "piece_mean_max_sim",
    "piece_max_max_sim",
    "piece_one_minus_max",
    "piece_mean_novelty",
    "piece_max_novelty",
    "n_selected",
    "tokens_used",
    "tokens_left",
    "mean_selected_score",
)
STATIC = slice(0, 4)
STATE = slice(4, 18)
M0_FEATURES = ("retriever_score", "query_cosine", "length")


class FeatureState:
    """Running LMVU state over one candidate pool.

    Args:
        embeddings: (n, d) unit passage embeddings.
        query_embedding: (d,) unit query embedding.
        scores: (n,) retriever scores.
        costs: (n,) token costs.
        piece_embeddings: (p, d) unit embeddings of all atomic pieces.
        piece_owner: (p,) index of the passage each piece belongs to, non-decreasing, every
            passage owning at least one piece.
        max_tokens: The token budget (for ``tokens_left``); None = no token limit.
    """

    def __init__(
        self,
        embeddings: FloatArray,
        query_embedding: FloatArray,
        scores: FloatArray,
        costs: IntArray,
        piece_embeddings: FloatArray,
        piece_owner: IntArray,
        max_tokens: int | None,
    ) -> None:
        n = embeddings.shape[0]
        counts = np.bincount(piece_owner, minlength=n)
        if len(piece_owner) and np.any(np.diff(piece_owner) < 0):
            raise ValueError("piece_owner must be sorted by passage")
        if n and counts.min() < 1:
            raise ValueError("every passage needs at least one atomic piece")
        self.embeddings = embeddings
        self.pieces = piece_embeddings
        self.owner = piece_owner
        self.starts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.int64)
        self.counts = counts.astype(np.float64)
        self.static = np.column_stack(
            (scores, embeddings @ query_embedding, costs.astype(np.float64), self.counts)
        )
        self.scores = scores
        self.costs = costs
        self.max_tokens = max_tokens
        self.max_sim = np.zeros(n)
        self.min_sim = np.zeros(n)
        self.sum_sim = np.zeros(n)
        self.sum_vector = np.zeros(embeddings.shape[1])
        self.piece_max = np.zeros(len(piece_owner))
        self.selected: list[int] = []
        self.tokens_used = 0
        self.score_sum = 0.0

    def add(self, index: int) -> None:
        """Update the running statistics after selecting passage ``index``."""
        sims = self.embeddings @ self.embeddings[index]
        if self.selected:
            np.maximum(self.max_sim, sims, out=self.max_sim)
            np.minimum(self.min_sim, sims, out=self.min_sim)
        else:
            self.max_sim[:] = sims
            self.min_sim[:] = sims
        self.sum_sim += sims
        self.sum_vector += self.embeddings[index]
        own = self.pieces[self.owner == index]
        piece_sims = (self.pieces @ own.T).max(axis=1)
        if self.selected:
            np.maximum(self.piece_max, piece_sims, out=self.piece_max)
        else:
            self.piece_max[:] = piece_sims
        self.selected.append(index)
        self.tokens_used += int(self.costs[index])
        self.score_sum += float(self.scores[index])

    def features(self, rows: IntArray | BoolArray | None = None) -> FloatArray:
        """(n, 18) features of every candidate (or of ``rows``) in the current state."""
        n = self.embeddings.shape[0]
        k = len(self.selected)
        out = np.empty((n, len(FEATURES)))
        out[:, STATIC] = self.static
        if k:
            out[:, 4] = self.max_sim
            out[:, 5] = self.sum_sim / k
            out[:, 6] = self.min_sim
            out[:, 8] = self.embeddings @ (self.sum_vector / k)
            m = self.piece_max
            mean_m = np.add.reduceat(m, self.starts) / self.counts
            max_m = np.maximum.reduceat(m, self.starts)
            min_m = np.minimum.reduceat(m, self.starts)
        else:
            out[:, [4, 5, 6, 8]] = 0.0
            mean_m = max_m = min_m = np.zeros(n)
        out[:, 7] = 1.0 - out[:, 4]
        out[:, 9] = mean_m
        out[:, 10] = max_m
        out[:, 11] = 1.0 - max_m
        out[:, 12] = 1.0 - mean_m
        out[:, 13] = 1.0 - min_m
        out[:, 14] = k
        out[:, 15] = self.tokens_used
        left = (self.max_tokens - self.tokens_used) if self.max_tokens is not None else 0
        out[:, 16] = left
        out[:, 17] = self.score_sum / k if k else 0.0
        return out if rows is None else out[rows]
