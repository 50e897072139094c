"""The records of ``covrag-lab cv`` (:mod:`covrag_lab.cv`): its settings, its results and the
dev report beside it.

:class:`CVConfig` says how topics are dealt into folds and chosen by; :class:`CVResult` holds
the procedure's estimate with every setting's figures (:class:`SettingResult`) and every fold
(:class:`FoldResult`); :class:`DevReport` scores the choice on the dev split
(:class:`HoldOut`). Split from :mod:`covrag_lab.cv`, which re-exports them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from covrag.errors import ConfigError
from covrag.pipeline.config import check_resamples
from covrag.registry import check_seed
from covrag.types import Budget

#: Per-topic values: measure spec -> query id -> value.
Values = dict[str, dict[str, float]]


def _help(text: str) -> dict[str, object]:
    return {"help": text}


@dataclass(frozen=True)
class CVConfig:
    """How :func:`run_cv` deals topics into folds, chooses and reports (help in the metadata)."""

    folds: int = field(default=5, metadata=_help("folds (topics are dealt by a seeded shuffle)"))
    seed: int = field(default=0, metadata=_help("seed of the fold shuffle and of the bootstrap"))
    measure: str | None = field(
        default=None, metadata=_help("measure the settings are chosen by (default alpha-nDCG@k)")
    )
    n_resamples: int = field(default=10_000, metadata=_help("bootstrap resamples of each CI"))

    def __post_init__(self) -> None:
        if self.folds < 2:
            raise ConfigError(f"folds must be >= 2, got {self.folds}")
        check_seed("--seed", self.seed)
        check_resamples(self.n_resamples)


@dataclass
class SettingResult:
    """One setting over all topics: each topic's value from the method scored on it (a fitted
    setting: the one fitted on the other folds), with means and intervals."""

    name: str
    fitted: bool
    values: Values
    means: dict[str, float]
    ci: dict[str, tuple[float, float]]
    chosen: int = 0  # folds that chose it
    fitted_methods: list[str] = dataclasses.field(default_factory=list)  # per fold


@dataclass
class FoldResult:
    fold: int
    test_topics: list[str]
    chosen: str
    method: str  # the chosen setting's method (fitted: with its fitted values)
    train_mean: float
    test_mean: float


@dataclass
class CVResult:
    """A cross-validation: the procedure's estimate, every setting's figures, every fold."""

    dataset: str
    budget: Budget
    measure: str
    measures: list[str]
    folds: int
    seed: int
    fold_of: dict[str, int]
    procedure: SettingResult  # the chosen settings' values on their held-out topics
    settings: list[SettingResult]
    fold_results: list[FoldResult]
    coverage_seconds: dict[str, float]

    def to_json(self) -> dict[str, Any]:
        def setting(r: SettingResult) -> dict[str, Any]:
            return {
                "setting": r.name,
                "fitted": r.fitted,
                "chosen_folds": r.chosen,
                "fitted_per_fold": r.fitted_methods,
                "means": r.means,
                "ci95": {k: list(v) for k, v in r.ci.items()},
                "per_query": r.values,
            }

        return {
            "dataset": self.dataset,
            "topics": len(self.fold_of),
            "budget": str(self.budget),
            "measure": self.measure,
            "measures": self.measures,
            "folds": self.folds,
            "seed": self.seed,
            "fold_of": self.fold_of,
            "procedure": setting(self.procedure),
            "settings": [setting(r) for r in self.settings],
            "fold_results": [dataclasses.asdict(f) for f in self.fold_results],
            "coverage_seconds": self.coverage_seconds,
        }


@dataclass(frozen=True)
class HoldOut:
    """A setting chosen (and fitted) on some topics and scored on others: the final check."""

    chosen: str
    method: str
    train_topics: int
    train_mean: float
    values: dict[str, float]  # query id -> value of the chosen measure on the held-out topics

    @property
    def mean(self) -> float:
        return float(np.mean(list(self.values.values())))


@dataclass(frozen=True)
class DevReport:
    """The dev split beside the cross-validation: dev stays the final check.

    Attributes:
        topics: The dev topics.
        settings: Setting name -> mean on dev of the chosen measure (a fitted setting fitted on
            the other topics).
        chosen: The setting chosen (and fitted) on every cross-validated topic, which is what
            would ship; its dev figure is in-sample when dev topics were cross-validated.
        held_out: When dev topics were cross-validated, the setting chosen on the other topics
            alone, scored on dev: a figure with dev held out (None when no other topic is left,
            or when dev was not cross-validated: ``chosen`` is then held out already).
    """

    topics: list[str]
    settings: dict[str, float]
    chosen: HoldOut
    held_out: HoldOut | None
    cross_validated: bool  # whether the dev topics were among the cross-validated ones

    def to_json(self) -> dict[str, Any]:
        def hold(h: HoldOut | None) -> dict[str, Any] | None:
            return None if h is None else {**dataclasses.asdict(h), "mean": h.mean}

        return {
            "topics": self.topics,
            "dev_cross_validated": self.cross_validated,
            "settings": self.settings,
            "chosen_on_all": hold(self.chosen),
            "chosen_without_dev": hold(self.held_out),
        }
