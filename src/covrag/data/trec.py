"""TREC run files: ``query_id Q0 doc_id rank score tag``, one line per retrieved passage."""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Mapping, Sequence

import numpy as np

from covrag.data._columns import Columns, factorize, parse_floats, parse_ints, read_columns
from covrag.errors import DataError
from covrag.files import atomic_write_text, iter_lines
from covrag.types import FloatArray, IntArray

Run = dict[str, tuple[str, ...]]
"""A run: query id -> passage ids in rank order."""


def read_run(path: str | os.PathLike[str]) -> Run:
    """Read a TREC run. Each topic's ranking is by score descending, then doc id ascending
    (the order ir_measures and pyndeval use); the rank column is checked but not trusted.

    Raises:
        DataError: bytes that are not UTF-8, a line without 6 columns, a non-numeric rank or
            score, or a passage listed twice for one topic; the message names file, line and
            column.
    """
    enabled = gc.isenabled()
    gc.disable()  # many small tuples, nothing cyclic: the collector's passes cost more
    try:
        columns = read_columns(path, 6)
        fast = None if columns is None else _read_run_columns(columns)
        return fast if fast is not None else _read_run(path)
    finally:
        if enabled:
            gc.enable()


def _read_run_columns(columns: Columns) -> Run | None:
    """The run of a plain file, column-wise with numpy; None leaves the file to ``_read_run``
    (anything unusual, and every error, so that its message names the line)."""
    if parse_ints(columns, 3) is None:
        return None
    scores = parse_floats(columns, 4)
    queries = factorize(columns, 0)
    docs = factorize(columns, 2)
    if scores is None or queries is None or docs is None:
        return None
    (query_codes, query_first), (doc_codes, doc_first) = queries, docs
    # Topics in order of first appearance.
    topic_order = np.argsort(query_first)
    topic_of_code = np.empty_like(topic_order)
    topic_of_code[topic_order] = np.arange(len(topic_order))
    topics = topic_of_code[query_codes]
    pairs = np.sort(topics * len(doc_first) + doc_codes)
    if (pairs[1:] == pairs[:-1]).any():
        return None  # a passage twice for one topic: the careful reader names the line
    order = _ranking_order(topics, scores, doc_codes)
    names = columns.texts(doc_first, 2)
    ranked = list(map(names.__getitem__, doc_codes[order].tolist()))
    counts = np.bincount(topics, minlength=len(topic_order)).tolist()
    ends = np.cumsum(counts).tolist()
    query_ids = columns.texts(query_first[topic_order], 0)
    return {
        query_id: tuple(ranked[end - count : end])
        for query_id, count, end in zip(query_ids, counts, ends, strict=True)
    }


def _ranking_order(topics: IntArray, scores: FloatArray, docs: IntArray) -> IntArray:
    """Line order by topic, then score descending, then doc id ascending (docs numbered in
    string order); no sort for a file already in that order, as runs are usually written."""
    same = topics[1:] == topics[:-1]
    later = (scores[1:] < scores[:-1]) | ((scores[1:] == scores[:-1]) & (docs[1:] > docs[:-1]))
    if (topics[1:] >= topics[:-1]).all() and (later | ~same).all():
        return np.arange(len(topics))
    _, score_rank = np.unique(-scores, return_inverse=True)
    n_scores, n_docs = int(score_rank.max()) + 1, int(docs.max()) + 1
    if (int(topics.max()) + 1) * n_scores * n_docs < 2**62:
        key = (topics * n_scores + score_rank) * n_docs + docs
        result: IntArray = np.argsort(key)  # keys are distinct: no need for a stable sort
        return result
    return np.lexsort((docs, score_rank, topics))


def _read_run(path: str | os.PathLike[str]) -> Run:
    name = str(path)
    scored: dict[str, list[tuple[float, str]]] = {}
    seen: dict[str, set[str]] = {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        query_id, doc_id, value = _parse_line(line, name, number)
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


def _parse_line(line: str, path: str, number: int) -> tuple[str, str, float]:
    """The query id, passage id and score of one run line."""
    parts = line.split()
    if len(parts) != 6:
        raise DataError(
            f"expected 6 columns 'qid Q0 docid rank score tag', got {len(parts)}",
            path=path,
            line=number,
        )
    query_id, _, doc_id, rank, score = parts[:5]
    try:
        int(rank)
    except ValueError:
        raise DataError("rank must be an integer", path=path, line=number, field="rank") from None
    try:
        value = float(score)
    except ValueError:
        raise DataError("score must be a number", path=path, line=number, field="score") from None
    if math.isnan(value):
        raise DataError("score is NaN", path=path, line=number, field="score")
    return query_id, doc_id, value


def check_run_id(value: str, what: str) -> None:
    """Refuse an id a TREC file cannot hold: empty, or with whitespace (columns are split on
    it), so every run covrag writes, covrag reads back."""
    if not value or any(c.isspace() for c in value):
        raise DataError(f"{what} {value!r} cannot be written to a TREC file (empty or whitespace)")


def format_run(run: Mapping[str, Sequence[str]], tag: str = "covrag") -> str:
    """TREC run text with strictly decreasing scores, so every tool reads the same order.

    Raises:
        DataError: a query or passage id that is empty or holds whitespace.
    """
    tag = "".join("_" if c.isspace() else c for c in tag) or "covrag"
    lines = []
    for query_id, docs in run.items():
        check_run_id(query_id, "query id")
        n = len(docs)
        for rank, doc_id in enumerate(docs, start=1):
            check_run_id(doc_id, "passage id")
            lines.append(f"{query_id} Q0 {doc_id} {rank} {n - rank + 1} {tag}\n")
    return "".join(lines)


def write_run(
    path: str | os.PathLike[str], run: Mapping[str, Sequence[str]], tag: str = "covrag"
) -> None:
    """Write a run atomically (no partial file on error)."""
    atomic_write_text(path, format_run(run, tag))
