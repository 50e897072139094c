"""Passage corpora to index: a passage JSONL file, or the candidate pools of datasets.

A passage corpus JSONL file has one object per line::

    {"id": "p1", "text": "Cars pollute the air.", "source": "...", ...}

``id`` and ``text`` are required non-empty strings and ``id`` is unique in the file; an optional
``tokens`` (a non-negative integer) becomes :attr:`Passage.tokens`; every other field is kept as
metadata. Any malformed line raises :class:`~covrag.errors.DataError` naming the file, the line
and the field, and nothing is returned for a file with an error anywhere.

A dataset's corpus is every passage of every topic's pool, deduplicated by id (Perspectrum, for
one, puts the same perspective in the pools of several claims). A repeated id with the *same*
text keeps its first occurrence; a repeated id with a *different* text is an error, never a
silent choice. No bundled dataset has such a conflict, and their ids do not collide across
datasets, so the default corpus is the union of all bundled pools.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from covrag.data import BUNDLED, load_dataset, resolve_dataset
from covrag.data.jsonl import decode_line
from covrag.errors import DataError
from covrag.files import iter_lines
from covrag.types import Passage, Topic, as_mapping

logger = logging.getLogger(__name__)

_KEYS = {"id", "text", "tokens"}


def read_corpus(path: str | os.PathLike[str]) -> tuple[Passage, ...]:
    """The passages of a passage corpus JSONL file (format in the module docstring).

    Raises:
        DataError: on bad JSON, a line that is not an object, a missing or empty ``id`` or
            ``text``, a bad ``tokens`` or a duplicate ``id``; the message names file, line, field.
    """
    return parse_corpus(iter_lines(path), str(path))


def parse_corpus(lines: Iterable[tuple[int, str]], name: str) -> tuple[Passage, ...]:
    """The passages of the ``(line number, text)`` lines of a passage corpus JSONL file called
    ``name`` (for the messages); what :func:`read_corpus` reads, for a file whose bytes are
    already in memory."""
    passages: list[Passage] = []
    seen: dict[str, int] = {}
    for number, line in lines:
        if not line.strip():
            continue
        record = decode_line(line, name, number)
        passage = _passage(record, name, number)
        if passage.id in seen:
            raise DataError(
                f"duplicate id {passage.id!r} (first on line {seen[passage.id]})",
                path=name,
                line=number,
                field="id",
            )
        seen[passage.id] = number
        passages.append(passage)
    return tuple(passages)


def _passage(record: Any, path: str, line: int) -> Passage:
    if not isinstance(record, dict):
        raise DataError("each line must be a JSON object", path=path, line=line)
    for key in ("id", "text"):
        if key not in record:
            raise DataError("missing required field", path=path, line=line, field=key)
        value = record[key]
        if not isinstance(value, str) or not value.strip():
            raise DataError(
                f"must be a non-empty string, got {value!r:.60}", path=path, line=line, field=key
            )
    tokens = record.get("tokens")
    if tokens is not None and (
        isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0
    ):
        raise DataError(
            f"must be a non-negative integer, got {tokens!r:.60}",
            path=path,
            line=line,
            field="tokens",
        )
    return Passage(
        id=record["id"],
        text=record["text"],
        tokens=tokens,
        metadata=as_mapping({k: v for k, v in record.items() if k not in _KEYS}),
    )


def corpus_from_topics(topics: Iterable[Topic], source: str = "<topics>") -> tuple[Passage, ...]:
    """All passages of the topics' pools, deduplicated by id, first occurrence first.

    Retriever scores carried by the pools are dropped: a corpus passage has no score.

    Raises:
        DataError: when one id comes with two different texts (names ``source``, the topic and
            the passage).
    """
    passages: dict[str, Passage] = {}
    first_topic: dict[str, str] = {}
    for topic in topics:
        for i, passage in enumerate(topic.passages):
            known = passages.get(passage.id)
            if known is None:
                passages[passage.id] = dataclasses.replace(passage, score=None)
                first_topic[passage.id] = topic.query_id
            elif known.text != passage.text:
                raise DataError(
                    f"passage id {passage.id!r} of topic {topic.query_id!r} has a different "
                    f"text than in topic {first_topic[passage.id]!r}; a corpus needs one text "
                    "per id",
                    path=source,
                    field=f"passages[{i}].id",
                )
    return tuple(passages.values())


def load_corpus(spec: str | os.PathLike[str] | None = None) -> tuple[Passage, ...]:
    """The corpus named by ``spec``.

    Args:
        spec: ``None`` or ``"bundled"`` for the pools of every bundled dataset and split; a
            bundled ``name`` (all its splits) or ``name:split``; or a file: a coverage JSONL
            dataset when its first record has ``query_id`` and ``passages`` (its pools are
            used), otherwise a passage corpus JSONL.

    Raises:
        DataError: for an unknown name, a malformed file or conflicting passage texts.
    """
    if spec is not None and os.path.isdir(str(spec)):
        raise DataError("is a folder: a corpus is a JSONL file or a dataset name", path=str(spec))
    if spec is None or str(spec) == "bundled":
        specs = [f"{d.name}:{s}" for d in BUNDLED.values() for s in d.splits]
    elif not os.path.exists(str(spec)) and str(spec) in BUNDLED:
        specs = [f"{spec}:{s}" for s in BUNDLED[str(spec)].splits]
    elif os.path.isfile(str(spec)) and not _is_coverage_file(Path(spec)):
        return read_corpus(spec)
    else:
        specs = [str(spec)]
    topics: list[Topic] = []
    for name in specs:
        topics.extend(load_dataset(name))
    source = ", ".join(str(resolve_dataset(name)) for name in specs)
    passages = corpus_from_topics(topics, source)
    logger.info(
        "corpus %s: %d passages from %d topics", spec or "bundled", len(passages), len(topics)
    )
    return passages


def _is_coverage_file(path: Path) -> bool:
    """Whether the first record of a JSONL file looks like a coverage topic, not a passage."""
    # Bad bytes, JSON nested too deeply or an integer too long to read: read_corpus (or the
    # dataset reader) reports the error with its line.
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in handle:
            if line.strip():
                try:
                    record = json.loads(line)
                except (ValueError, RecursionError):
                    return False
                return isinstance(record, dict) and "query_id" in record and "passages" in record
    return False


def passage_record(passage: Passage) -> dict[str, Any]:
    """The corpus JSONL object of a passage, the inverse of reading it (``score`` is dropped)."""
    record: dict[str, Any] = {"id": passage.id, "text": passage.text}
    if passage.tokens is not None:
        record["tokens"] = passage.tokens
    record.update((k, v) for k, v in passage.metadata.items() if k not in _KEYS)
    return record


def check_corpus(passages: Iterable[Passage]) -> tuple[Passage, ...]:
    """The passages as a tuple, checked to be non-empty with unique ids.

    Raises:
        DataError: for an empty corpus or a duplicate id.
    """
    result = tuple(passages)
    if not result:
        raise DataError("cannot index an empty corpus")
    seen: set[str] = set()
    for i, passage in enumerate(result):
        if passage.id in seen:
            raise DataError(f"duplicate passage id {passage.id!r} at position {i}", field="id")
        seen.add(passage.id)
    return result
