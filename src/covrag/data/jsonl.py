"""Reader and writer of the coverage JSONL format.

One JSON object per line, one line per topic::

    {"query_id", "query", "split",
     "passages": [{"id", "text", "aspects": [aspect ids it supports], ...}],
     "aspects":  [{"id", "text", ...}]}

Optional fields: ``passages[].non_aspects`` (aspect ids judged *not* supported),
``passages[].score`` (retriever score), ``passages[].tokens``, ``aspects[].weight``,
``aspects[].vital``, ``aspects[].polarity``. Other fields are kept as metadata and written back.

Any malformed line raises :class:`~covrag.errors.DataError` naming the file, the line and the
field; nothing is returned for a file that has an error anywhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from covrag.errors import DataError
from covrag.files import atomic_write_text
from covrag.types import POLARITIES, Aspect, Passage, Topic, as_mapping

_PASSAGE_KEYS = {"id", "text", "aspects", "non_aspects", "score", "tokens"}
_ASPECT_KEYS = {"id", "text", "weight", "vital", "polarity"}
_TOPIC_KEYS = {"query_id", "query", "split", "passages", "aspects"}


class _LineParser:
    def __init__(self, path: str, line: int) -> None:
        self.path = path
        self.line = line

    def fail(self, message: str, field: str | None = None) -> DataError:
        return DataError(message, path=self.path, line=self.line, field=field)

    def string(self, obj: dict[str, Any], key: str, where: str, *, required: bool = True) -> str:
        if key not in obj:
            if required:
                raise self.fail("missing required field", f"{where}{key}")
            return ""
        value = obj[key]
        if not isinstance(value, str) or (required and not value.strip()):
            raise self.fail(f"must be a non-empty string, got {value!r:.60}", f"{where}{key}")
        return value

    def id_list(self, obj: dict[str, Any], key: str, where: str) -> list[str]:
        value = obj.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail("must be a list of aspect id strings", f"{where}{key}")
        return value

    def number(self, obj: dict[str, Any], key: str, where: str) -> float | None:
        if key not in obj or obj[key] is None:
            return None
        value = obj[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"must be a number, got {value!r:.60}", f"{where}{key}")
        return float(value)

    def topic(self, record: Any) -> Topic:
        if not isinstance(record, dict):
            raise self.fail("each line must be a JSON object")
        query_id = self.string(record, "query_id", "")
        query = self.string(record, "query", "")
        for key in ("passages", "aspects"):
            if key not in record:
                raise self.fail("missing required field", key)
            if not isinstance(record[key], list):
                raise self.fail("must be a list", key)

        aspects: list[Aspect] = []
        for j, raw in enumerate(record["aspects"]):
            where = f"aspects[{j}]."
            if not isinstance(raw, dict):
                raise self.fail("must be an object", f"aspects[{j}]")
            aspect_id = self.string(raw, "id", where)
            polarity = raw.get("polarity", "neutral")
            if polarity not in POLARITIES:
                raise self.fail(f"must be one of {POLARITIES}", f"{where}polarity")
            weight = self.number(raw, "weight", where)
            if weight is not None and weight < 0:
                raise self.fail("must be >= 0", f"{where}weight")
            vital = raw.get("vital", False)
            if not isinstance(vital, bool):
                raise self.fail("must be true or false", f"{where}vital")
            aspects.append(
                Aspect(
                    id=aspect_id,
                    text=self.string(raw, "text", where),
                    weight=1.0 if weight is None else weight,
                    vital=vital,
                    polarity=polarity,
                    metadata=as_mapping({k: v for k, v in raw.items() if k not in _ASPECT_KEYS}),
                )
            )
        aspect_ids = {a.id for a in aspects}
        if len(aspect_ids) != len(aspects):
            seen: set[str] = set()
            for j, a in enumerate(aspects):
                if a.id in seen:
                    raise self.fail(f"duplicate aspect id {a.id!r}", f"aspects[{j}].id")
                seen.add(a.id)

        passages: list[Passage] = []
        labels: dict[str, frozenset[str]] = {}
        non_labels: dict[str, frozenset[str]] = {}
        for i, raw in enumerate(record["passages"]):
            where = f"passages[{i}]."
            if not isinstance(raw, dict):
                raise self.fail("must be an object", f"passages[{i}]")
            passage_id = self.string(raw, "id", where)
            if passage_id in labels:
                raise self.fail(f"duplicate passage id {passage_id!r}", f"{where}id")
            supported = self.id_list(raw, "aspects", where)
            rejected = self.id_list(raw, "non_aspects", where)
            for key, ids in (("aspects", supported), ("non_aspects", rejected)):
                for aspect_id in ids:
                    if aspect_id not in aspect_ids:
                        raise self.fail(f"unknown aspect id {aspect_id!r}", f"{where}{key}")
            tokens = self.number(raw, "tokens", where)
            if tokens is not None and (tokens < 0 or tokens != int(tokens)):
                raise self.fail("must be a non-negative integer", f"{where}tokens")
            passages.append(
                Passage(
                    id=passage_id,
                    text=self.string(raw, "text", where),
                    tokens=None if tokens is None else int(tokens),
                    score=self.number(raw, "score", where),
                    metadata=as_mapping({k: v for k, v in raw.items() if k not in _PASSAGE_KEYS}),
                )
            )
            labels[passage_id] = frozenset(supported)
            if rejected:
                non_labels[passage_id] = frozenset(rejected)
        split = record.get("split")
        if split is not None and not isinstance(split, str):
            raise self.fail("must be a string", "split")
        return Topic(
            query_id=query_id,
            query=query,
            passages=tuple(passages),
            aspects=tuple(aspects),
            labels=as_mapping(labels),
            non_labels=as_mapping(non_labels),
            split=split,
            metadata=as_mapping({k: v for k, v in record.items() if k not in _TOPIC_KEYS}),
        )


def iter_topics(path: str | os.PathLike[str]) -> Iterator[Topic]:
    """Yield the topics of a coverage JSONL file, validating each line.

    Raises:
        DataError: on bad JSON, a missing or mistyped field, a duplicate passage, aspect or
            query id, or a label naming an unknown aspect. The message names file, line and field.
    """
    name = str(path)
    seen: set[str] = set()
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parser = _LineParser(name, number)
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise parser.fail(f"invalid JSON: {exc.msg} at column {exc.colno}") from None
            topic = parser.topic(record)
            if topic.query_id in seen:
                raise parser.fail(f"duplicate query_id {topic.query_id!r}", "query_id")
            seen.add(topic.query_id)
            yield topic


def read_topics(path: str | os.PathLike[str]) -> list[Topic]:
    """All topics of a coverage JSONL file (see :func:`iter_topics`)."""
    return list(iter_topics(path))


def topic_to_record(topic: Topic) -> dict[str, Any]:
    """The JSON object of one topic, the inverse of reading it."""
    passages = []
    for passage in topic.passages:
        raw: dict[str, Any] = {"id": passage.id, "text": passage.text}
        raw["aspects"] = sorted(topic.labels.get(passage.id, ()))
        if passage.id in topic.non_labels:
            raw["non_aspects"] = sorted(topic.non_labels[passage.id])
        if passage.score is not None:
            raw["score"] = passage.score
        if passage.tokens is not None:
            raw["tokens"] = passage.tokens
        raw.update(passage.metadata)
        passages.append(raw)
    aspects = []
    for aspect in topic.aspects:
        raw = {"id": aspect.id, "text": aspect.text}
        if aspect.weight != 1.0:
            raw["weight"] = aspect.weight
        if aspect.vital:
            raw["vital"] = True
        if aspect.polarity != "neutral":
            raw["polarity"] = aspect.polarity
        raw.update(aspect.metadata)
        aspects.append(raw)
    record: dict[str, Any] = {"query_id": topic.query_id, "query": topic.query}
    if topic.split is not None:
        record["split"] = topic.split
    record.update(topic.metadata)
    record["passages"] = passages
    record["aspects"] = aspects
    return record


def write_topics(path: str | os.PathLike[str], topics: Iterable[Topic]) -> None:
    """Write topics as coverage JSONL, atomically: the file appears complete or not at all."""
    lines = [json.dumps(topic_to_record(t), ensure_ascii=False) + "\n" for t in topics]
    atomic_write_text(path, "".join(lines))
