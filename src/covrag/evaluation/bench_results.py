"""The records of a bench run: per method and budget, the values, means, intervals and tests.

:mod:`covrag.pipeline.bench` fills them; ``covrag bench`` prints them and writes
:meth:`BenchResult.to_json` as ``summary.json``, which :mod:`covrag.report.bench_html` renders.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from covrag.evaluation.headroom import ORACLE as ORACLE  # re-exported with the records
from covrag.schema.bench import BenchRow, summary_record
from covrag.types import Budget, Selection


@dataclass
class MethodResult:
    """One method under one budget: its selections, per-topic values and what they cost."""

    method: str
    budget: Budget
    selections: list[Selection]
    values: dict[str, dict[str, float]]  # measure -> query id -> value
    means: dict[str, float]
    ci: dict[str, tuple[float, float]]
    p_values: dict[str, float] = field(default_factory=dict)  # Holm-corrected, vs baseline
    headroom: dict[str, float] = field(default_factory=dict)  # optimum - method
    gap_closed: dict[str, float] = field(default_factory=dict)  # share of baseline->optimum gap
    select_seconds: float = 0.0  # mean per topic
    coverage_pairs: float = 0.0  # mean per topic
    coverage_seconds: float = 0.0  # mean per topic
    aspects_seconds: float = 0.0  # mean per topic spent finding the aspects (LLM, pool)


@dataclass
class BenchResult:
    """Every method under every budget on one dataset, with the baseline they are tested against."""

    dataset: str
    topics: int
    baseline: str
    measures: dict[str, list[str]]  # budget -> measure specs
    results: list[MethodResult]

    def for_budget(self, budget: Budget) -> list[MethodResult]:
        return [r for r in self.results if r.budget == budget]

    @property
    def oracle(self) -> str:
        """The name of the exact optimum's row (:data:`~covrag.evaluation.headroom.ORACLE`)."""
        return ORACLE

    def to_json(self) -> dict[str, Any]:
        """The bench summary (:class:`covrag.schema.bench.BenchSummary`)."""
        rows = [
            BenchRow.of(
                method=r.method,
                budget=r.budget,
                means=r.means,
                ci=r.ci,
                p_values=r.p_values,
                headroom=r.headroom,
                gap_closed=r.gap_closed,
                select_seconds=r.select_seconds,
                coverage_pairs=r.coverage_pairs,
                coverage_seconds=r.coverage_seconds,
                aspects_seconds=r.aspects_seconds,
                values=r.values,
            )
            for r in self.results
        ]
        return summary_record(
            dataset=self.dataset,
            topics=self.topics,
            baseline=self.baseline,
            oracle=ORACLE,
            results=rows,
        )
