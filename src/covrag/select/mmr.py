"""Maximal Marginal Relevance (Carbonell & Goldstein, SIGIR 1998)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.select._common import best_index, min_max, relevance_rank, unit_rows
from covrag.select.base import SELECTORS, BudgetTracker, Candidates, Selector
from covrag.types import Budget


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

    Example:
        >>> from covrag.select import parse_selector
        >>> parse_selector("mmr(lam=0.7)")
        mmr(lam=0.7)
    """

    name = "mmr"
    lam: float = 0.5

    @property
    def uses_embeddings(self) -> bool:
        return True

    def __post_init__(self) -> None:
        if not 0.0 <= self.lam <= 1.0:
            raise ConfigError(f"mmr: lam must lie in [0, 1], got {self.lam!r}")

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        embeddings, query = candidates.require_embeddings()
        vectors = unit_rows(embeddings)
        if query is not None:
            relevance = vectors @ unit_rows(query)
        else:
            relevance = min_max(candidates.relevance)
        rank = relevance_rank(candidates.relevance)
        n = len(candidates)
        tracker = BudgetTracker(budget, candidates.costs)
        available = np.ones(n, dtype=bool)
        redundancy = np.zeros(n)
        max_sim = np.full(n, -np.inf)
        picked: list[int] = []
        scores: list[float] = []
        while not tracker.full:
            mask = tracker.fitting(available)
            if not mask.any():
                break
            mmr = self.lam * relevance - (1.0 - self.lam) * redundancy
            index = best_index(mmr, mask, rank)
            tracker.add(index)
            available[index] = False
            picked.append(index)
            scores.append(float(mmr[index]))
            np.maximum(max_sim, vectors @ vectors[index], out=max_sim)
            redundancy = max_sim
        return picked, scores
