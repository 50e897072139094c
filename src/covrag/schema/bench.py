"""The bench summary: what ``covrag bench --out DIR`` writes as ``DIR/summary.json`` (and
``--json`` prints without ``per_query``), and what ``covrag report`` draws.

::

    {"dataset", "topics", "baseline", "oracle",
     "results": [{"method", "budget", "means": {measure: value}, "ci95": {measure: [low, high]},
                  "p_vs_baseline_holm", "headroom", "gap_closed",
                  "select_seconds_per_topic", "coverage_pairs_per_topic",
                  "coverage_seconds_per_topic", "aspects_seconds_per_topic",
                  "per_query": {measure: {query_id: value}}}]}

A value that is not a number (NaN, infinite) is written as JSON's NaN by ``json.dumps`` or as
null by other writers; the reader takes null as NaN.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from covrag.schema.dataset import number
from covrag.types import Budget


def _number_or_nan(value: Any) -> float:
    result = number(value)
    return math.nan if result is None else result


def _pairs(value: Any) -> Any:
    # Bounds that are not a [low, high] pair are left out (older summaries wrote others).
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if isinstance(v, list) and len(v) == 2}
    return value


Value = Annotated[float, BeforeValidator(_number_or_nan)]


class BenchRow(BaseModel):
    """One method under one budget."""

    model_config = ConfigDict(extra="allow")

    method: str
    budget: str
    means: dict[str, Value] = {}
    ci95: Annotated[dict[str, tuple[Value, Value]], BeforeValidator(_pairs)] = {}
    p_vs_baseline_holm: dict[str, Value] = {}
    headroom: dict[str, Value] = {}
    gap_closed: dict[str, Value] = {}
    select_seconds_per_topic: Value = 0.0
    coverage_pairs_per_topic: Value = 0.0
    coverage_seconds_per_topic: Value = 0.0
    aspects_seconds_per_topic: Value = 0.0
    per_query: dict[str, dict[str, Value]] = {}

    @classmethod
    def of(
        cls,
        *,
        method: str,
        budget: Budget,
        means: Mapping[str, float],
        ci: Mapping[str, tuple[float, float]],
        p_values: Mapping[str, float],
        headroom: Mapping[str, float],
        gap_closed: Mapping[str, float],
        select_seconds: float,
        coverage_pairs: float,
        coverage_seconds: float,
        aspects_seconds: float,
        values: Mapping[str, Mapping[str, float]],
    ) -> BenchRow:
        """The row of one method's result (the fields of ``covrag.bench.MethodResult``)."""
        return cls.model_validate(
            {
                "method": method,
                "budget": str(budget),
                "means": means,
                "ci95": {k: list(v) for k, v in ci.items()},
                "p_vs_baseline_holm": p_values,
                "headroom": headroom,
                "gap_closed": gap_closed,
                "select_seconds_per_topic": select_seconds,
                "coverage_pairs_per_topic": coverage_pairs,
                "coverage_seconds_per_topic": coverage_seconds,
                "aspects_seconds_per_topic": aspects_seconds,
                "per_query": values,
            }
        )


class BenchSummary(BaseModel):
    """A whole ``summary.json``."""

    model_config = ConfigDict(extra="allow")

    dataset: str = ""
    topics: int | str = ""
    baseline: str = ""
    oracle: str = ""
    results: list[BenchRow]


def summary_record(
    *, dataset: str, topics: int, baseline: str, oracle: str, results: Sequence[BenchRow]
) -> dict[str, Any]:
    """The JSON object of a bench (rows from :meth:`BenchRow.of`)."""
    summary = BenchSummary(
        dataset=dataset, topics=topics, baseline=baseline, oracle=oracle, results=list(results)
    )
    record: dict[str, Any] = summary.model_dump(exclude_unset=True, warnings=False)
    return record
