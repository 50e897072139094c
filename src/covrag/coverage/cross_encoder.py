"""Cross-encoder coverage: a model reads each (passage, aspect) pair and says whether it covers it.

The default model is covrag's own coverage cross-encoder, fine-tuned from the packaged MiniLM on
the bundled train splits (``covrag-lab train coverage``) and shipped inside the package; any
sentence-transformers ``CrossEncoder`` name or local path works too. Pairs are scored once (repeated
pairs across calls come from a cache), in batches of similar length, and pairs longer than the
model's limit are counted and reported, never cut silently.
"""

from __future__ import annotations

import functools
import logging
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, cast

import numpy as np

from covrag.coverage.base import ESTIMATORS, CoverageEstimator, best_of, expand_answers
from covrag.coverage.onnx_model import OnnxPairScorer
from covrag.deadline import check_deadline, current_deadline
from covrag.errors import ConfigError, MissingExtraError
from covrag.schema.cards import CoverageModelCard
from covrag.text import is_question
from covrag.types import CoverageMatrix, FloatArray, Passage, Topic

logger = logging.getLogger(__name__)

#: The least probability, read by the model with the sketch as the passage, at which an aspect's
#: answer sketch counts (0.5: chosen by five-fold CV on ArgKP's question-form key points,
#: docs/experiments/20-question-aware-coverage.md).
ANSWERS_GATE = 0.5


def default_model_path() -> Path:
    """The coverage cross-encoder shipped with covrag."""
    return Path(str(resources.files("covrag") / "models" / "coverage-minilm"))


def card_value(path: Path, key: str) -> Any:
    """A setting chosen on dev and stored in a model's training card (None when absent)."""
    if not path.is_dir():
        return None
    card = CoverageModelCard.read(path)
    return None if card is None else getattr(card, key)


#: The passage headers a model card may ask for (``passage_header``).
PASSAGE_HEADERS = ("title",)


def passage_input(passage: Passage, header: str | None) -> str:
    """What the model reads of ``passage``: with ``header="title"`` and a ``title`` in its
    metadata (a document's passages have one), ``"{title}: {text}"``, so that the model can tell
    which tool or module a passage documents (``curl.1: --keepalive-time ...``); else the text."""
    if header == "title":
        title = passage.metadata.get("title")
        if isinstance(title, str) and title.strip():
            return f"{title.strip()}: {passage.text}"
    return passage.text


def _check_model_path(model: str) -> None:
    """Refuse a model that names a path (absolute, relative, or with a folder in it) where there
    is no folder: the loader would say only "not found", or look for it on a hub."""
    path = Path(model).expanduser()
    looks_like_path = path.is_absolute() or model.startswith((".", "~")) or model.count("/") > 1
    if path.exists() and not path.is_dir():
        raise ConfigError(f"cross-encoder model {model!r} is a file, not a model folder")
    if looks_like_path and not path.exists():
        raise ConfigError(f"cross-encoder model {model!r}: no such folder")


class PairScorer:
    """Scores (passage, aspect) pairs once each, caching scores per pair.

    A folder holding ``*.onnx`` and ``tokenizer.json`` runs on ONNX Runtime
    (:class:`~covrag.coverage.onnx_model.OnnxPairScorer`); anything else is loaded as a
    sentence-transformers ``CrossEncoder`` (a name, or a Hugging Face model folder).
    """

    def __init__(self, model: str, batch_size: int, max_length: int, cache_size: int) -> None:
        self.batch_size = batch_size
        self.max_length = max_length
        self._cache: OrderedDict[tuple[str, str], float] = OrderedDict()
        self._cache_size = cache_size
        folder = Path(model)
        self._onnx: OnnxPairScorer | None = None
        self._model: Any = None
        if folder.is_dir() and any(folder.glob("*.onnx")):
            self._onnx = OnnxPairScorer(folder, max_length=max_length, batch_size=batch_size)
            self.backend = "onnxruntime"
            return
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:
            raise MissingExtraError("sentence-transformers", "embed") from exc
        from covrag.embed import quiet_transformers

        quiet_transformers()
        _check_model_path(model)
        # A local folder is never looked up on a hub (told to this load, not to the process).
        try:
            self._model = CrossEncoder(
                model, device="cpu", max_length=max_length, local_files_only=folder.is_dir()
            )
        except (OSError, ValueError) as exc:  # transformers' "not a model" errors
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ConfigError(
                f"cross-encoder model {model!r} did not load: {reason} (give a "
                "sentence-transformers CrossEncoder name or folder, or an ONNX export)"
            ) from exc
        self.backend = "sentence-transformers"

    def score(self, pairs: Sequence[tuple[str, str]]) -> tuple[FloatArray, int, int]:
        """Probabilities of ``pairs``; also the number actually scored and how many were cut."""
        todo = [p for p in dict.fromkeys(pairs) if p not in self._cache]
        truncated = 0
        if todo:
            lengths = self.lengths(todo)
            truncated = int((lengths > self.max_length).sum())
            values = self._predict(todo, lengths)
            for pair, value in zip(todo, values, strict=True):
                self._cache[pair] = float(value)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        values = np.array([self._cache[p] for p in pairs], dtype=np.float64)
        return np.clip(values, 0.0, 1.0), len(todo), truncated

    def _predict(self, pairs: list[tuple[str, str]], lengths: np.ndarray[Any, Any]) -> FloatArray:
        if self._onnx is not None:
            return self._onnx.predict(pairs)
        order = np.argsort(-lengths, kind="stable")  # batches of similar length
        ordered = [pairs[i] for i in order]
        # Under a deadline, predict a few batches at a time and check it in between; without
        # one, one call, as before (covrag.deadline).
        step = len(ordered) if current_deadline() is None else self.batch_size * 4
        scores: list[FloatArray] = []
        for start in range(0, len(ordered), max(step, 1)):
            check_deadline()
            chunk = self._model.predict(
                ordered[start : start + step],
                batch_size=self.batch_size,
                show_progress_bar=False,
                convert_to_numpy=True,
            )
            scores.append(np.asarray(chunk, dtype=np.float64).reshape(-1))
        result = np.empty(len(pairs))
        result[order] = np.concatenate(scores) if scores else np.zeros(0)
        return result

    def lengths(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray[Any, np.dtype[np.int64]]:
        if self._onnx is not None:
            return self._onnx.lengths(pairs)
        encoded = self._model.tokenizer(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            add_special_tokens=True,
            truncation=False,
            verbose=False,
        )
        return np.array([len(ids) for ids in encoded["input_ids"]], dtype=np.int64)


@functools.cache
def _scorer(model: str, batch_size: int, max_length: int) -> PairScorer:
    return PairScorer(model, batch_size, max_length, cache_size=500_000)


def clear_scorers() -> None:
    """Forget every loaded pair scorer and its cached scores (benchmarks time cold estimates)."""
    _scorer.cache_clear()


@ESTIMATORS.register
@dataclass(frozen=True, repr=False)
class CrossEncoderCoverage(CoverageEstimator):
    """P[p, a] = a cross-encoder's probability that passage p covers aspect a.

    Args:
        model: sentence-transformers CrossEncoder name or path; None for covrag's shipped model.
        threshold: Probability at or above which a pair counts as covered; None = the threshold
            chosen on dev and stored with the model (0.5 when it has none).
        batch_size: Pairs per forward pass.
        max_length: Token limit per pair; longer pairs are cut by the model and reported.
        question_threshold: The threshold of aspects worded as questions (ending with ``?``):
            the model is less sure of a passage against a question than against a statement
            of the same point. None = the one stored with the model (the shipped model's 0.3
            was chosen by five-fold cross-validation of F1 on ArgKP's labelled pairs,
            docs/experiments/20-question-aware-coverage.md), and when ``threshold`` is given, or
            the model stores none, ``threshold`` for every aspect.

    Every pair is judged on its own against its threshold, and an aspect's answer sketches
    (:attr:`~covrag.types.Aspect.answers`) are scored beside its text, each passage keeping its
    best, a sketch counting only when the model, reading it as a passage, gives it at least
    :data:`ANSWERS_GATE` of covering the aspect (the check of section 20 of the experiment log).
    Blending in the bi-encoder's cosine, capping a passage at its best aspect and other gate
    values lost their cross-validated comparisons there and were removed (issue 33).
    """

    name = "cross-encoder"
    model: str | None = None
    threshold: float | None = None
    batch_size: int = 64
    max_length: int = 256
    question_threshold: float | None = None

    def __post_init__(self) -> None:
        for name in ("threshold", "question_threshold"):
            value = getattr(self, name)
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must lie in [0, 1], got {value}")

    def model_pairs(self, n_passages: int, n_columns: int) -> int:
        return n_passages * n_columns

    def scorer(self) -> PairScorer:
        """The model's pair scorer, loaded once per process: ``scorer().score(pairs)`` gives the
        raw probability of each (passage text, aspect text) pair, with no threshold, sketch or
        column logic (what the citation check and the benchmarks read)."""
        return _scorer(self.model_path(), self.batch_size, self.max_length)

    def model_path(self) -> str:
        if self.model is not None:
            return self.model
        path = default_model_path()
        if not any(path.glob("*.onnx")):
            raise ConfigError(
                f"covrag's coverage cross-encoder is missing from {path}; reinstall covrag or "
                "train one with `covrag-lab train coverage`"
            )
        return str(path)

    def resolved_threshold(self) -> float:
        if self.threshold is not None:
            return self.threshold
        stored = card_value(Path(self.model_path()), "threshold")
        return 0.5 if stored is None else float(stored)

    def header(self) -> str | None:
        """The passage header the model was trained with (its card's ``passage_header``)."""
        value = card_value(Path(self.model_path()), "passage_header")
        if value is not None and value not in PASSAGE_HEADERS:
            raise ConfigError(
                f"{self.model_path()}: passage_header {value!r} is not one of {PASSAGE_HEADERS}"
            )
        return cast(str | None, value)

    def resolved_question_threshold(self) -> float | None:
        """The threshold of question-worded aspects (None: the same as every other's)."""
        if self.question_threshold is not None:
            return self.question_threshold
        if self.threshold is not None:  # a threshold given by the user holds for every aspect
            return None
        stored = card_value(Path(self.model_path()), "question_threshold")
        return None if stored is None else float(stored)

    def thresholds(self, topic: Topic) -> tuple[float, tuple[float, ...] | None]:
        """The matrix's threshold and its per-aspect thresholds (None when all are the same):
        every aspect a question, the question threshold is the matrix's."""
        threshold = self.resolved_threshold()
        question = self.resolved_question_threshold()
        if question is None:
            return threshold, None
        values = tuple(question if is_question(a.text) else threshold for a in topic.aspects)
        if len(set(values)) <= 1:
            return (values[0] if values else threshold), None
        return threshold, values

    def _gate_answers(
        self,
        scorer: PairScorer,
        topic: Topic,
        expanded: Topic,
        owners: np.ndarray[Any, np.dtype[np.int64]],
        probs: FloatArray,
    ) -> tuple[FloatArray, int, int]:
        """``probs`` with the columns of sketches the model does not judge to answer their
        aspect (:data:`ANSWERS_GATE`) set to 0, and the check's pairs scored and cut."""
        own = np.zeros(len(owners), dtype=bool)
        own[np.unique(owners, return_index=True)[1]] = True  # each aspect's own column
        sketches = np.flatnonzero(~own)
        pairs = [(expanded.aspects[c].text, topic.aspects[owners[c]].text) for c in sketches]
        values, scored, truncated = scorer.score(pairs)
        gated = probs.copy()
        gated[:, sketches[values < ANSWERS_GATE]] = 0.0
        return gated, scored, truncated

    def estimate(self, topic: Topic) -> CoverageMatrix:
        started = time.perf_counter()
        scorer = self.scorer()
        expanded, owners = expand_answers(topic)
        header = self.header()
        texts = [passage_input(p, header) for p in topic.passages]
        pairs = [(text, a.text) for text in texts for a in expanded.aspects]
        values, scored, truncated = scorer.score(pairs)
        probs = values.reshape(len(topic.passages), len(expanded.aspects))
        if len(owners) > len(topic.aspects):
            probs, checked, cut = self._gate_answers(scorer, topic, expanded, owners, probs)
            scored += checked
            truncated += cut
        probs = best_of(probs, owners, len(topic.aspects))
        threshold, per_aspect = self.thresholds(topic)
        if truncated:
            logger.info(
                "topic %s: %d of %d pairs exceed %d tokens and were cut by the model",
                topic.query_id,
                truncated,
                scored,
                self.max_length,
            )
        return CoverageMatrix(
            passage_ids=topic.passage_ids,
            aspect_ids=topic.aspect_ids,
            probs=probs,
            threshold=threshold,
            source=repr(self),
            pairs_scored=scored,
            seconds=time.perf_counter() - started,
            truncated_pairs=truncated,
            aspect_thresholds=per_aspect,
        )
