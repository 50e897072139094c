"""Training data for LMVU: selection states, their candidates and true marginal gains.

On each labelled topic, five strategies are run under a token budget: greedy by dense relevance,
live MMR, two fixed-seed random orders and greedy by true gain. Each run is cut to its first
``max_steps`` picks; every prefix is a state (states reached by several strategies are kept once).
For each state, up to ``candidates_per_state`` unselected passages that still fit the budget are
drawn, and each one's true marginal gain (gold viewpoints it adds that the state lacks) is
computed from the labels. Labels are read only here, never at inference.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from covrag.coverage.gold import GoldCoverage
from covrag.errors import DataError
from covrag.pipeline import PrepareConfig, attach_coverage, prepare
from covrag.select.base import Candidates, Selector
from covrag.select.greedy import GreedyCoverageSelector
from covrag.select.lmvu import feature_state
from covrag.select.mmr import MMRSelector
from covrag.select.topk import RandomSelector, TopKSelector
from covrag.train.lmvu_model import LMVUModel
from covrag.types import Budget, FloatArray, IntArray, Topic

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StateConfig:
    """How training states are generated.

    Attributes:
        budgets: Token budgets to generate states under.
        max_steps: Picks kept per strategy run (the paper's 9).
        candidates_per_state: Candidates drawn per state (the paper's 20).
        seed: Seed of the random strategies and the candidate draw.
    """

    budgets: tuple[int, ...] = (512, 1024, 2048)
    max_steps: int = 9
    candidates_per_state: int = 20
    seed: int = 0


@dataclass(frozen=True)
class TrainingSet:
    """Candidate rows with their features, true gains and state ids."""

    X: FloatArray
    y: FloatArray
    groups: IntArray
    datasets: tuple[str, ...]

    @property
    def n_states(self) -> int:
        return len(np.unique(self.groups))


def strategies(seed: int) -> list[Selector]:
    return [
        TopKSelector(),
        MMRSelector(lam=0.5),
        RandomSelector(seed=seed),
        RandomSelector(seed=seed + 1),
        GreedyCoverageSelector(),  # on the gold labels: greedy by true gain
    ]


def topic_states(
    candidates: Candidates, labels: np.ndarray, config: StateConfig, rng: np.random.Generator
) -> Iterable[tuple[FloatArray, FloatArray]]:
    """Yield (features, true gains) of each distinct state of one topic."""
    seen: set[tuple[int, frozenset[int]]] = set()
    index = {p.id: i for i, p in enumerate(candidates.passages)}
    for budget_tokens in config.budgets:
        budget = Budget(max_tokens=budget_tokens)
        for strategy in strategies(config.seed):
            picks = [index[i] for i in strategy.select(candidates, budget).passage_ids]
            picks = picks[: config.max_steps]
            state = feature_state(candidates, budget_tokens)
            covered = np.zeros(labels.shape[1], dtype=bool)
            for step in range(len(picks) + 1):
                if step:
                    state.add(picks[step - 1])
                    covered |= labels[picks[step - 1]]
                key = frozenset(picks[:step])
                if (budget_tokens, key) in seen:
                    continue
                seen.add((budget_tokens, key))
                left = budget_tokens - state.tokens_used
                pool = np.array(
                    [
                        i
                        for i in range(len(candidates))
                        if i not in key and candidates.costs[i] <= left
                    ],
                    dtype=np.int64,
                )
                if len(pool) < 2:
                    continue
                if len(pool) > config.candidates_per_state:
                    pool = rng.choice(pool, config.candidates_per_state, replace=False)
                gains = (labels[pool] & ~covered).sum(axis=1).astype(np.float64)
                yield state.features(pool), gains


def build_training_set(
    datasets: Sequence[tuple[str, Sequence[Topic]]],
    config: StateConfig | None = None,
    prepare_config: PrepareConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> TrainingSet:
    """States, candidates and gains over labelled topics of one or more datasets."""
    config = config or StateConfig()
    prepare_config = prepare_config or PrepareConfig(pieces=True)
    rng = np.random.default_rng(config.seed)
    rows: list[FloatArray] = []
    gains: list[FloatArray] = []
    groups: list[IntArray] = []
    state_id = 0
    for _, topics in datasets:
        for topic in topics:
            prepared = prepare(topic, None, prepare_config).candidates
            gold = GoldCoverage().estimate(topic)
            candidates = attach_coverage(prepared, gold, topic)
            for features, gain in topic_states(candidates, gold.covered, config, rng):
                rows.append(features)
                gains.append(gain)
                groups.append(np.full(len(gain), state_id, dtype=np.int64))
                state_id += 1
            if progress is not None:
                progress(topic.query_id)
    if not rows:
        raise DataError("no training states: the topics have too few passages")
    return TrainingSet(
        np.concatenate(rows),
        np.concatenate(gains),
        np.concatenate(groups),
        tuple(name for name, _ in datasets),
    )


def fit_lmvu(training: TrainingSet, model: LMVUModel | None = None) -> LMVUModel:
    """Fit an LMVU model (default hyperparameters unless one is given) on a training set."""
    model = model or LMVUModel()
    return model.fit(training.X, training.y, training.groups)
