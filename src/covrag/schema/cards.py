"""Model cards: what a trained model was trained on and how, saved beside it as JSON.

- :class:`CoverageTrainingCard`: ``training_card.json`` of ``covrag-lab train coverage`` (one run:
  its settings, pairs per source, steps, seconds, dev figures, the calibrated threshold);
- :class:`CoverageModelCard`: the card of any cross-encoder folder as the estimator reads it
  (a trained folder's, or the shipped model's, which lists its training ``stages`` and the
  settings chosen on dev: thresholds, assignment, power);
- :class:`SamePointCard`: ``training_card.json`` of a same-point bi-encoder;
- :class:`CoverCard`: ``training_card.json`` of ``covrag-lab train cover``;
- :class:`PlannerDataCard` and :class:`PlannerTrainCard`: ``card.json`` of the planner's data
  and of its SFT/DPO training;
- :class:`LMVUModelFile`: an LMVU model file, its training card inside.

A card is validated when it is written (:meth:`_Card.save`, :func:`write_card`: nothing is
written when a value breaks its schema) and when it is read (:func:`read_card`: a bad value
raises :class:`~covrag.errors.DataError` naming the file and the field). Keys a card's model does
not name (``format``, a stage's ``command``) are kept as they are.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from covrag.files import atomic_write_text
from covrag.schema._base import RecordError, read_model
from covrag.schema._json import read_json_file

#: The file name of a trained model's card inside its folder.
TRAINING_CARD = "training_card.json"

C = TypeVar("C", bound=BaseModel)


class _Card(BaseModel):
    """A card written with :meth:`save` (every field, in order, as ``dataclasses.asdict`` did)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)

    def save(self, folder: str | os.PathLike[str], name: str = TRAINING_CARD) -> None:
        """Write the card, validated, into ``folder`` (atomically)."""
        checked = read_model(
            type(self), self.model_dump(warnings=False), path=str(Path(folder) / name)
        )
        text = json.dumps(checked.model_dump(), indent=2) + "\n"
        atomic_write_text(Path(folder) / name, text)

    @classmethod
    def read(cls, folder: str | os.PathLike[str], name: str = TRAINING_CARD) -> Self | None:
        """The card in ``folder`` (None when there is none); DataError naming a bad field."""
        path = Path(folder) / name
        if not path.is_file():
            return None
        return read_card(cls, path)


class CoverageTrainingCard(_Card):
    """One run of ``covrag-lab train coverage``."""

    config: dict[str, Any] = Field(description="TrainConfig's fields")
    train_pairs: dict[str, int] = Field(description="training pairs per source")
    steps: int
    seconds: float
    truncated_pairs: int = Field(description="pairs cut to the model's token limit")
    train_roc_auc: float | None = Field(
        default=None, description="ROC-AUC on a sample of its own training pairs"
    )
    dev: dict[str, dict[str, float]] = Field(default={}, description="dev figures per dataset")
    threshold: float | None = Field(default=None, description="calibrated on dev")
    notes: list[str] = []


class CoverageModelCard(_Card):
    """The card of a cross-encoder folder, as :class:`~covrag.coverage.CrossEncoderCoverage`
    reads it: the settings chosen on dev (None where the card has none)."""

    stages: list[CoverageTrainingCard] = Field(default=[], description="training runs, in order")
    threshold: float | None = None
    question_threshold: float | None = None
    assignment: str | None = None
    power: float | None = None
    pair_threshold: float | None = None
    passage_header: str | None = Field(
        default=None,
        description='"title": the model reads a passage that has a title as "{title}: {text}" '
        "(:func:`covrag.coverage.cross_encoder.passage_input`); None: the text alone",
    )
    train_pairs: dict[str, int] | None = None
    notes: list[str] = []


class SamePointCard(_Card):
    """What a same-point bi-encoder was trained on and how."""

    config: dict[str, Any]
    train_topics: dict[str, int] = Field(description="training topics per dataset")
    steps: int
    seconds: float
    losses: list[float] = Field(description="mean loss of each 20 steps")
    notes: list[str] = []


class CoverCard(_Card):
    """What a CoveR training run used and how long it took."""

    config: dict[str, Any]
    examples: dict[str, dict[str, int]] = Field(description="source -> kind -> triplets")
    steps: int
    seconds: float
    loss_first: float = Field(description="mean over the first quarter of steps (at most 20)")
    loss_last: float = Field(description="mean over the last quarter of steps (at most 20)")
    notes: list[str] = []


class FailedRequest(BaseModel):
    request_id: str
    error: str


class PlannerDataCard(BaseModel):
    """``card.json`` of the planner data: who wrote and judged it, counts and histograms."""

    model_config = ConfigDict(extra="allow")

    teacher: str | None = None
    judge: str | None = None
    config: dict[str, Any] = {}
    requests: int
    failed: list[FailedRequest]
    judged_requests: int
    sft_examples: int
    dpo_pairs: int
    kinds: dict[str, int]
    score_histogram: dict[str, dict[str, int]]
    mean_candidate_score_by_kind: dict[str, float | None]
    mean_random_score: float | None


class PlannerTrainCard(BaseModel):
    """``card.json`` of planner training: the base model, the data, and each stage's figures."""

    model_config = ConfigDict(extra="allow")

    base_model: str = Field(description="the model SFT started from (what eval-planner reads)")
    config: dict[str, Any] = {}
    data: str = Field(default="", description="the planner data folder")
    sft_examples: int = 0
    dpo_pairs: int = 0
    threads: int = 0
    versions: dict[str, str] = Field(default={}, description="package -> version")
    sft: dict[str, Any] = Field(default={}, description="the SFT stage's figures")
    dpo: dict[str, Any] | None = Field(default=None, description="the DPO stage's (null: none)")


def write_card(model: type[BaseModel], card: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """Validate the plain card ``card`` as ``model`` and write it, as it is, to ``path``."""
    read_model(model, card, path=str(path))
    atomic_write_text(Path(path), json.dumps(card, indent=2) + "\n")


def read_card(model: type[C], path: str | os.PathLike[str]) -> C:
    """The card at ``path`` as ``model``.

    Raises:
        DataError: not JSON, or a value that breaks the schema (naming the file and field).
    """
    return read_model(model, read_json_file(path), path=str(path))


#: The format tag of an LMVU model file.
LMVU_FORMAT = "covrag-lmvu/1"


class LMVUModelFile(BaseModel):
    """An LMVU model (``covrag-lab fit lmvu``, the shipped ``lmvu-default.json``): its parameters,
    the standardisation and weights of each feature, and a free-form training card."""

    format: str = Field(description=f"always {LMVU_FORMAT}")
    params: dict[str, Any] = Field(description="the model's constructor parameters")
    feature_names: list[str]
    mean: list[float] = Field(description="per feature, the training mean")
    scale: list[float] = Field(description="per feature, the training standard deviation")
    coef: list[float] = Field(description="per feature, the learned weight")
    n_pairs: int
    n_states: int
    card: dict[str, Any] = Field(default={}, description="what it was fitted on, and how")

    @field_validator("format", mode="before")
    @classmethod
    def _format(cls, value: Any) -> Any:
        if value != LMVU_FORMAT:  # checked first: another file is named as such
            raise ValueError(f"not an LMVU model ({LMVU_FORMAT!r} expected)")
        return value

    @model_validator(mode="after")
    def _check(self) -> LMVUModelFile:
        width = len(self.feature_names)
        for name in ("mean", "scale", "coef"):
            if len(getattr(self, name)) != width:
                raise RecordError(name, f"must hold one number per feature ({width})")
        return self
