"""LMVU: budgeted selection by a learned linear scorer of marginal viewpoint utility.

From an empty context, repeatedly score every candidate that still fits the remaining budget with
the 18 state features (:mod:`covrag.select.lmvu_features`) and a fitted linear model, pick the best
(ties by relevance), update the state, and stop when nothing fits. Passages are never truncated and
labels are never read. Source: the LMVU paper's method (see docs/METHODS summary in the repo).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from covrag.errors import ConfigError
from covrag.select._common import best_index, relevance_rank
from covrag.select.base import SELECTORS, BudgetTracker, Candidates, Selector
from covrag.select.lmvu_features import FeatureState
from covrag.train.lmvu_model import LMVUModel
from covrag.types import Budget


def default_model_path() -> Path:
    """The LMVU model fitted on the bundled train splits, shipped with the package."""
    return Path(str(resources.files("covrag") / "models" / "lmvu-default.json"))


@functools.cache
def load_model(path: str | None) -> LMVUModel:
    """Load (once per process) an LMVU model JSON; None for the shipped default."""
    file = default_model_path() if path is None else Path(path)
    if not file.exists():
        raise ConfigError(f"no LMVU model at {file} (fit one with `covrag fit lmvu`)")
    return LMVUModel.load(file)


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


@SELECTORS.register
@dataclass(frozen=True, repr=False)
class LMVUSelector(Selector):
    """Greedy selection by a fitted LMVU model.

    Args:
        model: Path of a model JSON written by ``covrag fit lmvu``; None for the shipped default.
    """

    name = "lmvu"
    model: str | None = None

    @property
    def uses_embeddings(self) -> bool:
        return True

    @property
    def uses_pieces(self) -> bool:
        return True

    def _select(self, candidates: Candidates, budget: Budget) -> tuple[list[int], list[float]]:
        scorer = load_model(self.model)
        state = feature_state(candidates, budget.max_tokens)
        tracker = BudgetTracker(budget, candidates.costs)
        rank = relevance_rank(candidates.relevance)
        available = np.ones(len(candidates), dtype=bool)
        picked: list[int] = []
        scores: list[float] = []
        while not tracker.full:
            fitting = tracker.fitting(available)
            if not fitting.any():
                break
            values = scorer.decision_function(state.features())
            index = best_index(values, fitting, rank)
            tracker.add(index)
            state.add(index)
            available[index] = False
            picked.append(index)
            scores.append(float(values[index]))
        return picked, scores
