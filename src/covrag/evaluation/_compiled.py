"""Judgments compiled to padded arrays, and runs mapped onto them (private).

Every judged document of every topic is one row of a global table; a topic's rows are
consecutive and ordered by doc id descending (the order ndeval's ideal-ranking tie-break needs).
One extra row, ``empty``, stands for any unjudged document: no aspects, no cost. Doc ids are
numbered once (a vocabulary shared by all topics), and a ranked doc finds its row by a binary
search of (topic, doc) keys, for a whole batch of rankings at once.
"""

from __future__ import annotations

import gc
import itertools
import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from covrag.errors import DataError
from covrag.evaluation import _kernels
from covrag.evaluation._kernels import AspectArray, aspect_dtype
from covrag.types import BoolArray, FloatArray, IntArray

RunLike = Mapping[str, Sequence[str]]
"""A run: query id -> doc ids in rank order (best first)."""


class JudgedTopic(Protocol):
    """What compiling reads of a topic's judgments (:class:`~covrag.evaluation.TopicJudgments`).

    Declared here rather than imported, so that the judgments module, which compiles its
    records, is not imported back (no cycle).
    """

    @property
    def query_id(self) -> str: ...

    @property
    def aspects(self) -> tuple[str, ...]: ...

    @property
    def costs(self) -> Mapping[str, int]: ...

    @property
    def excluded_docs(self) -> frozenset[str]: ...

    @property
    def actual_aspects(self) -> tuple[str, ...]: ...

    @property
    def label_sets(self) -> Mapping[str, frozenset[str]]: ...


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector (if it runs) for a bulk build of acyclic objects."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


_MISSING = -1
_IDEAL_BLOCK = 1 << 20  # elements of (topics x candidates x width) per ideal-ranking batch


@dataclass(frozen=True)
class Rows:
    """The judged documents of a record, one row each, before padding (what both builders make).

    Attributes:
        query_ids: Topic order.
        doc_names: The doc-id vocabulary: code -> doc id.
        row_docs: (rows,) vocabulary code of each row's doc; a topic's rows are consecutive.
        n_docs: (topics,) rows of each topic.
        doc_aspects: (rows + 1, width) local aspect indices, ascending, ``sentinel``-padded;
            the last row is the ``empty`` row.
        n_aspects: (rows + 1,) aspects each row supports.
        costs: (rows,) token costs, -1 where unknown.
        actual: (topics,) aspects with at least one supporting judged doc.
        sentinel: The largest number of aspects of any topic.
        keys: The rows' lookup keys when the builder has them, ascending (else computed).
    """

    query_ids: tuple[str, ...]
    doc_names: Sequence[str]
    row_docs: IntArray
    n_docs: IntArray
    doc_aspects: AspectArray
    n_aspects: IntArray
    costs: IntArray
    actual: IntArray
    sentinel: int
    keys: IntArray | None = None


@dataclass(frozen=True, eq=False)
class Compiled:
    """Padded arrays of a Judgments record.

    Attributes:
        query_ids: Topic order.
        doc_names: The doc-id vocabulary: code -> doc id.
        row_docs: (rows,) vocabulary code of each row's doc.
        topic_offsets: (topics + 1,) delimit each topic's rows.
        doc_aspects: (rows + 1, width) local aspect indices, ascending, padded with ``sentinel``.
        n_aspects_of_doc: (rows + 1,) aspects each row supports.
        costs: (rows + 1,) token costs, -1 where unknown.
        actual: (topics,) aspects with at least one supporting judged doc.
        relevant_rows: Per topic, the global rows of its relevant docs (doc id descending),
            concatenated; ``relevant_offsets`` (topics + 1,) delimits them.
        sentinel: Padding aspect index (the largest number of aspects of any topic).
        excluded_rows: (rows + 1,) whether each row supports an aspect its topic excludes.
        keys: Sorted lookup keys of the rows' (topic, doc code) pairs; ``key_rows`` their rows.
    """

    query_ids: tuple[str, ...]
    doc_names: Sequence[str]
    row_docs: IntArray
    topic_offsets: IntArray
    doc_aspects: AspectArray
    n_aspects_of_doc: IntArray
    costs: IntArray
    actual: IntArray
    relevant_rows: IntArray
    relevant_offsets: IntArray
    sentinel: int
    excluded_rows: BoolArray
    keys: IntArray
    key_rows: IntArray
    _vocab: dict[str, int] = field(default_factory=dict, repr=False)
    _ideal: dict[float, FloatArray] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def empty(self) -> int:
        """The row of an unjudged document."""
        return len(self.n_aspects_of_doc) - 1

    @property
    def vocab(self) -> dict[str, int]:
        """Doc id -> vocabulary code, made on first use."""
        if len(self._vocab) < len(self.doc_names):
            with self._lock:
                if len(self._vocab) < len(self.doc_names):
                    names = self.doc_names
                    self._vocab.update(zip(names, range(len(names)), strict=True))
        return self._vocab

    @classmethod
    def build(cls, topics: Sequence[JudgedTopic]) -> Compiled:
        """From judgments records (sorting each topic's docs, compiling their label sets)."""
        with paused_gc():  # a dict per topic, an int per doc: nothing cyclic to collect
            rows, vocab = _topic_rows(topics)
            compiled = cls.assemble(rows, vocab)
            topic_of, doc_of = [], []
            for i, topic in enumerate(topics):
                topic_of += [i] * len(topic.excluded_docs)
                doc_of += [vocab[doc] for doc in topic.excluded_docs]
            if doc_of:
                found = compiled.rows_of(np.array(topic_of), np.array(doc_of))
                excluded = compiled.excluded_rows.copy()
                excluded[found] = True
                excluded.setflags(write=False)
                object.__setattr__(compiled, "excluded_rows", excluded)
            return compiled

    @classmethod
    def assemble(cls, rows: Rows, vocab: dict[str, int] | None = None) -> Compiled:
        """Pad the rows into the arrays the kernels read; no excluded rows."""
        n_rows = len(rows.row_docs)
        doc_aspects, length = rows.doc_aspects, rows.n_aspects
        n_topics = len(rows.query_ids)
        topic_of = np.repeat(np.arange(n_topics), rows.n_docs)
        relevant = np.flatnonzero(length[:-1] > 0)
        per_topic = np.bincount(topic_of[relevant], minlength=n_topics)
        # Lookup keys: within a topic, rows are by doc id descending, so the keys of a
        # vocabulary in string order come sorted and need no sort.
        keys = rows.keys
        key_rows = np.arange(n_rows, dtype=np.int64)
        if keys is None:
            keys = _keys(topic_of, rows.row_docs, len(rows.doc_names))
        if rows.keys is None and n_rows > 1 and not (keys[1:] > keys[:-1]).all():
            key_rows = np.argsort(keys, kind="stable")
            keys = keys[key_rows]
        costs = np.append(rows.costs, _MISSING).astype(np.int64)
        excluded_rows = np.zeros(n_rows + 1, dtype=bool)
        for array_ in (doc_aspects, length, costs, excluded_rows, keys, key_rows):
            array_.setflags(write=False)
        return cls(
            query_ids=rows.query_ids,
            doc_names=rows.doc_names,
            row_docs=rows.row_docs,
            topic_offsets=np.concatenate([[0], np.cumsum(rows.n_docs)]).astype(np.int64),
            doc_aspects=doc_aspects,
            n_aspects_of_doc=length,
            costs=costs,
            actual=rows.actual,
            relevant_rows=relevant,
            relevant_offsets=np.concatenate([[0], np.cumsum(per_topic)]).astype(np.int64),
            sentinel=rows.sentinel,
            excluded_rows=excluded_rows,
            keys=keys,
            key_rows=key_rows,
            _vocab=vocab if vocab is not None else {},
        )

    def rows_of(self, topics: IntArray, codes: IntArray) -> IntArray:
        """Global rows of (topic, doc code) pairs; ``empty`` for an unjudged pair (code -1)."""
        keys = _keys(topics, codes, len(self.doc_names))
        if len(self.keys) == 0:
            return np.full(len(keys), self.empty, dtype=np.int64)
        where = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        hit = (codes >= 0) & (self.keys[where] == keys)
        result: IntArray = np.where(hit, self.key_rows[where], self.empty)
        return result

    @property
    def n_relevant(self) -> IntArray:
        result: IntArray = np.diff(self.relevant_offsets)
        return result

    def ideal_gains(self, alpha: float, depth: int) -> FloatArray:
        """(topics, depth) gains of ndeval's ideal ranking, cached per alpha."""
        with self._lock:
            cached = self._ideal.get(alpha)
            if cached is None or cached.shape[1] < depth:
                cached = self._compute_ideal(alpha, depth)
                cached.setflags(write=False)
                self._ideal[alpha] = cached
        return cached[:, :depth]

    def _compute_ideal(self, alpha: float, depth: int) -> FloatArray:
        gains = np.zeros((len(self.query_ids), depth))
        n_relevant = self.n_relevant
        order = np.argsort(n_relevant, kind="stable")
        order = order[n_relevant[order] > 0]
        sizes_sorted = n_relevant[order] * self.doc_aspects.shape[1]
        start = 0
        while start < len(order):
            # Topics sorted by size, cut into batches of bounded padded volume.
            volume = np.arange(1, len(order) - start + 1) * sizes_sorted[start:]
            stop = start + max(1, int(np.searchsorted(volume, _IDEAL_BLOCK, side="right")))
            batch = order[start:stop]
            sizes = n_relevant[batch]
            rows = np.full((len(batch), int(sizes.max())), self.empty, dtype=np.int64)
            which = np.repeat(np.arange(len(batch)), sizes)
            slot = np.arange(len(which)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
            rows[which, slot] = self.relevant_rows[self.relevant_offsets[batch][which] + slot]
            gains[batch] = _kernels.ideal_alpha_gains(
                self.doc_aspects, self.n_aspects_of_doc, self.sentinel, rows, alpha, depth
            )
            start = stop
        return gains

    def run_rows(self, run: RunLike, topics: Sequence[int], depth: int | None) -> IntArray:
        """(len(topics), depth) global rows of each topic's ranked docs, ``empty``-padded.

        ``depth`` None maps whole rankings (padded to the longest). A topic the run lacks maps to
        an all-``empty`` row, so it scores 0.
        """
        rankings: list[Sequence[str]] = []
        for topic in topics:
            query_id = self.query_ids[topic]
            ranking = run.get(query_id)
            if ranking is None:
                rankings.append(())
                continue
            if type(ranking) is tuple or type(ranking) is list:  # the checks, inline (fast)
                prefix = ranking if depth is None else ranking[:depth]
                if len(set(prefix)) == len(prefix):
                    rankings.append(prefix)
                    continue
            rankings.append(check_ranking(query_id, ranking, depth))
        lengths = np.fromiter(map(len, rankings), dtype=np.int64, count=len(rankings))
        width = depth if depth is not None else int(lengths.max(initial=0))
        rows = np.full((len(topics), width), self.empty, dtype=np.int64)
        total = int(lengths.sum())
        if total:
            ranked = itertools.chain.from_iterable(rankings)
            codes = np.fromiter(
                map(self.vocab.get, ranked, itertools.repeat(-1)), dtype=np.int64, count=total
            )
            which = np.repeat(np.arange(len(topics)), lengths)
            slot = np.arange(total) - np.repeat(np.cumsum(lengths) - lengths, lengths)
            topic_ids = np.asarray(topics, dtype=np.int64)[which]
            rows[which, slot] = self.rows_of(topic_ids, codes)
        return rows

    def check_costs(self, rows: IntArray, topics: Sequence[int], run: RunLike, what: str) -> None:
        """Raise DataError naming the first ranked doc without a known token cost."""
        query_ids = [self.query_ids[t] for t in topics]
        lengths = np.array([len(run.get(q, ())) for q in query_ids], dtype=np.int64)
        ranked = np.arange(rows.shape[1]) < lengths[:, None]
        unknown = np.argwhere(ranked & (self.costs[rows] < 0))  # unjudged rows cost -1 too
        if len(unknown):
            i, rank = (int(x) for x in unknown[0])
            doc = run[query_ids[i]][rank]
            state = "is not judged" if rows[i, rank] == self.empty else "has no token cost"
            raise DataError(
                f"{what}: doc {doc!r} of query {query_ids[i]!r} {state}; budgeted measures need "
                "the token cost of every ranked doc (build the judgments from topics whose "
                "passages carry `tokens`, or pass costs=)"
            )


def _keys(topics: IntArray, codes: IntArray, size: int) -> IntArray:
    """Lookup keys of (topic, doc code) pairs: ascending for rows by doc id descending when
    codes follow string order."""
    result: IntArray = topics * size + (size - 1 - codes)
    return result


def _topic_rows(topics: Sequence[JudgedTopic]) -> tuple[Rows, dict[str, int]]:
    """The rows of judgments records: each topic's docs by id descending, label sets compiled."""
    # array.array: C-speed extends, then zero-copy views as numpy arrays.
    lengths, flat, costs, n_docs = array("q"), array("q"), array("q"), array("q")
    topic_docs: list[list[str]] = []
    for topic in topics:
        labels = topic.label_sets
        docs = sorted(labels, reverse=True)
        topic_docs.append(docs)
        position = {aspect: j for j, aspect in enumerate(topic.aspects)}
        sets = list(map(labels.__getitem__, docs))
        lengths.extend(map(len, sets))
        flat.extend(map(position.__getitem__, itertools.chain.from_iterable(sets)))
        if topic.costs:
            costs.extend(map(topic.costs.get, docs, itertools.repeat(_MISSING, len(docs))))
        else:
            costs.extend(itertools.repeat(_MISSING, len(docs)))
        n_docs.append(len(docs))
    names = list(dict.fromkeys(itertools.chain.from_iterable(topic_docs)))
    vocab = dict(zip(names, range(len(names)), strict=True))
    n_rows = len(lengths)
    row_docs = np.fromiter(
        map(vocab.__getitem__, itertools.chain.from_iterable(topic_docs)), np.int64, n_rows
    )
    length = np.frombuffer(lengths, dtype=np.int64)
    values = np.frombuffer(flat, dtype=np.int64)
    sentinel = max((len(t.aspects) for t in topics), default=0)
    row_of = np.repeat(np.arange(n_rows), length)
    order = np.argsort(row_of * (sentinel + 1) + values, kind="stable")  # radix sort
    length = np.append(length, 0)
    width = max(1, int(length.max()))
    starts = np.cumsum(length) - length
    doc_aspects = np.full((n_rows + 1, width), sentinel, dtype=aspect_dtype(sentinel))
    doc_aspects[row_of, np.arange(len(values)) - starts[row_of]] = values[order]
    rows = Rows(
        query_ids=tuple(t.query_id for t in topics),
        doc_names=names,
        row_docs=row_docs,
        n_docs=np.frombuffer(n_docs, dtype=np.int64),
        doc_aspects=doc_aspects,
        n_aspects=length,
        costs=np.frombuffer(costs, dtype=np.int64),
        actual=np.array([len(t.actual_aspects) for t in topics], dtype=np.int64),
        sentinel=sentinel,
    )
    return rows, vocab


def check_ranking(query_id: str, ranking: Any, depth: int | None = None) -> Sequence[str]:
    """The first ``depth`` doc ids of a ranking (all when None), checked for shape and repeats."""
    if (
        type(ranking) is not tuple
        and type(ranking) is not list
        and (isinstance(ranking, str) or not isinstance(ranking, Sequence))
    ):
        raise DataError(
            f"run ranking for query {query_id!r} must be a sequence of doc ids, "
            f"got {type(ranking).__name__}"
        )
    prefix: Sequence[str] = ranking if depth is None else ranking[:depth]
    if len(set(prefix)) != len(prefix):
        seen: set[str] = set()
        for doc in prefix:
            if doc in seen:
                raise DataError(f"run ranking for query {query_id!r} lists doc {doc!r} twice")
            seen.add(doc)
    return prefix
