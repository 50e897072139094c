"""Judgments: which aspects each judged document supports, per topic, and what it costs.

A :class:`Judgments` record is the evaluation counterpart of diversity qrels: per topic, a judged
document id maps to the frozenset of aspect ids it supports. A document present with an empty set
is judged and non-relevant; a document absent is unjudged (it scores like a non-relevant one, as in
trec_eval and ndeval). Optional token costs per document feed the budgeted measures (RVC, RVC2).

Runs are plain mappings ``query id -> ranked doc ids`` (the ``covrag.data.Run`` shape). A TREC run
ranks by score descending, then doc id ascending, the order ir_measures and pyndeval use.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import cast

from covrag.errors import DataError
from covrag.evaluation._compiled import Compiled, RunLike, paused_gc
from covrag.types import CoverageMatrix, Topic

__all__ = ["Judgments", "RunLike", "TopicJudgments"]

_NO_COSTS: Mapping[str, int] = MappingProxyType({})


@dataclass(frozen=True)
class TopicJudgments:
    """The judgments of one topic.

    Attributes:
        query_id: The topic's id.
        labels: Judged doc id -> ids of the aspects it supports (empty: judged, non-relevant).
            Any iterables of aspect ids are accepted and stored as frozensets.
        aspects: The topic's aspect ids in order. Left empty, they are derived from ``labels``
            (sorted); given, every aspect a label names must be listed. Aspects nobody supports
            may be listed; measures ignore them (ndeval's "actual subtopics").
        costs: Judged doc id -> token cost, for budgeted measures; may be partial or empty.
        excluded: Aspects the request asked to leave out (polarity ``exclude``); the ``Excl``
            measure reports how much of a ranking supports them. Must be among ``aspects``.
        excluded_docs: Judged docs that support an excluded aspect, for when ``labels`` no
            longer name it (:meth:`Judgments.from_topics` takes excluded aspects out of the
            gains); docs whose labels name an excluded aspect are added to it.
    """

    query_id: str
    labels: Mapping[str, frozenset[str]]
    aspects: tuple[str, ...] = ()
    costs: Mapping[str, int] = field(default_factory=lambda: _NO_COSTS)
    excluded: frozenset[str] = frozenset()
    excluded_docs: frozenset[str] = frozenset()

    actual_aspects: tuple[str, ...] = field(init=False, repr=False, compare=False)
    """The aspects at least one judged doc supports, in topic order ("actual subtopics")."""
    _raw: dict[str, frozenset[str]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.query_id:
            raise DataError("TopicJudgments.query_id must be a non-empty string")
        # C-level conversions and checks: judgments of millions of docs build in a blink.
        labels = dict(zip(self.labels.keys(), map(frozenset, self.labels.values()), strict=True))
        used: frozenset[str] = frozenset().union(*labels.values())
        if not set(map(type, labels)) <= {str} or "" in labels:
            raise DataError(f"topic {self.query_id!r}: doc ids must be non-empty strings")
        if not set(map(type, used)) <= {str} or "" in used:
            raise DataError(f"topic {self.query_id!r}: aspect ids must be non-empty strings")
        aspects = tuple(self.aspects) or tuple(sorted(used))
        if len(set(aspects)) != len(aspects):
            raise DataError(f"topic {self.query_id!r}: duplicate aspect ids in {aspects}")
        unknown = used.difference(aspects)
        if unknown:
            raise DataError(
                f"topic {self.query_id!r}: labels name aspects {sorted(unknown)} that are not "
                "among the topic's aspects"
            )
        costs = dict(self.costs)
        for doc, cost in costs.items():
            if doc not in labels:
                raise DataError(f"topic {self.query_id!r}: cost given for unjudged doc {doc!r}")
            if isinstance(cost, bool) or not isinstance(cost, int) or cost < 0:
                raise DataError(
                    f"topic {self.query_id!r}: cost of doc {doc!r} must be an int >= 0, "
                    f"got {cost!r}"
                )
        excluded = frozenset(self.excluded)
        if not excluded <= set(aspects):
            raise DataError(
                f"topic {self.query_id!r}: excluded aspects {sorted(excluded - set(aspects))} "
                "are not among the topic's aspects"
            )
        excluded_docs = frozenset(self.excluded_docs)
        unjudged = excluded_docs.difference(labels)
        if unjudged:
            raise DataError(
                f"topic {self.query_id!r}: excluded docs {sorted(unjudged)[:5]} are not judged"
            )
        if excluded:
            excluded_docs |= {doc for doc, names in labels.items() if names & excluded}
        object.__setattr__(self, "excluded", excluded)
        object.__setattr__(self, "excluded_docs", excluded_docs)
        object.__setattr__(self, "_raw", labels)
        object.__setattr__(self, "labels", MappingProxyType(labels))
        object.__setattr__(self, "aspects", aspects)
        object.__setattr__(self, "costs", MappingProxyType(costs) if costs else _NO_COSTS)
        object.__setattr__(self, "actual_aspects", tuple(a for a in aspects if a in used))

    @property
    def label_sets(self) -> Mapping[str, frozenset[str]]:
        """``labels`` without the read-only proxy, for bulk reads (compiling millions of docs)."""
        return self._raw

    @property
    def relevant(self) -> frozenset[str]:
        """Judged docs that support at least one aspect."""
        return frozenset(doc for doc, aspects in self.labels.items() if aspects)


class Judgments(Mapping[str, TopicJudgments]):
    """Per-topic judgments: a read-only mapping ``query id -> TopicJudgments``.

    Build one with :meth:`from_topics` (gold labels), :meth:`from_coverage` (the covered pairs of
    coverage matrices), :meth:`from_labels` (plain mappings) or
    :func:`~covrag.evaluation.read_judgments` (a qrels file). Building a record also compiles
    it to the arrays the measures run on, and ideal alpha-DCG gains are cached on it per alpha
    on first use, so build one record per dataset and reuse it across runs. A record read from
    a qrels file is those arrays only: its ``TopicJudgments`` are made when first asked for.

    Example:
        >>> j = Judgments.from_labels({"q1": {"d1": ["a"], "d2": ["a", "b"], "d3": []}})
        >>> sorted(j["q1"].relevant)
        ['d1', 'd2']
    """

    __slots__ = ("_by_id", "_compiled", "_index", "_view")

    _by_id: dict[str, TopicJudgments]
    _compiled: Compiled
    _index: dict[str, int]
    _view: Callable[[int], TopicJudgments] | None

    def __init__(self, topics: Iterable[TopicJudgments]) -> None:
        topics = tuple(topics)
        by_id = {t.query_id: t for t in topics}
        if len(by_id) != len(topics):
            raise DataError("Judgments: a query id appears twice")
        self._set(Compiled.build(topics), by_id, None)

    def _set(
        self,
        compiled: Compiled,
        by_id: dict[str, TopicJudgments],
        view: Callable[[int], TopicJudgments] | None,
    ) -> None:
        object.__setattr__(self, "_compiled", compiled)
        object.__setattr__(self, "_by_id", by_id)
        object.__setattr__(self, "_view", view)
        index = dict(zip(compiled.query_ids, range(len(compiled.query_ids)), strict=True))
        object.__setattr__(self, "_index", index)

    @classmethod
    def _from_compiled(cls, compiled: Compiled, view: Callable[[int], TopicJudgments]) -> Judgments:
        """A record of compiled arrays whose topic ``i`` is made by ``view(i)`` when asked for."""
        if len(set(compiled.query_ids)) != len(compiled.query_ids):
            raise DataError("Judgments: a query id appears twice")
        record = cls.__new__(cls)
        record._set(compiled, {}, view)
        return record

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Judgments is read-only (cannot set {name!r})")

    @property
    def topics(self) -> tuple[TopicJudgments, ...]:
        """The topics' judgments, in order."""
        return tuple(map(self.__getitem__, self._compiled.query_ids))

    def __getitem__(self, query_id: str) -> TopicJudgments:
        topic = self._by_id.get(query_id)
        if topic is None:
            if self._view is None:  # a record built from topics holds them all
                raise KeyError(query_id)
            topic = self._by_id[query_id] = self._view(self._index[query_id])
        return topic

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._index

    def __iter__(self) -> Iterator[str]:
        return iter(self._compiled.query_ids)

    def __len__(self) -> int:
        return len(self._compiled.query_ids)

    def __repr__(self) -> str:
        return f"Judgments({len(self)} topics)"

    @property
    def query_ids(self) -> tuple[str, ...]:
        return self._compiled.query_ids

    @classmethod
    def from_topics(cls, topics: Iterable[Topic]) -> Judgments:
        """Gold labels of topics (``topic.labels``); costs from ``passage.tokens`` where known.

        Aspects with polarity ``exclude`` (the request asked to leave them out) are taken out of
        the gains: a doc supporting only excluded aspects is not relevant, and no measure
        rewards covering them; ``Excl@k`` reports the share of the ranking that supports them.

        Raises:
            DataError: a topic without gold labels.
        """
        result = []
        for topic in topics:
            if not topic.labels:
                raise DataError(
                    f"topic {topic.query_id!r} has no gold labels; evaluation needs labelled "
                    "topics (or build judgments from a coverage matrix)"
                )
            costs = {
                p.id: p.tokens
                for p in topic.passages
                if p.tokens is not None and p.id in topic.labels
            }
            excluded = frozenset(a.id for a in topic.aspects if a.polarity == "exclude")
            labels: Mapping[str, frozenset[str]] = topic.labels
            excluded_docs: frozenset[str] = frozenset()
            if excluded:
                # Content the request asked to leave out is no gain: Excl@k counts it instead.
                excluded_docs = frozenset(d for d, names in labels.items() if names & excluded)
                labels = {d: names - excluded for d, names in labels.items()}
            result.append(
                TopicJudgments(
                    topic.query_id, labels, topic.aspect_ids, costs, excluded, excluded_docs
                )
            )
        return cls(tuple(result))

    @classmethod
    def from_coverage(
        cls,
        matrices: Mapping[str, CoverageMatrix],
        costs: Mapping[str, Mapping[str, int]] | None = None,
    ) -> Judgments:
        """The covered pairs (``probs >= threshold``) of a coverage matrix per query id.

        Every row of a matrix is a judged doc; its aspect ids become the topic's aspects.
        """
        result = []
        for query_id, matrix in matrices.items():
            covered = matrix.covered
            labels = {
                doc: frozenset(matrix.aspect_ids[j] for j in covered[i].nonzero()[0])
                for i, doc in enumerate(matrix.passage_ids)
            }
            topic_costs = (costs or {}).get(query_id, _NO_COSTS)
            result.append(TopicJudgments(query_id, labels, matrix.aspect_ids, topic_costs))
        return cls(tuple(result))

    @classmethod
    def from_labels(
        cls,
        labels: Mapping[str, Mapping[str, Iterable[str]]],
        costs: Mapping[str, Mapping[str, int]] | None = None,
        aspects: Mapping[str, Sequence[str]] | None = None,
    ) -> Judgments:
        """From ``query id -> doc id -> aspect ids`` (and optional costs and aspect orders)."""
        result = []
        with paused_gc():  # a frozenset per doc, nothing cyclic
            for query_id, topic_labels in labels.items():
                result.append(
                    TopicJudgments(
                        query_id,
                        # TopicJudgments turns any iterables of aspect ids into frozensets.
                        cast(Mapping[str, frozenset[str]], topic_labels),
                        tuple((aspects or {}).get(query_id, ())),
                        (costs or {}).get(query_id, _NO_COSTS),
                    )
                )
        return cls(tuple(result))
