"""LMVU: budgeted selection by a learned linear scorer of marginal viewpoint utility.

From an empty context, repeatedly score every candidate that still fits the remaining budget with
the 18 state features (:mod:`covrag.selectors.lmvu.features`) and a fitted linear model, pick the
best (ties by relevance), update the state, and stop when nothing fits. Passages are never
truncated and labels are never read. Source: the LMVU paper's method (see docs/METHODS summary
in the repo).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.selectors.base import EMBEDDINGS, PIECES, SELECTORS, Candidates, Input, Selector
from covrag.selectors.lmvu.features import FeatureState
from covrag.selectors.lmvu.model import LMVUModel, load_model
from covrag.selectors.optimize import greedy
from covrag.types import Budget, FloatArray, IntArray


def feature_state(candidates: Candidates, max_tokens: int | None) -> FeatureState:
    """A fresh LMVU feature state over a candidate pool (needs passage and piece embeddings)."""
    embeddings, query_embedding = candidates.require_embeddings()
    if query_embedding is None:
        raise ConfigError("LMVU needs the query embedding (use dense relevance)")
    pieces, owner = candidates.piece_embeddings, candidates.piece_owner
    if pieces is None or owner is None:
        # No sentence embeddings given: each passage is its own single atomic piece.
        pieces, owner = embeddings, np.arange(len(candidates), dtype=np.int64)
    return FeatureState(
        embeddings,
        query_embedding,
        candidates.relevance,
        candidates.costs,
        pieces,
        owner,
        max_tokens,
    )


class LearnedUtility:
    """LMVU's model score of each candidate in the current state, as a greedy objective.

    A learned score, not a set function: it can be negative and never saturates (``floor`` is
    ``-inf``), so every fitting candidate is ranked.
    """

    floor = -np.inf
    submodular = False

    def __init__(self, model: LMVUModel, state: FeatureState) -> None:
        self.model = model
        self.state = state

    def gains(self, indices: IntArray) -> FloatArray:
        return self.model.decision_function(self.state.features())[indices]

    def add(self, index: int) -> None:
        self.state.add(index)


@SELECTORS.register
@dataclass(frozen=True, repr=False)
class LMVUSelector(Selector):
    """Greedy selection by a fitted LMVU model.

    Args:
        model: Path of a model JSON written by ``covrag-lab fit lmvu``; None for the shipped
        default.
    """

    name = "lmvu"
    model: str | None = None

    @property
    def reads(self) -> tuple[Input, ...]:
        return (Input(EMBEDDINGS), Input(PIECES))

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        objective = LearnedUtility(
            load_model(self.model), feature_state(candidates, budget.max_tokens)
        )
        return greedy(objective, candidates, budget)
