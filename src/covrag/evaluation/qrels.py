"""Judgments as TREC diversity qrels, for ir_measures, pyndeval, ndeval and trec_eval.

A diversity qrel is ``(query_id, doc_id, relevance, iteration)`` with the aspect id in the
``iteration`` field, the fields of ``ir_measures.Qrel`` (``GenericQrel`` in older releases). The
text format is TREC's four columns ``query_id iteration doc_id relevance``, the order
``ir_measures.read_trec_qrels`` and ndeval read.

Lines are written topic by topic, aspect by aspect in topic order, then docs ascending; a judged
doc that supports no aspect gets one line with relevance 0 and the topic's first aspect id, so it
stays judged. Writing aspects in topic order matters for non-dyadic alpha: pyndeval numbers
aspects in order of first appearance and sums gains in that order, which is the order covrag sums
in, so even the last bit agrees.

ir_measures is an optional extra (``covrag[reference]``), imported only by :func:`to_ir_measures`
and :func:`run_to_ir_measures`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from operator import itemgetter
from typing import Any, NamedTuple, cast

from covrag.errors import DataError, MissingExtraError
from covrag.evaluation._compiled import paused_gc
from covrag.evaluation._qrels_columns import read_qrels_columns
from covrag.evaluation.judgments import Judgments, RunLike, TopicJudgments
from covrag.files import atomic_write_text, iter_lines
from covrag.types import CoverageMatrix, Topic


class DiversityQrel(NamedTuple):
    """One diversity judgment, with the fields of ``ir_measures.Qrel``."""

    query_id: str
    doc_id: str
    relevance: int
    iteration: str


def diversity_qrels(judgments: Judgments) -> list[DiversityQrel]:
    """One line per (doc, supported aspect), plus one relevance-0 line per non-relevant doc."""
    lines: list[DiversityQrel] = []
    for topic in judgments.topics:
        supporters: dict[str, list[str]] = {aspect: [] for aspect in topic.aspects}
        for doc, aspects in topic.labels.items():
            for aspect in aspects:
                supporters[aspect].append(doc)
        for aspect, docs in supporters.items():
            lines.extend(DiversityQrel(topic.query_id, doc, 1, aspect) for doc in sorted(docs))
        placeholder = topic.aspects[0] if topic.aspects else "0"
        lines.extend(
            DiversityQrel(topic.query_id, doc, 0, placeholder)
            for doc in sorted(d for d, aspects in topic.labels.items() if not aspects)
        )
    return lines


def topic_qrels(topics: Iterable[Topic]) -> list[DiversityQrel]:
    """Diversity qrels of the gold labels of topics."""
    return diversity_qrels(Judgments.from_topics(topics))


def coverage_qrels(matrices: Mapping[str, CoverageMatrix]) -> list[DiversityQrel]:
    """Diversity qrels of the covered pairs of coverage matrices, per query id."""
    return diversity_qrels(Judgments.from_coverage(matrices))


def binary_qrels(judgments: Judgments) -> list[DiversityQrel]:
    """Ad hoc qrels: one line per judged doc, relevance 1 if it supports any aspect, else 0.

    For P@k and nDCG@k in trec_eval or ir_measures (diversity qrels would give one doc several
    lines there).
    """
    return [
        DiversityQrel(topic.query_id, doc, int(bool(topic.labels[doc])), "0")
        for topic in judgments.topics
        for doc in sorted(topic.labels)
    ]


def judgments_from_qrels(qrels: Iterable[Any]) -> Judgments:
    """Judgments from diversity qrels (namedtuples with ir_measures' fields or 4-tuples
    ``(query_id, doc_id, relevance, iteration)``); relevance > 0 means the doc supports the
    aspect. Aspect order is order of first appearance, per topic.
    """
    with paused_gc():
        # Column-wise, C-level conversions; the collector paused while millions of small
        # containers are made (its passes over them cost more than making them).
        rows = qrels if isinstance(qrels, list) else list(qrels)
        query_ids, doc_ids, relevances, aspect_ids = (
            list(map(itemgetter(i), rows)) for i in range(4)
        )
        labels: dict[str, dict[str, set[str]]] = {}
        order: dict[str, dict[str, None]] = {}
        for query_id, doc_id, relevance, aspect in zip(
            map(str, query_ids), map(str, doc_ids), relevances, map(str, aspect_ids), strict=True
        ):
            docs = labels.get(query_id)
            if docs is None:
                docs = labels[query_id] = {}
                order[query_id] = {}
            aspects = docs.get(doc_id)
            if aspects is None:
                aspects = docs[doc_id] = set()
            if relevance > 0:
                aspects.add(aspect)
                order[query_id][aspect] = None
        return Judgments(
            tuple(
                # TopicJudgments stores the sets as frozensets.
                TopicJudgments(
                    query_id, cast(Mapping[str, frozenset[str]], docs), tuple(order[query_id])
                )
                for query_id, docs in labels.items()
            )
        )


def format_qrels(qrels: Iterable[DiversityQrel]) -> str:
    """TREC diversity qrels text: ``query_id iteration doc_id relevance`` per line."""
    out = []
    for line in qrels:
        fields = (line.query_id, line.iteration, line.doc_id)
        if any(not f or any(c.isspace() for c in f) for f in fields):
            raise DataError(f"qrels ids must be non-empty and free of whitespace: {line!r}")
        out.append(f"{line.query_id} {line.iteration} {line.doc_id} {int(line.relevance)}\n")
    return "".join(out)


def write_qrels(path: str | os.PathLike[str], qrels: Iterable[DiversityQrel]) -> None:
    """Write TREC diversity qrels atomically (no partial file on error)."""
    atomic_write_text(path, format_qrels(qrels))


def read_qrels(path: str | os.PathLike[str]) -> list[DiversityQrel]:
    """Read TREC diversity qrels (four columns); raises DataError naming the bad line (a
    column count, a relevance that is not an integer, bytes that are not UTF-8)."""
    with paused_gc():  # a million small records: the collector's passes would cost more
        return _read_qrels_lines(path)


def read_judgments(path: str | os.PathLike[str]) -> Judgments:
    """Judgments from a TREC diversity qrels file: ``judgments_from_qrels(read_qrels(path))``.

    A plain file (ASCII, four columns on every non-blank line) is read column-wise with numpy,
    without a Python object per line, and each topic's ``TopicJudgments`` is made only when
    asked for: what ``covrag eval --qrels`` uses. Any other file, and every error, goes through
    :func:`read_qrels`.

    Raises:
        DataError: a line without 4 columns or with a non-integer relevance, naming the file
            and the line.
    """
    judgments = read_qrels_columns(path)
    return judgments if judgments is not None else judgments_from_qrels(read_qrels(path))


def _read_qrels_lines(path: str | os.PathLike[str]) -> list[DiversityQrel]:
    """Line by line, for the message naming a bad line."""
    lines = []
    for number, text in iter_lines(path):  # bytes that are not UTF-8: a DataError too
        parts = text.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise DataError(
                "expected 4 columns 'query_id iteration doc_id relevance'",
                path=str(path),
                line=number,
            )
        try:
            relevance = int(parts[3])
        except ValueError:
            raise DataError(
                "relevance must be an integer", path=str(path), line=number, field="relevance"
            ) from None
        lines.append(DiversityQrel(parts[0], parts[2], relevance, parts[1]))
    return lines


def _ir_measures() -> Any:
    try:
        import ir_measures
    except ImportError:
        raise MissingExtraError("ir_measures", "reference") from None
    return ir_measures


def to_ir_measures(qrels: Iterable[DiversityQrel]) -> list[Any]:
    """The qrels as ``ir_measures.Qrel`` records (needs covrag[reference])."""
    qrel = _ir_measures().Qrel
    return [qrel(q.query_id, q.doc_id, q.relevance, q.iteration) for q in qrels]


def run_to_ir_measures(run: RunLike) -> list[Any]:
    """A run as ``ir_measures.ScoredDoc`` records with strictly decreasing scores, so every
    tool reads covrag's rank order whatever the doc ids (needs covrag[reference])."""
    scored = _ir_measures().ScoredDoc
    return [
        scored(query_id, doc, float(len(docs) - rank))
        for query_id, docs in run.items()
        for rank, doc in enumerate(docs)
    ]
