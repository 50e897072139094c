"""What :func:`covrag.pipeline.ask` returns and how it meters its stages.

:class:`AskResult` keeps every intermediate result of one question and builds its run file;
:class:`StageCost` is what one stage cost (seconds, CPU seconds, LLM spend, coverage pairs scored),
measured by :class:`StageClock` and :class:`UsageMeter`. Split from :mod:`covrag.pipeline.ask`,
which re-exports the public names.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from covrag.generate.answer_coverage import AspectCoverage, answer_coverage
from covrag.generate.records import GenerationResult, LLMCost
from covrag.llm.base import LLM
from covrag.plan import C2Query, Plan, SubQuestions
from covrag.schema.ask import ask_plan, ask_run_record
from covrag.schema.generation import LLMCostOut, StageCostOut
from covrag.selectors.floor import FilterReport
from covrag.types import Aspect, CoverageMatrix, Selection, Topic

#: Called when a stage starts (``plan``, ``retrieve``, ...) and after each generation step.
StageCallback = Callable[[str], None]

STAGES = ("plan", "retrieve", "estimate", "select", "generate")


@dataclass(frozen=True)
class StageCost:
    """What one stage cost: wall-clock seconds, LLM spend and coverage pairs scored.

    ``cpu_seconds`` is the CPU time of the whole process during the stage (every thread: the
    embedded model's, ONNX Runtime's): on a shared machine it measures the work done, where
    ``seconds`` also counts the time spent waiting for a core.
    """

    seconds: float
    llm: LLMCost = LLMCost()
    pairs_scored: int = 0
    cpu_seconds: float = 0.0

    def to_record(self) -> StageCostOut:
        """The run file's record of the cost (seconds to 3 decimals)."""
        return StageCostOut(
            seconds=round(self.seconds, 3),
            cpu_seconds=round(self.cpu_seconds, 3),
            llm=LLMCostOut.of(self.llm),
            pairs_scored=self.pairs_scored,
        )

    def as_dict(self) -> dict[str, Any]:
        return self.to_record().model_dump()


@dataclass(frozen=True)
class AskResult:
    """Everything one question produced.

    Attributes:
        query: The request: base question, include and exclude constraints.
        subquestions: The LLM's decomposition (None when aspects were given).
        plan: The QPlanner plan when an outline was asked for.
        queries: The search queries, in search order.
        topic: The question with the candidate pool (token costs set) and the aspects.
        coverage: The estimated pool x aspects coverage.
        selection: The selected context with its trace.
        generation: Every draft and critique.
        costs: Stage -> its cost.
        warnings: What did not go as asked (e.g. an outline the LLM could not plan).
        filters: What the coverage floor and the topic gate let through (None when the
            result was built without them).
    """

    query: C2Query
    subquestions: SubQuestions | None
    plan: Plan | None
    queries: tuple[str, ...]
    topic: Topic
    coverage: CoverageMatrix
    selection: Selection
    generation: GenerationResult
    costs: Mapping[str, StageCost] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    filters: FilterReport | None = None

    @property
    def aspect_coverage(self) -> tuple[AspectCoverage, ...]:
        """Per wanted aspect: the selected passages and the answer's supported sentences that
        cover it (one threshold, the estimator's)."""
        return answer_coverage(
            self.generation.answer, self.coverage, self.topic.aspects, self.selection.passage_ids
        )

    @property
    def uncovered(self) -> tuple[Aspect, ...]:
        """Wanted aspects no selected passage covers."""
        covered = set(self.selection.covered)
        return tuple(
            a for a in self.topic.aspects if a.polarity != "exclude" and a.id not in covered
        )

    def run_record(self) -> dict[str, Any]:
        """The run file of this question (``covrag report`` renders it; ``covrag eval-answers``
        reads it), with the plan, the searches, every draft and critique and the costs."""
        subs, outline = self.subquestions, self.plan
        plan = ask_plan(
            request=self.query.request,
            base=self.query.base,
            include=self.query.include,
            exclude=self.query.exclude,
            subquestions=None if subs is None else (subs.texts, subs.dropped, subs.calls),
            outline=None
            if outline is None
            else (
                outline.best.texts,
                outline.best.score,
                outline.best.rationale,
                outline.baseline.score,
            ),
        )
        return ask_run_record(
            topic=self.topic,
            selection=self.selection,
            coverage=self.coverage,
            answer=self.generation.answer,
            plan=plan,
            queries=self.queries,
            uncovered=[a.id for a in self.uncovered],
            generation=self.generation.to_record(),
            aspect_coverage=[
                (row.aspect_id, row.context_passages, row.answer_sentences)
                for row in self.aspect_coverage
            ],
            costs={stage: cost.to_record() for stage, cost in self.costs.items()},
            warnings=self.warnings,
            filters=None if self.filters is None else self.filters.as_dict(),
            seconds=sum(c.seconds for c in self.costs.values()),
        )


class UsageMeter:
    """LLM spend between two points, read from the backend's running totals."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.start = dict(llm.usage.as_dict())

    def cost(self) -> LLMCost:
        now = self.llm.usage.as_dict()
        return LLMCost(
            calls=int(now["calls"] - self.start["calls"]),
            cached_calls=int(now["cached_calls"] - self.start["cached_calls"]),
            prompt_tokens=int(now["prompt_tokens"] - self.start["prompt_tokens"]),
            completion_tokens=int(now["completion_tokens"] - self.start["completion_tokens"]),
            seconds=float(now["seconds"] - self.start["seconds"]),
            reused_prompt_tokens=int(
                now["reused_prompt_tokens"] - self.start["reused_prompt_tokens"]
            ),
        )


class StageClock:
    """Times the stages of one run and tells ``notify`` when each starts."""

    def __init__(self, notify: StageCallback) -> None:
        self.notify = notify
        self.costs: dict[str, StageCost] = {}
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()

    def start(self, stage: str) -> None:
        self.notify(stage)
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()

    def stop(self, stage: str, llm: LLMCost | None = None, pairs_scored: int = 0) -> None:
        spent = time.perf_counter() - self.started
        cpu = time.process_time() - self.cpu_started
        self.costs[stage] = StageCost(spent, llm or LLMCost(), pairs_scored, cpu)
