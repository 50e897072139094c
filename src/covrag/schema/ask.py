"""The run file of ``covrag ask``: a :mod:`run file <covrag.schema.runfile>` whose one topic also
holds the plan, the searches, every draft and critique and the costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from covrag.schema.runfile import RunAnswer, RunTopic, dump, run_file_header
from covrag.types import Answer, CoverageMatrix, Selection, Topic


class SubquestionsOut(BaseModel):
    texts: list[str]
    dropped: list[str]
    calls: int


class OutlinePlanOut(BaseModel):
    """The chosen outline's sub-queries, the judge's verdict and the random baseline's score."""

    texts: list[str]
    score: int | None = Field(description="the judge's 1-5 score")
    rationale: str
    baseline_score: int | None = Field(description="the random outline's score")


class LLMCostOut(BaseModel):
    """What a step's model calls cost (``LLMCost.as_dict``)."""

    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    reused_prompt_tokens: int = Field(
        default=0, description="prompt tokens reused from the model's prompt cache"
    )


class AskPlanOut(BaseModel):
    """The request's split, its sub-questions and the chosen outline (when planned)."""

    request: str
    base: str
    include: list[str]
    exclude: list[str]
    subquestions: SubquestionsOut | None
    outline: OutlinePlanOut | None


class RetrievalOut(BaseModel):
    queries: list[str]
    pool: int


class FiltersOut(BaseModel):
    """What the coverage floor and the topic gate let through (``FilterReport.as_dict``)."""

    pool: int = Field(description="candidates before the filters")
    floor: float
    gate: float
    cleared_floor: int
    cleared_gate: int
    kept: int = Field(description="candidates that clear both")
    best_support: float
    best_similarity: float | None = Field(description="None without a gate")


class DraftOut(RunAnswer):
    """One draft of the answer (its sentences; the raw text, problems and cost besides)."""


class GenerationOut(BaseModel):
    """The ``generation`` block: every draft and critique (``GenerationResult.to_json``)."""

    model_config = ConfigDict(extra="allow")

    drafts: list[DraftOut]


class AskTopic(RunTopic):
    """The topic of an ask run file: a run-file topic and what asking it took."""

    plan: AskPlanOut
    retrieval: RetrievalOut
    uncovered: list[str]
    generation: dict[str, Any]
    costs: dict[str, dict[str, Any]]
    warnings: list[str]
    filters: FiltersOut | None = None


def ask_plan(
    *,
    request: str,
    base: str,
    include: Sequence[str],
    exclude: Sequence[str],
    subquestions: tuple[Sequence[str], Sequence[str], int] | None,
    outline: tuple[Sequence[str], int | None, str, int | None] | None,
) -> AskPlanOut:
    """The plan block from plain values: ``subquestions`` is ``(texts, dropped, calls)``,
    ``outline`` is ``(texts, score, rationale, baseline score)``."""
    subs = None
    if subquestions is not None:
        texts, dropped, calls = subquestions
        subs = SubquestionsOut.model_construct(
            texts=list(texts), dropped=list(dropped), calls=calls
        )
    best = None
    if outline is not None:
        texts, score, rationale, baseline = outline
        best = OutlinePlanOut.model_construct(
            texts=list(texts), score=score, rationale=rationale, baseline_score=baseline
        )
    return AskPlanOut.model_construct(
        request=request,
        base=base,
        include=list(include),
        exclude=list(exclude),
        subquestions=subs,
        outline=best,
    )


def ask_run_record(
    *,
    topic: Topic,
    selection: Selection,
    coverage: CoverageMatrix,
    answer: Answer | None,
    plan: AskPlanOut,
    queries: Sequence[str],
    uncovered: Sequence[str],
    generation: Mapping[str, Any],
    costs: Mapping[str, Mapping[str, Any]],
    warnings: Sequence[str],
    seconds: float,
    filters: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole run file of one asked question (what ``AskResult.run_record`` returns);
    ``seconds`` is the time all stages took."""
    base = RunTopic.of(topic, selection, coverage, answer)
    values = {name: getattr(base, name) for name in base.model_fields_set}
    record = AskTopic.model_construct(
        **values,
        plan=plan,
        retrieval=RetrievalOut.model_construct(queries=list(queries), pool=len(topic.passages)),
        uncovered=list(uncovered),
        generation=dict(generation),
        costs={stage: dict(cost) for stage, cost in costs.items()},
        warnings=list(warnings),
        filters=None if filters is None else FiltersOut.model_validate(dict(filters)),
    )
    run = run_file_header(
        [dump(record)],
        dataset="ask",
        selector=selection.selector,
        coverage=coverage.source,
        budget=str(selection.budget),
    )
    run["costs"] = {"seconds": round(seconds, 3)}
    return run
