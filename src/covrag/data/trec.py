"""TREC run files: ``query_id Q0 doc_id rank score tag``, one line per retrieved passage."""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping, Sequence

from covrag.errors import DataError
from covrag.files import atomic_write_text
from covrag.types import Selection

Run = dict[str, tuple[str, ...]]
"""A run: query id -> passage ids in rank order."""


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run. Each topic's ranking is by score descending, then doc id ascending
    (the order ir_measures and pyndeval use); the rank column is checked but not trusted.

    Raises:
        DataError: a line without 6 columns, a non-numeric rank or score, or a passage listed
            twice for one topic; the message names file, line and column.
    """
    name = str(path)
    scored: dict[str, list[tuple[float, str]]] = {}
    seen: dict[str, set[str]] = {}
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            parts = line.split()
            if len(parts) != 6:
                raise DataError(
                    f"expected 6 columns 'qid Q0 docid rank score tag', got {len(parts)}",
                    path=name,
                    line=number,
                )
            query_id, _, doc_id, rank, score = parts[:5]
            try:
                int(rank)
            except ValueError:
                raise DataError(
                    "rank must be an integer", path=name, line=number, field="rank"
                ) from None
            try:
                value = float(score)
            except ValueError:
                raise DataError(
                    "score must be a number", path=name, line=number, field="score"
                ) from None
            if math.isnan(value):
                raise DataError("score is NaN", path=name, line=number, field="score")
            docs = seen.setdefault(query_id, set())
            if doc_id in docs:
                raise DataError(
                    f"passage {doc_id!r} appears twice for query {query_id!r}",
                    path=name,
                    line=number,
                    field="docid",
                )
            docs.add(doc_id)
            scored.setdefault(query_id, []).append((value, doc_id))
    return {
        qid: tuple(doc for _, doc in sorted(items, key=lambda x: (-x[0], x[1])))
        for qid, items in scored.items()
    }


def format_run(run: Mapping[str, Sequence[str]], tag: str = "covrag") -> str:
    """TREC run text with strictly decreasing scores, so every tool reads the same order."""
    tag = tag.replace(" ", "_") or "covrag"
    lines = []
    for query_id, docs in run.items():
        n = len(docs)
        for rank, doc_id in enumerate(docs, start=1):
            lines.append(f"{query_id} Q0 {doc_id} {rank} {n - rank + 1} {tag}\n")
    return "".join(lines)


def write_run(
    path: str | os.PathLike[str], run: Mapping[str, Sequence[str]], tag: str = "covrag"
) -> None:
    """Write a run atomically (no partial file on error)."""
    atomic_write_text(path, format_run(run, tag))


def run_from_selections(selections: Iterable[Selection]) -> Run:
    return {s.query_id: s.passage_ids for s in selections}
