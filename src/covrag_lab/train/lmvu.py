"""Training data for LMVU: selection states, their candidates and true marginal gains.

On each labelled topic, five strategies are run under a token budget: greedy by dense relevance,
live MMR, two fixed-seed random orders and greedy by true gain. Each run is cut to its first
``max_steps`` picks; every prefix is a state (states reached by several strategies are kept once).
For each state, up to ``candidates_per_state`` unselected passages that still fit the budget are
drawn, and each one's true marginal gain (gold viewpoints it adds that the state lacks) is
computed from the labels. Labels are read only here, never at inference.
"""

from __future__ import annotations

import dataclasses
import io
import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from covrag.coverage.gold import GoldCoverage
from covrag.errors import ConfigError, DataError
from covrag.files import atomic_write_bytes
from covrag.pipeline import ContextPolicy, PrepareConfig
from covrag.pipeline.cache import TopicCache
from covrag.pipeline.usecases import estimate
from covrag.selectors.base import Candidates, Selector
from covrag.selectors.greedy import GreedyCoverageSelector
from covrag.selectors.lmvu import LMVUModel, feature_state
from covrag.selectors.mmr import MMRSelector
from covrag.selectors.topk import RandomSelector, TopKSelector
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
    """Candidate rows with their features, true gains, state ids and source datasets.

    Attributes:
        X: (n, 18) features of each candidate row.
        y: (n,) true marginal gains.
        groups: (n,) state id of each row (unique across datasets).
        datasets: Names of the datasets the rows come from.
        source: (n,) index into ``datasets`` of each row.
    """

    X: FloatArray
    y: FloatArray
    groups: IntArray
    datasets: tuple[str, ...]
    source: IntArray

    @property
    def n_states(self) -> int:
        return len(np.unique(self.groups))

    def states_of(self, dataset: str) -> int:
        """Number of states from one dataset."""
        return len(np.unique(self.groups[self.source == self.datasets.index(dataset)]))

    def sample_weight(self, dataset_weights: Mapping[str, float]) -> FloatArray:
        """Per-row weights from per-dataset weights (datasets not named weigh 1).

        Raises:
            ConfigError: a named dataset is not in this training set, or a weight is negative.
        """
        unknown = sorted(set(dataset_weights) - set(self.datasets))
        if unknown:
            raise ConfigError(
                f"dataset weights name {unknown}, which are not in the training set "
                f"({', '.join(self.datasets)})"
            )
        values = np.array([float(dataset_weights.get(d, 1.0)) for d in self.datasets])
        if np.any(values < 0) or not np.all(np.isfinite(values)):
            raise ConfigError(
                f"dataset weights must be finite and >= 0, got {dict(dataset_weights)}"
            )
        result: FloatArray = values[self.source]
        return result

    @classmethod
    def concat(cls, sets: Sequence[TrainingSet]) -> TrainingSet:
        """One training set from several; state ids and sources are renumbered."""
        if not sets:
            raise DataError("no training sets to join")
        groups: list[IntArray] = []
        sources: list[IntArray] = []
        names: list[str] = []
        group_offset = 0
        for part in sets:
            groups.append(part.groups + group_offset)
            group_offset += int(part.groups.max()) + 1 if len(part.groups) else 0
            sources.append(part.source + len(names))
            names.extend(part.datasets)
        return cls(
            np.concatenate([p.X for p in sets]),
            np.concatenate([p.y for p in sets]),
            np.concatenate(groups),
            tuple(names),
            np.concatenate(sources),
        )

    def save(self, path: str | os.PathLike[str], config: StateConfig) -> None:
        """Write to ``.npz`` (atomically), with the state configuration that produced it."""
        buffer = io.BytesIO()
        np.savez(
            buffer,
            X=self.X,
            y=self.y,
            groups=self.groups,
            source=self.source,
            datasets=np.array(self.datasets),
            config=np.array(_config_key(config)),
        )
        atomic_write_bytes(path, buffer.getvalue())

    @classmethod
    def load(cls, path: str | os.PathLike[str], config: StateConfig) -> TrainingSet | None:
        """A saved training set, or None when it was built with a different configuration."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if str(data["config"]) != _config_key(config):
                    return None
                return cls(
                    data["X"],
                    data["y"],
                    data["groups"],
                    tuple(str(d) for d in data["datasets"]),
                    data["source"],
                )
        except (OSError, KeyError, ValueError) as exc:
            raise DataError(
                f"not a covrag LMVU training-state file: {exc}", path=str(path)
            ) from None


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


def _with_gold_coverage(topic: Topic, prepare_config: PrepareConfig) -> Candidates:
    """The topic's whole pool prepared as ``prepare_config`` says (LMVU's features read the
    embeddings and the sentence pieces), with its gold coverage: the estimate use case's
    candidates (before any filter: the policy has none)."""
    policy = ContextPolicy(selector=TopKSelector(), coverage=GoldCoverage())
    return estimate(topic, policy, cache=TopicCache(prepare_config)).candidates


def build_training_set(
    datasets: Sequence[tuple[str, Sequence[Topic]]],
    config: StateConfig | None = None,
    prepare_config: PrepareConfig | None = None,
    progress: Callable[[str], None] | None = None,
) -> TrainingSet:
    """States, candidates and gains over labelled topics of one or more datasets."""
    config = config or StateConfig()
    prepare_config = prepare_config or PrepareConfig(pieces=True)
    rows: list[FloatArray] = []
    gains: list[FloatArray] = []
    groups: list[IntArray] = []
    sources: list[IntArray] = []
    state_id = 0
    for source, (_, topics) in enumerate(datasets):
        # One generator per dataset, so a dataset's states do not depend on what came before it
        # (building datasets together or apart and joining gives the same rows).
        rng = np.random.default_rng(config.seed)
        for topic in topics:
            candidates = _with_gold_coverage(topic, prepare_config)
            assert candidates.coverage is not None
            covered = candidates.coverage.covered
            for features, gain in topic_states(candidates, covered, config, rng):
                rows.append(features)
                gains.append(gain)
                groups.append(np.full(len(gain), state_id, dtype=np.int64))
                sources.append(np.full(len(gain), source, dtype=np.int64))
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
        np.concatenate(sources),
    )


def _config_key(config: StateConfig) -> str:
    """The state settings as stored beside cached states (equal text = same settings)."""
    return json.dumps(dataclasses.asdict(config))


def cached_training_set(
    name: str,
    topics: Sequence[Topic],
    config: StateConfig,
    cache: str | os.PathLike[str] | None,
    progress: Callable[[str], None] | None = None,
) -> TrainingSet:
    """The training set of one dataset, read from ``cache/<name>.npz`` when it was built with
    the same configuration, else built (and written there when ``cache`` is given).

    Building states embeds every sentence of the pool (minutes for paragraph datasets); fitting
    takes seconds, so a cache makes trying weights, controls and features cheap.
    """
    path = None
    if cache is not None:
        path = Path(cache) / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".npz")
        if path.exists():
            cached = TrainingSet.load(path, config)
            if cached is not None and cached.datasets == (name,):
                logger.info("training states of %s read from %s", name, path)
                return cached
    training = build_training_set([(name, topics)], config, progress=progress)
    if path is not None:
        training.save(path, config)
    return training


def fit_lmvu(
    training: TrainingSet,
    model: LMVUModel | None = None,
    dataset_weights: Mapping[str, float] | None = None,
) -> LMVUModel:
    """Fit an LMVU model (default hyperparameters unless one is given) on a training set,
    each dataset's states weighted by ``dataset_weights`` (1 when not named)."""
    model = model or LMVUModel()
    weight = training.sample_weight(dataset_weights or {})
    return model.fit(training.X, training.y, training.groups, sample_weight=weight)
