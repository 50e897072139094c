"""The run file of ``covrag ask``: a :mod:`run file <covrag.schema.runfile>` whose one topic also
holds the plan, the searches, every draft and critique and the costs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from covrag.schema._base import RecordError
from covrag.schema.generation import GenerationOut, StageCostOut
from covrag.schema.runfile import RunTopic, dump, run_file_header
from covrag.types import DEFINES, LOOKED_UP, Answer, CoverageMatrix, Selection, Topic


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
    definitions: dict[str, str] = Field(
        default_factory=dict,
        description="passages that joined the pool as the definition of a name the passages "
        "nearest the question gave: passage id -> the name",
    )
    looked_up: list[str] = Field(
        default_factory=list,
        description="passages the run file holds beyond the pool: entries the citation check "
        "looked up for what a draft names, which answer sentences may cite (not counted in pool)",
    )


class FiltersOut(BaseModel):
    """What the coverage floor, the topic gate and the name filter let through
    (``FilterReport.as_dict``)."""

    pool: int = Field(description="candidates before the filters")
    floor: float
    gate: float
    cleared_floor: int
    cleared_gate: int
    kept: int = Field(description="candidates that clear every filter")
    best_support: float
    best_similarity: float | None = Field(description="None without a gate")
    absent: list[str] = Field(
        default=[],
        description="the question's names no retrieved passage writes (the name filter then "
        "keeps nothing)",
    )
    off_subject: int = Field(
        default=0,
        description="candidates removed by the name filter as passages of documents that are "
        "not about the question's names (none of their pooled passages writes one, nor does "
        "their title share a word with the question)",
    )
    judged: Literal["passages", "question"] = Field(
        default="passages",
        description="what the floor and the gate judged: passages (only those that clear "
        "both are kept) or the question (answered when some passage clears both; kept is then "
        "every passage the name filter keeps)",
    )
    cleared: int = Field(
        default=0,
        description="candidates that clear the floor, the gate and the name filter",
    )


class AspectCoverageOut(BaseModel):
    """Whether the context and the answer cover one wanted aspect (one threshold: the
    estimator's; ``covrag.generate.answer_coverage``)."""

    aspect_id: str
    in_context: bool = Field(description="a selected passage covers it")
    in_answer: bool = Field(description="a supported sentence cites a passage that covers it")
    context_passages: list[str] = Field(description="the selected passages that cover it")
    answer_sentences: list[int] = Field(description="indexes of the sentences that state it")

    @classmethod
    def of(cls, aspect_id: str, passages: Sequence[str], sentences: Sequence[int]) -> Self:
        """The row of one aspect from the context passages and the answer sentences that
        cover it (``AspectCoverage``'s fields)."""
        return cls(
            aspect_id=aspect_id,
            in_context=bool(passages),
            in_answer=bool(sentences),
            context_passages=list(passages),
            answer_sentences=list(sentences),
        )


class AskTopic(RunTopic):
    """The topic of an ask run file: a run-file topic and what asking it took."""

    plan: AskPlanOut
    retrieval: RetrievalOut
    uncovered: list[str]
    aspect_coverage: list[AspectCoverageOut] = Field(
        default=[], description="per wanted aspect: covered by the context, by the answer"
    )
    generation: GenerationOut
    costs: dict[str, StageCostOut] = Field(description="stage -> what it cost")
    warnings: list[str]
    filters: FiltersOut | None = None

    def check(self, where: str) -> None:
        """The run-file topic's references, and the aspect coverage's ids."""
        super().check(where)
        aspects = {a.id for a in self.aspects}
        sentences = len(self.answer.sentences) if self.answer is not None else 0
        for j, row in enumerate(self.aspect_coverage):
            at = f"{where}.aspect_coverage[{j}]"
            if row.aspect_id not in aspects:
                raise RecordError(f"{at}.aspect_id", f"unknown aspect id {row.aspect_id!r}")
            if any(not 0 <= i < sentences for i in row.answer_sentences):
                raise RecordError(f"{at}.answer_sentences", "names a sentence the answer lacks")


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
        subs = SubquestionsOut(texts=list(texts), dropped=list(dropped), calls=calls)
    best = None
    if outline is not None:
        texts, score, rationale, baseline = outline
        best = OutlinePlanOut(
            texts=list(texts), score=score, rationale=rationale, baseline_score=baseline
        )
    return AskPlanOut(
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
    generation: GenerationOut,
    costs: Mapping[str, StageCostOut],
    warnings: Sequence[str],
    seconds: float,
    filters: Mapping[str, Any] | None = None,
    aspect_coverage: Sequence[tuple[str, Sequence[str], Sequence[int]]] = (),
) -> dict[str, Any]:
    """The whole run file of one asked question (what ``AskResult.run_record`` returns);
    ``seconds`` is the time all stages took; ``aspect_coverage`` holds, per wanted aspect, its
    id, the selected passages that cover it and the answer sentences that state it.

    The topic is validated as it is written (:class:`AskTopic`, its references included), so a
    run file that ``covrag report`` would refuse is never written.
    """
    base = RunTopic.of(topic, selection, coverage, answer)
    values = {name: getattr(base, name) for name in base.model_fields_set}
    record = AskTopic(
        **values,
        plan=plan,
        retrieval=RetrievalOut(
            queries=list(queries),
            pool=sum(1 for p in topic.passages if LOOKED_UP not in p.metadata),
            definitions={
                p.id: str(p.metadata[DEFINES]) for p in topic.passages if DEFINES in p.metadata
            },
            looked_up=[p.id for p in topic.passages if LOOKED_UP in p.metadata],
        ),
        uncovered=list(uncovered),
        aspect_coverage=[AspectCoverageOut.of(*row) for row in aspect_coverage],
        generation=generation,
        costs=dict(costs),
        warnings=list(warnings),
        filters=None if filters is None else FiltersOut.model_validate(dict(filters)),
    )
    written = dump(record)
    AskTopic.model_validate(written).check("topics[0]")
    run = run_file_header(
        [written],
        dataset="ask",
        selector=selection.selector,
        coverage=coverage.source,
        budget=str(selection.budget),
    )
    run["costs"] = {"seconds": round(seconds, 3)}
    return run
