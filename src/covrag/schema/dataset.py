"""The coverage JSONL line: one topic with its candidate passages, aspects and gold labels.

::

    {"query_id", "query", "split",
     "passages": [{"id", "text", "aspects": [aspect ids it supports], "non_aspects",
                   "score", "tokens", ...}],
     "aspects":  [{"id", "text", "weight", "vital", "polarity", "answers", ...}]}

Fields not named here are kept as the record's metadata and written back. Every rule of the
format lives in these models; :mod:`covrag.data.jsonl` reads and writes files through them.
"""

from __future__ import annotations

import math
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_serializer, model_validator

from covrag.schema._base import RecordError
from covrag.types import POLARITIES, Aspect, Passage, Polarity, Topic, as_mapping


def _non_empty(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {value!r:.60}")
    return value


#: The most tokens one passage may claim (far above any real passage; a bigger count is an error
#: rather than an overflow in the selectors' arrays).
MAX_PASSAGE_TOKENS = 1_000_000_000


def _identifier(value: Any) -> str:
    """An id: a non-empty string without whitespace (TREC run and qrels files split columns on
    whitespace, so such an id would not read back)."""
    text = _non_empty(value)
    if any(c.isspace() for c in text):
        raise ValueError(f"must not contain whitespace, got {text!r:.60}")
    return text


def _finite(value: Any) -> float | None:
    result = number(value)
    if result is not None and not math.isfinite(result):
        raise ValueError(f"must be a finite number, got {result!r}")
    return result


def number(value: Any) -> float | None:
    """A JSON number as float (None stays None); booleans and strings are errors."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {value!r:.60}")
    try:
        return float(value)
    except OverflowError:  # an integer beyond the largest float (about 1.8e308)
        raise ValueError("must be a finite number, got an integer too large for a float") from None


def _weight(value: Any) -> float | None:
    weight = _finite(value)
    if weight is not None and not weight >= 0:
        raise ValueError("must be >= 0")
    return weight


def _tokens(value: Any) -> int | None:
    tokens = number(value)
    if tokens is None:
        return None
    if not math.isfinite(tokens) or tokens < 0 or tokens != int(tokens):
        raise ValueError("must be a non-negative integer")
    if tokens > MAX_PASSAGE_TOKENS:
        raise ValueError(f"must be at most {MAX_PASSAGE_TOKENS:,}, got {tokens:g}")
    return int(tokens)


def _aspect_ids(value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("must be a list of aspect id strings")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


def _polarity(value: Any) -> Any:
    if value not in POLARITIES:
        raise ValueError(f"must be one of {POLARITIES}")
    return value


def _split(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValueError("must be a string")
    return value


NonEmpty = Annotated[str, BeforeValidator(_non_empty)]
Identifier = Annotated[str, BeforeValidator(_identifier)]
Finite = Annotated[float | None, BeforeValidator(_finite)]
AspectIds = Annotated[list[str], BeforeValidator(_aspect_ids)]


class AspectLine(BaseModel):
    """One aspect of a topic."""

    model_config = ConfigDict(extra="allow")

    id: Identifier
    text: NonEmpty
    weight: Annotated[float | None, BeforeValidator(_weight)] = None
    vital: Annotated[bool, BeforeValidator(_flag)] = False
    polarity: Annotated[Polarity, BeforeValidator(_polarity)] = "neutral"
    answers: list[NonEmpty] = []

    def to_aspect(self) -> Aspect:
        return Aspect(
            id=self.id,
            text=self.text,
            weight=1.0 if self.weight is None else self.weight,
            vital=self.vital,
            polarity=self.polarity,
            metadata=as_mapping(self.model_extra),
            answers=tuple(self.answers),
        )

    @classmethod
    def from_aspect(cls, aspect: Aspect) -> AspectLine:
        """The line of ``aspect``; fields at their default are left out when written."""
        values: dict[str, Any] = {"id": aspect.id, "text": aspect.text}
        if aspect.weight != 1.0:
            values["weight"] = aspect.weight
        if aspect.vital:
            values["vital"] = True
        if aspect.polarity != "neutral":
            values["polarity"] = aspect.polarity
        if aspect.answers:
            values["answers"] = list(aspect.answers)
        return cls.model_construct(set(values), **values, **_extra(aspect.metadata, values))


class PassageLine(BaseModel):
    """One candidate passage of a topic, with the aspects it is judged to (not) support."""

    model_config = ConfigDict(extra="allow")

    id: Identifier
    text: NonEmpty
    aspects: AspectIds = []
    non_aspects: AspectIds = []
    score: Finite = None
    tokens: Annotated[int | None, BeforeValidator(_tokens)] = None

    def to_passage(self) -> Passage:
        return Passage(
            id=self.id,
            text=self.text,
            tokens=self.tokens,
            score=self.score,
            metadata=as_mapping(self.model_extra),
        )


class TopicLine(BaseModel):
    """One line of a coverage JSONL file."""

    model_config = ConfigDict(extra="allow")

    query_id: Identifier
    query: NonEmpty
    split: Annotated[str | None, BeforeValidator(_split)] = None
    passages: list[PassageLine]
    aspects: list[AspectLine]

    @model_validator(mode="after")
    def _unique_and_known_ids(self) -> TopicLine:
        known: set[str] = set()
        for j, aspect in enumerate(self.aspects):
            if aspect.id in known:
                raise RecordError(f"aspects[{j}].id", f"duplicate aspect id {aspect.id!r}")
            known.add(aspect.id)
        seen: set[str] = set()
        for i, passage in enumerate(self.passages):
            if passage.id in seen:
                raise RecordError(f"passages[{i}].id", f"duplicate passage id {passage.id!r}")
            seen.add(passage.id)
            for key, ids in (("aspects", passage.aspects), ("non_aspects", passage.non_aspects)):
                for aspect_id in ids:
                    if aspect_id not in known:
                        raise RecordError(
                            f"passages[{i}].{key}", f"unknown aspect id {aspect_id!r}"
                        )
        return self

    @model_serializer(mode="wrap")
    def _metadata_before_the_pool(self, handler: Any) -> dict[str, Any]:
        # The top-level metadata is written before the (long) passages and aspects.
        record: dict[str, Any] = handler(self)
        pool: dict[str, Any] = {k: record.pop(k) for k in ("passages", "aspects") if k in record}
        return {**record, **pool}

    def to_topic(self) -> Topic:
        labels = {p.id: frozenset(p.aspects) for p in self.passages}
        non_labels = {p.id: frozenset(p.non_aspects) for p in self.passages if p.non_aspects}
        return Topic(
            query_id=self.query_id,
            query=self.query,
            passages=tuple(p.to_passage() for p in self.passages),
            aspects=tuple(a.to_aspect() for a in self.aspects),
            labels=as_mapping(labels),
            non_labels=as_mapping(non_labels),
            split=self.split,
            metadata=as_mapping(self.model_extra),
        )

    @classmethod
    def from_topic(cls, topic: Topic) -> TopicLine:
        """The line of ``topic`` (not re-validated: what was built as a record is written)."""
        values: dict[str, Any] = {"query_id": topic.query_id, "query": topic.query}
        if topic.split is not None:
            values["split"] = topic.split
        values["passages"] = [_passage_line(topic, p) for p in topic.passages]
        values["aspects"] = [AspectLine.from_aspect(a) for a in topic.aspects]
        return cls.model_construct(set(values), **values, **_extra(topic.metadata, values))

    def to_record(self) -> dict[str, Any]:
        """The JSON object of the line; fields left at their default are not written."""
        record: dict[str, Any] = self.model_dump(exclude_unset=True, warnings=False)
        return record


def _passage_line(topic: Topic, passage: Passage) -> PassageLine:
    values: dict[str, Any] = {
        "id": passage.id,
        "text": passage.text,
        "aspects": sorted(topic.labels.get(passage.id, ())),
    }
    if passage.id in topic.non_labels:
        values["non_aspects"] = sorted(topic.non_labels[passage.id])
    if passage.score is not None:
        values["score"] = passage.score
    if passage.tokens is not None:
        values["tokens"] = passage.tokens
    return PassageLine.model_construct(set(values), **values, **_extra(passage.metadata, values))


def _extra(metadata: Any, declared: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metadata.items() if k not in declared}
