"""Judgments straight from the columns of a qrels file, without a Python object per line (private).

The same record :func:`~covrag.evaluation.qrels.judgments_from_qrels` builds from the file's lines:
topics in order of first appearance, each topic's aspects in order of first appearance on a
line of relevance > 0, a doc judged once it appears on any line. Ids are numbered by sorting
(``covrag.data._columns.factorize``), rows and (row, aspect) pairs are the distinct keys of
sorted integer arrays, and each topic's ``TopicJudgments`` is made only when asked for.
"""

from __future__ import annotations

import functools
import os
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from covrag.data._columns import Columns, factorize, parse_ints, read_columns
from covrag.evaluation._compiled import Compiled, Rows
from covrag.evaluation._kernels import AspectArray, aspect_dtype
from covrag.evaluation.judgments import Judgments, TopicJudgments
from covrag.types import IntArray

# Columns of a TREC diversity qrels line: query_id iteration (the aspect) doc_id relevance.
_QUERY, _ASPECT, _DOC, _RELEVANCE = 0, 1, 2, 3


def _distinct(keys: IntArray, size: int) -> tuple[IntArray, IntArray]:
    """The distinct keys (in ``range(size)``) ascending, and each key's index among them.

    A table of ``size`` flags when that is not much more than the keys, else a sort.
    """
    if size <= 4 * len(keys) + 4096:
        present = np.zeros(size, dtype=bool)
        present[keys] = True
        number = np.cumsum(present, dtype=np.int64)
        number -= 1
        return np.flatnonzero(present), number[keys]
    order = np.argsort(keys)
    ordered = keys[order]
    new = np.empty(len(keys), dtype=bool)
    new[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new[1:])
    index = np.empty(len(keys), dtype=np.int64)
    index[order] = np.cumsum(new) - 1
    return ordered[new], index


def _first_appearance(first: IntArray) -> IntArray:
    """Per code, its rank in order of first appearance."""
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank


@functools.lru_cache(maxsize=8)
def _bit_table(bits: int) -> IntArray:
    """(2**bits, bits) per bitmask, the indices of its set bits ascending, padded with ``bits``."""
    masks = np.arange(1 << bits, dtype=np.int64)
    columns = np.arange(bits)
    is_set = (masks[:, None] >> columns) & 1 == 1
    table = np.sort(np.where(is_set, columns, bits), axis=1)
    table.setflags(write=False)
    return table


def _padded(masks: npt.NDArray[np.uint64], sentinel: int) -> tuple[AspectArray, IntArray]:
    """Rows of aspect bitmasks as (rows + 1, width) ascending aspect indices, sentinel-padded
    (the last row empty), and the number of aspects of each row."""
    counts = np.append(np.bitwise_count(masks), 0).astype(np.int64)
    width = max(1, int(counts.max()))
    dtype = aspect_dtype(sentinel)
    doc_aspects = np.empty((len(masks) + 1, width), dtype=dtype)
    doc_aspects[-1] = sentinel
    if sentinel <= 16:  # a table of every bitmask
        table = np.ascontiguousarray(_bit_table(sentinel)[:, :width], dtype=dtype)
        np.take(table, masks.view(np.int64), axis=0, out=doc_aspects[:-1], mode="clip")
        return doc_aspects, counts
    left = masks.copy()
    for slot in range(width):
        lowest = left & (~left + np.uint64(1))  # the lowest set bit
        index = np.bitwise_count(lowest - np.uint64(1))
        doc_aspects[:-1, slot] = np.where(left != 0, index, sentinel)
        left ^= lowest
    return doc_aspects, counts


class _TopicViews:
    """Makes topic ``i``'s ``TopicJudgments`` from the compiled arrays, on demand."""

    def __init__(
        self,
        compiled: Compiled,
        aspect_names: list[str],
        topic_aspects: IntArray,
        offsets: IntArray,
    ) -> None:
        self.compiled = compiled
        self.aspect_names = aspect_names
        self.topic_aspects = topic_aspects
        self.offsets = offsets

    def __call__(self, i: int) -> TopicJudgments:
        c = self.compiled
        names = self.aspect_names
        aspects = tuple(names[a] for a in self.topic_aspects[self.offsets[i] : self.offsets[i + 1]])
        rows = range(int(c.topic_offsets[i]), int(c.topic_offsets[i + 1]))
        labels = {
            c.doc_names[c.row_docs[r]]: frozenset(
                aspects[a] for a in c.doc_aspects[r, : c.n_aspects_of_doc[r]].tolist()
            )
            for r in rows
        }
        return TopicJudgments(c.query_ids[i], labels, aspects)


class _Lines(NamedTuple):
    """What the record needs of a qrels file's columns (the file's bytes can go after this)."""

    relevance: IntArray
    topic: IntArray  # per line: the topic, numbered in order of first appearance
    doc: IntArray  # per line: the doc's code, codes in string order
    aspect: IntArray  # per line: the aspect's code
    query_ids: tuple[str, ...]  # in topic order
    doc_names: list[str]
    aspect_names: list[str]


def _lines(columns: Columns) -> _Lines | None:
    relevance = parse_ints(columns, _RELEVANCE)
    queries = factorize(columns, _QUERY)
    docs = factorize(columns, _DOC)
    aspects = factorize(columns, _ASPECT)
    if relevance is None or queries is None or docs is None or aspects is None:
        return None
    rank = _first_appearance(queries[1])
    return _Lines(
        relevance,
        rank[queries[0]],
        docs[0],
        aspects[0],
        tuple(columns.texts(queries[1][np.argsort(rank)], _QUERY)),
        columns.texts(docs[1], _DOC),
        columns.texts(aspects[1], _ASPECT),
    )


def read_qrels_columns(path: str | os.PathLike[str]) -> Judgments | None:
    """The judgments of a plain qrels file, or None to leave it to the line-by-line reader."""
    columns = read_columns(path, 4)
    lines = None if columns is None else _lines(columns)
    del columns  # the file's bytes and token offsets go before the record is built
    if lines is None or not (lines.relevance > 0).any():
        return None  # nothing relevant (the array path assumes some): the line reader's case
    return _judgments(lines)


def judgments_from_columns(columns: Columns) -> Judgments | None:
    """The judgments of a plain qrels file's columns, or None (as :func:`read_qrels_columns`)."""
    lines = _lines(columns)
    return None if lines is None else _judgments(lines)


def _judgments(lines: _Lines) -> Judgments | None:
    relevance, topic = lines.relevance, lines.topic
    n_topics, n_docs, n_aspects = (
        len(lines.query_ids),
        len(lines.doc_names),
        len(lines.aspect_names),
    )
    # Rows: distinct (topic, doc) pairs, by topic, then doc id descending.
    row_keys, row_of_line = _distinct(topic * n_docs + (n_docs - 1 - lines.doc), n_topics * n_docs)
    # Each topic's aspects, numbered in order of first appearance on a relevant line.
    relevant = np.flatnonzero(relevance > 0)
    pair_keys, pair_of_line = _distinct(
        topic[relevant] * n_aspects + lines.aspect[relevant], n_topics * n_aspects
    )
    first = np.full(len(pair_keys), len(relevance), dtype=np.int64)
    # A pair's first line heads one of its runs of consecutive lines: only heads are compared.
    heads = np.flatnonzero(np.concatenate([[True], pair_of_line[1:] != pair_of_line[:-1]]))
    np.minimum.at(first, pair_of_line[heads], relevant[heads])
    pair_topic = pair_keys // n_aspects
    by_appearance = np.argsort(pair_topic * len(relevance) + first)
    per_topic = np.bincount(pair_topic, minlength=n_topics)
    offsets = np.concatenate([[0], np.cumsum(per_topic)]).astype(np.int64)
    local = np.empty(len(pair_keys), dtype=np.int64)
    local[by_appearance] = np.arange(len(pair_keys)) - offsets[pair_topic[by_appearance]]
    sentinel = int(per_topic.max(initial=0))
    if sentinel > 64:
        return None  # more aspects than bits: left to the line-by-line reader
    masks = np.zeros(len(row_keys), dtype=np.uint64)
    bits = np.left_shift(np.uint64(1), local[pair_of_line].astype(np.uint64))
    np.bitwise_or.at(masks, row_of_line[relevant], bits)
    doc_aspects, n_aspects_of_doc = _padded(masks, sentinel)
    compiled = Compiled.assemble(
        Rows(
            query_ids=lines.query_ids,
            doc_names=lines.doc_names,
            row_docs=n_docs - 1 - row_keys % n_docs,
            n_docs=np.bincount(row_keys // n_docs, minlength=n_topics),
            doc_aspects=doc_aspects,
            n_aspects=n_aspects_of_doc,
            costs=np.full(len(row_keys), -1, dtype=np.int64),
            actual=per_topic,
            sentinel=sentinel,
            keys=row_keys,  # topic * n_docs + (n_docs - 1 - doc): the lookup keys, ascending
        )
    )
    topic_aspects = (pair_keys % n_aspects)[by_appearance]
    views = _TopicViews(compiled, lines.aspect_names, topic_aspects, offsets)
    return Judgments._from_compiled(compiled, views)
