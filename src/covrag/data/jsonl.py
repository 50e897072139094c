"""Reader and writer of the coverage JSONL format.

One JSON object per line, one line per topic::

    {"query_id", "query", "split",
     "passages": [{"id", "text", "aspects": [aspect ids it supports], ...}],
     "aspects":  [{"id", "text", ...}]}

Optional fields: ``passages[].non_aspects`` (aspect ids judged *not* supported),
``passages[].score`` (retriever score), ``passages[].tokens``, ``aspects[].weight``,
``aspects[].vital``, ``aspects[].polarity``, ``aspects[].answers`` (answer sketches: statements
an answer would make, scored beside the aspect's text). Other fields are kept as metadata and
written back.
The rules live in :class:`covrag.schema.dataset.TopicLine`.

Any malformed line raises :class:`~covrag.errors.DataError` naming the file, the line and the
field; nothing is returned for a file that has an error anywhere.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from typing import Any

from covrag.errors import DataError
from covrag.files import atomic_write_text, iter_lines
from covrag.schema._base import read_model
from covrag.schema._json import decode_json
from covrag.schema.dataset import TopicLine
from covrag.types import Topic


def iter_topics(path: str | os.PathLike[str]) -> Iterator[Topic]:
    """Yield the topics of a coverage JSONL file, validating each line.

    Raises:
        DataError: on bytes that are not UTF-8 (naming the byte offset), bad JSON, a missing or
            mistyped field, an id with whitespace, a duplicate passage, aspect or query id, or a
            label naming an unknown aspect. The message names file, line and field.
    """
    name = str(path)
    seen: set[str] = set()
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        record = decode_line(line, name, number)
        if not isinstance(record, dict):
            raise DataError("each line must be a JSON object", path=name, line=number)
        topic = read_model(TopicLine, record, path=name, line=number).to_topic()
        if topic.query_id in seen:
            message = f"duplicate query_id {topic.query_id!r}"
            raise DataError(message, path=name, line=number, field="query_id")
        seen.add(topic.query_id)
        yield topic


def decode_line(line: str, path: str, number: int) -> Any:
    """The JSON value of one line; bad JSON, JSON nested too deeply to decode, an integer too
    long to convert or a lone surrogate is a :class:`DataError` naming the file, line and field
    (:func:`covrag.schema._json.decode_json`)."""
    return decode_json(line, path=path, line=number)


def read_topics(path: str | os.PathLike[str]) -> list[Topic]:
    """All topics of a coverage JSONL file (see :func:`iter_topics`)."""
    return list(iter_topics(path))


def topic_to_record(topic: Topic) -> dict[str, Any]:
    """The JSON object of one topic, the inverse of reading it."""
    return TopicLine.from_topic(topic).to_record()


def write_topics(path: str | os.PathLike[str], topics: Iterable[Topic]) -> None:
    """Write topics as coverage JSONL, atomically: the file appears complete or not at all."""
    lines = [json.dumps(topic_to_record(t), ensure_ascii=False) + "\n" for t in topics]
    atomic_write_text(path, "".join(lines))
