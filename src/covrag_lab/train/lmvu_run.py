"""Fit LMVU on labelled datasets and save the model with its card: what ``covrag-lab fit lmvu``
runs.

Training states are built per dataset (or read from a cache folder), concatenated, and the
linear scorer is fitted on them with each dataset's states weighted as asked.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from covrag.errors import ConfigError
from covrag.selectors.lmvu import LMVUModel
from covrag.types import Topic
from covrag_lab.train.lmvu import StateConfig, TrainingSet, cached_training_set, fit_lmvu


@dataclass(frozen=True)
class LMVUFit:
    """A fitted model, the states it was fitted on, and the seconds each part took."""

    model: LMVUModel
    training: TrainingSet
    states_seconds: float
    fit_seconds: float


def check_weights(weights: Mapping[str, float], datasets: Sequence[str]) -> None:
    """Every weighted dataset must be one of those fitted on."""
    unknown = sorted(set(weights) - set(datasets))
    if unknown:
        raise ConfigError(f"--dataset-weight names {unknown}, not among --dataset")


def fit_lmvu_datasets(
    datasets: Mapping[str, Sequence[Topic]],
    out: Path,
    model: LMVUModel,
    config: StateConfig,
    *,
    weights: Mapping[str, float] | None = None,
    states_cache: Path | None = None,
    on_topic: Callable[[str], None] | None = None,
) -> LMVUFit:
    """Build (or read) the training states of each dataset, fit ``model`` and save it to ``out``
    with a card naming the data, weights, budgets and timings.

    Args:
        datasets: Dataset name -> its labelled topics.
        out: Model JSON to write.
        model: The unfitted model (its hyperparameters and feature set).
        config: How training states are generated.
        weights: Dataset name -> weight of its states (1 when not named).
        states_cache: Folder keeping each dataset's states between runs.
        on_topic: Called after each topic's states are built.
    """
    weights = dict(weights or {})
    check_weights(weights, list(datasets))
    started = time.perf_counter()
    training = TrainingSet.concat(
        [
            cached_training_set(name, topics, config, states_cache, on_topic)
            for name, topics in datasets.items()
        ]
    )
    states_seconds = time.perf_counter() - started
    fit_started = time.perf_counter()
    fit_lmvu(training, model, weights)
    fit_seconds = time.perf_counter() - fit_started
    model.save(
        out,
        datasets=list(datasets),
        dataset_weights={d: weights.get(d, 1.0) for d in datasets},
        states_per_dataset={d: training.states_of(d) for d in datasets},
        budgets=list(config.budgets),
        max_steps=config.max_steps,
        candidates_per_state=config.candidates_per_state,
        seed=config.seed,
        states=training.n_states,
        candidates=len(training.y),
        pairs=model.n_pairs_,
        seconds_states=round(states_seconds, 2),
        seconds_fit=round(fit_seconds, 3),
    )
    return LMVUFit(model, training, states_seconds, fit_seconds)
