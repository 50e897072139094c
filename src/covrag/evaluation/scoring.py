"""``evaluate``: measure values of a run per topic; ``aggregate``: their means.

Topics are those of the judgments, in their order. A judged topic the run lacks scores 0 on every
measure (trec_eval ``-c`` style; ir_measures does the same), so means are over all judged topics.
A run topic without judgments is ignored, with a logged warning.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError
from covrag.evaluation._context import Context
from covrag.evaluation.judgments import Judgments, RunLike
from covrag.evaluation.measures import Measure, parse_measure, parse_measures
from covrag.types import FloatArray

logger = logging.getLogger(__name__)

MeasuresLike = str | Measure | Iterable[str | Measure]

_BLOCK = 1 << 20  # array elements per batch of topics


@dataclass(frozen=True, eq=False)
class EvalResults:
    """Per-topic values of several measures on one run.

    Attributes:
        measures: The measures, in the order asked.
        query_ids: The judged topics, in the judgments' order.
        values: (len(query_ids), len(measures)) read-only array.
    """

    measures: tuple[Measure, ...]
    query_ids: tuple[str, ...]
    values: FloatArray

    def __post_init__(self) -> None:
        values = np.array(self.values, dtype=np.float64)
        if values.shape != (len(self.query_ids), len(self.measures)):
            raise ValueError(
                f"EvalResults.values has shape {values.shape}, expected "
                f"({len(self.query_ids)}, {len(self.measures)})"
            )
        values.setflags(write=False)
        object.__setattr__(self, "values", values)

    def _column_of(self, measure: Measure | str) -> int:
        key = parse_measure(measure)
        try:
            return self.measures.index(key)
        except ValueError:
            raise ConfigError(
                f"{key!r} was not evaluated (evaluated: {', '.join(map(repr, self.measures))})"
            ) from None

    def column(self, measure: Measure | str) -> FloatArray:
        """Per-topic values of one measure, in ``query_ids`` order."""
        result: FloatArray = self.values[:, self._column_of(measure)]
        return result

    def __getitem__(self, measure: Measure | str) -> dict[str, float]:
        """Query id -> value of one measure."""
        column = self.column(measure)
        return dict(zip(self.query_ids, column.tolist(), strict=True))

    def mean(self, measure: Measure | str) -> float:
        """Mean over all judged topics (NaN when there are none)."""
        column = self.column(measure)
        return float(column.mean()) if len(column) else float("nan")

    def means(self) -> dict[Measure, float]:
        """Measure -> mean over all judged topics."""
        return {m: self.mean(m) for m in self.measures}

    def __repr__(self) -> str:
        means = ", ".join(f"{m!r}: {v:.4f}" for m, v in self.means().items())
        return f"EvalResults({len(self.query_ids)} topics; means {{{means}}})"


def evaluate(judgments: Judgments, run: RunLike, measures: MeasuresLike) -> EvalResults:
    """Per-topic values of ``measures`` for ``run`` against ``judgments``.

    Args:
        judgments: What each judged doc supports (and costs), per topic.
        run: Query id -> doc ids, best first.
        measures: A measure, a specification string (``"alpha-nDCG@10"``) or several.

    Returns:
        The values, one row per judged topic. A judged topic the run lacks scores 0 on every
        measure; run topics without judgments are ignored (and logged).

    Raises:
        ConfigError: an unknown or malformed measure.
        DataError: a ranking that repeats a doc, or a budgeted measure on a ranked doc without a
            known token cost.

    Example:
        >>> j = Judgments.from_labels({"q": {"d1": ["a"], "d2": ["a"], "d3": ["b"]}})
        >>> r = evaluate(j, {"q": ["d1", "d2", "d3"]}, ["StRecall@2", "P@2"])
        >>> r["StRecall@2"], r["P@2"]
        ({'q': 0.5}, {'q': 1.0})
    """
    chosen = parse_measures(measures)
    _warn_unjudged(judgments, run)
    compiled = judgments._compiled
    n_topics = len(compiled.query_ids)
    values = np.zeros((n_topics, len(chosen)))
    depth = max((m.depth for m in chosen), default=0)
    per_topic = depth * (compiled.sentinel + 1 + compiled.doc_aspects.shape[1])
    if any(m.depth == 0 for m in chosen):
        longest = max((len(r) for r in run.values() if not isinstance(r, str)), default=0)
        per_topic += longest * (compiled.doc_aspects.shape[1] + 2)
    batch = max(1, _BLOCK // max(1, per_topic))
    for start in range(0, n_topics, batch):
        topics = range(start, min(n_topics, start + batch))
        context = Context(compiled, run, topics, depth)
        for j, measure in enumerate(chosen):
            values[start : start + len(topics), j] = measure._compute(context)
    return EvalResults(chosen, compiled.query_ids, values)


def aggregate(judgments: Judgments, run: RunLike, measures: MeasuresLike) -> dict[Measure, float]:
    """Measure -> mean over all judged topics (a topic the run lacks counts as 0)."""
    return evaluate(judgments, run, measures).means()


def _warn_unjudged(judgments: Judgments, run: RunLike) -> None:
    extra = [query_id for query_id in run if query_id not in judgments]
    if extra:
        shown = ", ".join(map(repr, extra[:5])) + (", ..." if len(extra) > 5 else "")
        logger.warning("%d run topic(s) have no judgments and are ignored: %s", len(extra), shown)
