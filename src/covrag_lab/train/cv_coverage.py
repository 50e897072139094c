"""A coverage cross-encoder trained on each cross-validation fold's training topics.

Choosing an estimator's training data (statements only, or statements and their question forms)
or scoring an estimator on topics it has never seen needs the estimator trained without the
held-out topics. :class:`TrainedCoverage` is a :class:`~covrag_lab.cv.FittedSetting` that
does that: for each fold it trains a cross-encoder on the labelled pairs of the fold's training
topics, in every aspect form it is given (the form the topics are scored in need not be one of
them), exports it to int8 ONNX like the shipped model, and scores the held-out topics with it.

Each fold's model is kept in ``cache/<key>/``, the key a hash of the training topics and every
setting, so a rerun (or another setting over the same training data) reuses it; training
checkpoints as :func:`~covrag_lab.train.coverage.train_cross_encoder` does, so an interrupted run
resumes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from covrag.coverage.cross_encoder import CrossEncoderCoverage, card_value
from covrag.coverage.onnx_model import ONNX_FILE
from covrag.errors import ConfigError
from covrag.pipeline.bench import Method
from covrag.types import Topic
from covrag_lab.cv import TopicScores
from covrag_lab.train.coverage import TrainConfig, shaping_settings, train_cross_encoder
from covrag_lab.train.onnx_export import export_onnx
from covrag_lab.train.pairs import Pair, dataset_pairs

logger = logging.getLogger(__name__)

#: Aspect form name -> query id -> the topic with its aspects in that form.
Forms = Mapping[str, Mapping[str, Topic]]

#: The note a fold model's training card starts its list of training topics with.
CV_NOTE = "trained for cross-validation on topics: "
# A fold's int8 export; "onnx", the folder of exports before the weights were stored as uint8
# (inexact on CPUs without VNNI), is not read: the kept model is exported again.
EXPORT = "onnx-uint8"


def fold_models(cache: Path, forms: Sequence[str] | None = None) -> dict[frozenset[str], Path]:
    """The fold models a :class:`TrainedCoverage` kept in ``cache`` that were trained on
    ``forms`` (None: on any): their training topics -> their int8 ONNX folder (for scoring each
    topic with the model trained without it, e.g. in ``benchmarks/cv_floor.py``)."""
    found: dict[frozenset[str], Path] = {}
    for model in sorted(cache.glob("*/model")):
        onnx = model.parent / EXPORT
        topics = _fold_topics(model)
        trained_on = tuple(card_value(model, "train_pairs") or ())
        if topics and (forms is None or trained_on == tuple(forms)) and onnx.is_dir():
            found[frozenset(topics)] = onnx
    return found


def _fold_topics(model: Path) -> list[str]:
    """The training topics a fold model's card names (none: not a finished fold model)."""
    notes = card_value(model, "notes") or []
    topics = [n[len(CV_NOTE) :] for n in notes if n.startswith(CV_NOTE)]
    return topics[-1].split(", ") if topics else []


@dataclass(frozen=True)
class TrainedCoverage:
    """``method``'s selector over a cross-encoder trained per fold on ``train_forms``.

    Args:
        method: The selector and aspect source; its estimator must be a cross-encoder (its
            ``model`` is replaced by each fold's).
        forms: Every aspect form's topics (``statements``, ``questions``), by query id.
        train_forms: The forms whose pairs the model is trained on.
        config: Training settings (``base_model``: the stage to start from).
        neg_ratio: At most this many negatives per positive per topic (None = all).
        cache: Folder keeping each fold's model.
    """

    method: Method
    forms: Forms
    train_forms: tuple[str, ...]
    config: TrainConfig
    cache: Path
    neg_ratio: float | None = 4.0

    def __post_init__(self) -> None:
        if not isinstance(self.method.coverage, CrossEncoderCoverage):
            raise ConfigError(f"{self.method.name!r}: a trained setting needs a cross-encoder")
        unknown = [f for f in self.train_forms if f not in self.forms]
        if unknown or not self.train_forms:
            raise ConfigError(
                f"cannot train on {'+'.join(self.train_forms) or 'nothing'}: the forms are "
                f"{', '.join(self.forms)}"
            )

    @property
    def name(self) -> str:
        base = Path(self.config.base_model).name if self.config.base_model else "MiniLM"
        forms = "+".join(self.train_forms)
        return f"{self.method.name}, trained per fold on {forms} from {base}"

    def fit(self, train: Sequence[str], scores: TopicScores) -> Method:
        model = self.model_for(train)
        coverage = dataclasses.replace(self.method.coverage, model=str(model))  # type: ignore[type-var]
        return dataclasses.replace(self.method, coverage=coverage)

    def model_for(self, train: Sequence[str]) -> Path:
        """The int8 ONNX folder of the model trained on ``train`` (trained on first use)."""
        key = self.key(train)
        folder = self.cache / key
        onnx = folder / EXPORT
        if (onnx / ONNX_FILE).is_file():
            return onnx
        if _fold_topics(folder / "model") != sorted(train):  # no finished model kept
            pairs = self.pairs(train)
            logger.info("training fold model %s on %d topics", key, len(train))
            card = train_cross_encoder(pairs, folder / "model", self.config)
            card.notes.append(CV_NOTE + ", ".join(sorted(train)))
            card.save(folder / "model")
        staged = folder / f"{EXPORT}.partial"
        if staged.exists():
            shutil.rmtree(staged)
        export_onnx(folder / "model", staged)
        staged.rename(onnx)
        return onnx

    def pairs(self, train: Sequence[str]) -> dict[str, list[Pair]]:
        """Each training form's labelled pairs of the ``train`` topics."""
        return {
            form: dataset_pairs(
                [self.forms[form][q] for q in train],
                max_negatives_per_positive=self.neg_ratio,
                seed=self.config.seed,
            )
            for form in self.train_forms
        }

    def key(self, train: Sequence[str]) -> str:
        """The cache key: the training topics, their aspects' texts and every setting."""
        digest = hashlib.sha256()
        head = {
            "settings": shaping_settings(self.config),
            "neg_ratio": self.neg_ratio,
            "forms": self.train_forms,
        }
        digest.update(json.dumps(head, sort_keys=True).encode())
        for form in self.train_forms:
            for query_id in sorted(train):
                topic = self.forms[form][query_id]
                digest.update(query_id.encode())
                digest.update("\x1f".join(a.text for a in topic.aspects).encode())
        return digest.hexdigest()[:16]
