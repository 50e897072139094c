"""The records every stage of covrag exchanges.

All records are frozen dataclasses. Arrays held by records are made read-only on construction so a
record can be shared between stages without defensive copies.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

Polarity = Literal["include", "exclude", "neutral"]
POLARITIES: tuple[Polarity, ...] = ("include", "exclude", "neutral")

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]

_EMPTY: Mapping[str, Any] = MappingProxyType({})


def _empty() -> Mapping[str, Any]:
    return _EMPTY


def _frozen_array(values: Any, dtype: Any) -> Any:
    array = np.array(values, dtype=dtype, copy=True)
    array.setflags(write=False)
    return array


@dataclass(frozen=True, slots=True)
class Aspect:
    """One thing a complete answer must cover: a sub-question, key point, nugget or viewpoint.

    Attributes:
        id: Unique within its topic.
        text: The aspect as a question or statement; estimators score passages against it.
        weight: Importance used by weighted objectives (1.0 by default).
        vital: Whether a complete answer must state it (DES's "vital" nuggets).
        polarity: ``include`` / ``neutral`` aspects are wanted; ``exclude`` ones must be avoided.
        metadata: Free-form extra fields from the source data (stance, cluster members, ...).
        answers: Statements a passage covering the aspect would make (answer sketches,
            :mod:`covrag.plan.sketch`): estimators score a passage against the text and each of
            these and keep the highest. Empty (the default): the text alone.
    """

    id: str
    text: str
    weight: float = 1.0
    vital: bool = False
    polarity: Polarity = "neutral"
    metadata: Mapping[str, Any] = field(default_factory=_empty, compare=False)
    answers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("Aspect.id must be a non-empty string")
        if isinstance(self.answers, str) or not all(
            isinstance(a, str) and a.strip() for a in self.answers
        ):
            raise ValueError(f"Aspect.answers must be non-empty strings, got {self.answers!r}")
        object.__setattr__(self, "answers", tuple(self.answers))
        if self.polarity not in POLARITIES:
            raise ValueError(f"Aspect.polarity must be one of {POLARITIES}, got {self.polarity!r}")
        if not self.weight >= 0:
            raise ValueError(f"Aspect.weight must be >= 0, got {self.weight!r}")


@dataclass(frozen=True, slots=True)
class Passage:
    """A candidate piece of evidence.

    Attributes:
        id: Unique within its topic (a TREC docno).
        text: The full text; covrag never truncates it when selecting.
        tokens: Token cost under the budget's tokenizer, or None when not yet counted.
        score: Relevance score from a retriever (higher is better), if any.
        metadata: Free-form extra fields from the source data.
    """

    id: str
    text: str
    tokens: int | None = None
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=_empty, compare=False)

    def __post_init__(self) -> None:
        if not self.id:
            raise ValueError("Passage.id must be a non-empty string")
        if self.tokens is not None and self.tokens < 0:
            raise ValueError(f"Passage.tokens must be >= 0, got {self.tokens}")


#: The :attr:`Passage.metadata` key of a passage that joined a pool as the definition of a name
#: the pool's passages gave (:mod:`covrag.retrieve.definitions`): the name.
DEFINES = "defines"
#: The :attr:`Passage.metadata` key of a passage an ``ask`` run file holds beyond the retrieved
#: pool: an entry the citation check looked up for what a draft names
#: (:mod:`covrag.generate.evidence`), which an answer sentence may cite.
LOOKED_UP = "looked_up"


@dataclass(frozen=True)
class Topic:
    """One query with its candidate pool, its aspects and (optionally) gold labels.

    Attributes:
        query_id: Unique within its dataset.
        query: The question or claim.
        passages: The candidate pool, in dataset order.
        aspects: The aspects a complete answer covers.
        labels: Gold labels: passage id -> ids of the aspects it supports. Every passage of a
            labelled topic has an entry (possibly empty: judged, supports nothing).
        non_labels: Passage id -> aspect ids judged *not* supported (ArgKP's ``non_aspects``);
            pairs in neither mapping are undecided.
        split: ``train`` / ``dev`` / ``test`` when known.
        metadata: Extra top-level fields of the source record.
    """

    query_id: str
    query: str
    passages: tuple[Passage, ...]
    aspects: tuple[Aspect, ...]
    labels: Mapping[str, frozenset[str]] = field(default_factory=_empty)
    non_labels: Mapping[str, frozenset[str]] = field(default_factory=_empty)
    split: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=_empty, compare=False)

    @property
    def passage_ids(self) -> tuple[str, ...]:
        return tuple(p.id for p in self.passages)

    @property
    def aspect_ids(self) -> tuple[str, ...]:
        return tuple(a.id for a in self.aspects)

    def label_matrix(self) -> BoolArray:
        """Gold labels as a boolean passages x aspects array (dataset order on both axes)."""
        column = {a.id: j for j, a in enumerate(self.aspects)}
        matrix = np.zeros((len(self.passages), len(self.aspects)), dtype=bool)
        for i, passage in enumerate(self.passages):
            for aspect_id in self.labels.get(passage.id, ()):
                matrix[i, column[aspect_id]] = True
        return matrix


@dataclass(frozen=True, eq=False)
class CoverageMatrix:
    """P[passage, aspect]: the probability that a passage covers (answers) an aspect.

    ``covered`` is ``probs >= threshold``, column by column when the aspects have thresholds of
    their own (``aspect_thresholds``: the cross-encoder's question-worded aspects). The matrix
    also records what estimating it cost.

    Attributes:
        passage_ids: Row labels.
        aspect_ids: Column labels.
        probs: Float array of shape (len(passage_ids), len(aspect_ids)) with values in [0, 1].
        threshold: Probability at or above which a pair counts as covered.
        source: repr of the estimator that produced it (``gold``, ``embedding(...)``, ...).
        pairs_scored: Number of (passage, aspect) pairs the estimator actually scored.
        seconds: Wall-clock seconds spent estimating.
        truncated_pairs: Pairs longer than the estimator's token limit (cut by the model).
        aspect_thresholds: A threshold per aspect (column), in place of ``threshold``; None =
            ``threshold`` for every aspect.
    """

    passage_ids: tuple[str, ...]
    aspect_ids: tuple[str, ...]
    probs: FloatArray
    threshold: float = 0.5
    source: str = "unknown"
    pairs_scored: int = 0
    seconds: float = 0.0
    truncated_pairs: int = 0
    aspect_thresholds: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        probs = _frozen_array(self.probs, np.float64)
        if probs.ndim != 2 or probs.shape != (len(self.passage_ids), len(self.aspect_ids)):
            raise ValueError(
                f"CoverageMatrix.probs has shape {probs.shape}, expected "
                f"({len(self.passage_ids)}, {len(self.aspect_ids)})"
            )
        if probs.size and (np.isnan(probs).any() or probs.min() < 0.0 or probs.max() > 1.0):
            raise ValueError("CoverageMatrix.probs must lie in [0, 1] with no NaN")
        if not 0.0 <= self.threshold <= 1.0:
            raise ValueError(f"CoverageMatrix.threshold must lie in [0, 1], got {self.threshold}")
        if self.aspect_thresholds is not None:
            if len(self.aspect_thresholds) != len(self.aspect_ids):
                raise ValueError(
                    f"CoverageMatrix.aspect_thresholds has {len(self.aspect_thresholds)} values "
                    f"for {len(self.aspect_ids)} aspects"
                )
            if any(not 0.0 <= t <= 1.0 for t in self.aspect_thresholds):
                raise ValueError("CoverageMatrix.aspect_thresholds must lie in [0, 1]")
        if len(set(self.passage_ids)) != len(self.passage_ids):
            raise ValueError("CoverageMatrix.passage_ids contains duplicates")
        if len(set(self.aspect_ids)) != len(self.aspect_ids):
            raise ValueError("CoverageMatrix.aspect_ids contains duplicates")
        object.__setattr__(self, "probs", probs)

    @property
    def thresholds(self) -> FloatArray:
        """The threshold of each aspect (column)."""
        if self.aspect_thresholds is None:
            return np.full(len(self.aspect_ids), self.threshold)
        return np.asarray(self.aspect_thresholds, dtype=np.float64)

    @property
    def covered(self) -> BoolArray:
        """Boolean passages x aspects array: ``probs >= threshold`` of each aspect."""
        result: BoolArray = self.probs >= self.thresholds
        return result

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.passage_ids), len(self.aspect_ids))

    def with_threshold(self, threshold: float) -> CoverageMatrix:
        """The same probabilities under another threshold, the same for every aspect."""
        return dataclasses.replace(self, threshold=threshold, aspect_thresholds=None)

    def threshold_text(self) -> str:
        """The threshold in words: ``0.8``, ``0.8 (0.3 for sq1, sq2)``, or with more than three
        aspects of another threshold ``0.8 (0.3 for 5 aspects)``."""
        if self.aspect_thresholds is None or set(self.aspect_thresholds) == {self.threshold}:
            return f"{self.threshold:g}"
        others: dict[float, list[str]] = {}
        for aspect, value in zip(self.aspect_ids, self.aspect_thresholds, strict=True):
            if value != self.threshold:
                others.setdefault(value, []).append(aspect)
        named = [
            f"{value:g} for " + (", ".join(ids) if len(ids) <= 3 else f"{len(ids)} aspects")
            for value, ids in others.items()
        ]
        return f"{self.threshold:g} ({'; '.join(named)})"

    def aspects_of(self, passage_id: str) -> tuple[str, ...]:
        """Ids of the aspects a passage covers."""
        row = self.passage_ids.index(passage_id)
        return tuple(a for a, c in zip(self.aspect_ids, self.covered[row], strict=True) if c)


@dataclass(frozen=True, slots=True)
class Budget:
    """How much context may be selected: at most ``max_passages`` and/or ``max_tokens``.

    A budget with neither limit asks for a full ranking of the pool. Selection never truncates a
    passage: one that does not fit is skipped.
    """

    max_passages: int | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.max_passages is not None and self.max_passages < 1:
            raise ValueError(f"Budget.max_passages must be >= 1, got {self.max_passages}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"Budget.max_tokens must be >= 1, got {self.max_tokens}")

    @property
    def unlimited(self) -> bool:
        return self.max_passages is None and self.max_tokens is None

    def __str__(self) -> str:
        parts = []
        if self.max_passages is not None:
            parts.append(f"k={self.max_passages}")
        if self.max_tokens is not None:
            parts.append(f"tokens={self.max_tokens}")
        return ",".join(parts) or "unlimited"


@dataclass(frozen=True, slots=True)
class SelectionStep:
    """One pick of a selector.

    Attributes:
        passage_id: The passage picked.
        score: The value that made the selector pick it (gain, MMR score, relevance, ...).
        newly_covered: Aspect ids this pick covered for the first time, under the coverage
            matrix the selector was given (empty when it had none).
        tokens: The passage's token cost.
    """

    passage_id: str
    score: float
    newly_covered: tuple[str, ...] = ()
    tokens: int = 0


@dataclass(frozen=True)
class Selection:
    """An ordered selection with its per-step trace."""

    query_id: str
    selector: str
    budget: Budget
    steps: tuple[SelectionStep, ...]
    seconds: float = 0.0

    @property
    def passage_ids(self) -> tuple[str, ...]:
        return tuple(step.passage_id for step in self.steps)

    @property
    def tokens_used(self) -> int:
        return sum(step.tokens for step in self.steps)

    @property
    def covered(self) -> tuple[str, ...]:
        """Aspect ids covered by the selection, in the order they were first covered."""
        return tuple(a for step in self.steps for a in step.newly_covered)

    def __len__(self) -> int:
        return len(self.steps)


Verified = Literal["aligned", "judged", "composed", "unsupported"]
VERIFIED: tuple[Verified, ...] = ("aligned", "judged", "composed", "unsupported")


@dataclass(frozen=True, slots=True)
class SupportCheck:
    """How one answer sentence was checked against the passages (:mod:`covrag.generate.support`).

    Attributes:
        written: The passage ids the writer cited, before any repair.
        verified: ``aligned`` (the passage holds the sentence's text, checked by character
            alignment), ``judged`` (the support judge says a passage supports a paraphrase),
            ``composed`` (a command line whose every option the cited passages write,
            :mod:`covrag.generate.commands`) or ``unsupported`` (no passage of the context does
            any of these).
        score: The support score: the alignment share for ``aligned``, the judge's probability
            otherwise (for ``unsupported``, the best probability any passage reached).
        passage_id: The passage that holds the supporting span (None when unsupported).
        span: The supporting characters ``[start, end)`` of that passage's text.
    """

    written: tuple[str, ...]
    verified: Verified
    score: float
    passage_id: str | None = None
    span: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.verified not in VERIFIED:
            raise ValueError(f"SupportCheck.verified must be one of {VERIFIED}")
        if (self.passage_id is None) != (self.span is None):
            raise ValueError("SupportCheck.passage_id and span are given together or not at all")
        if self.span is not None and not 0 <= self.span[0] < self.span[1]:
            raise ValueError(
                f"SupportCheck.span must be [start, end) with start < end: {self.span}"
            )

    @property
    def repaired(self) -> bool:
        """Whether the check changed what the sentence cites."""
        return self.verified != "unsupported" and self.passage_id not in self.written


@dataclass(frozen=True, slots=True)
class Citation:
    """A sentence of an answer with the passage ids it cites.

    Attributes:
        text: The sentence.
        passage_ids: The passages it cites (after the support check's repair, when checked).
        aspect_id: The aspect (sub-question) whose paragraph it belongs to, when the writer
            planned the answer by aspect.
        framing: True for the writer's own framing (e.g. what the corpus does not answer),
            which cites nothing by design.
        check: What the support check found (None: not checked, or framing).
    """

    text: str
    passage_ids: tuple[str, ...] = ()
    aspect_id: str | None = None
    framing: bool = False
    check: SupportCheck | None = None

    @property
    def supported(self) -> bool:
        """Whether the support check found a passage that holds or supports the sentence."""
        return self.check is not None and self.check.verified != "unsupported"


@dataclass(frozen=True)
class Answer:
    """A generated answer: sentences, each with its cited passage ids.

    Attributes:
        sentences: What the answer states.
        dropped: Sentences the writer wrote but the support check left out, because no passage
            of the context supports them (kept so that a report can show them as such).
    """

    sentences: tuple[Citation, ...]
    dropped: tuple[Citation, ...] = ()

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)

    def substantive(self) -> Answer:
        """The answer without the writer's framing sentences (what can state a nugget)."""
        return Answer(tuple(s for s in self.sentences if not s.framing))


def as_mapping(values: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """A read-only view of ``values`` (an empty one for None)."""
    return MappingProxyType(dict(values)) if values else _EMPTY
