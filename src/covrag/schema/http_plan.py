"""The request and the reply of ``POST /v1/plan`` (``covrag serve --llm``): a question's
sub-questions, its include / exclude aspects and (when asked) an outline."""

from __future__ import annotations

from pydantic import BaseModel, Field

from covrag.schema.ask import OutlinePlanOut
from covrag.schema.defaults import ASK_DEFAULTS
from covrag.schema.generation import LLMCostOut
from covrag.schema.http import MAX_TEXT, Strict


class PlanRequest(Strict):
    """Plan a question: sub-questions, constraints and (optionally) an outline."""

    question: str = Field(min_length=1, max_length=MAX_TEXT)
    include: list[str] = Field(default_factory=list, max_length=20, description="to cover")
    exclude: list[str] = Field(default_factory=list, max_length=20, description="to leave out")
    subquestions: int = Field(
        default=ASK_DEFAULTS.subquestions, ge=1, le=20, description="sub-questions to write"
    )
    outline: bool = Field(default=False, description="also plan a QTree and pick an outline")
    answers: int = Field(
        default=ASK_DEFAULTS.answers,
        ge=0,
        le=10,
        description="answer sketches per sub-question: short statements an answer would make, "
        "which estimators score passages against beside the sub-question (pass the aspects on "
        "to /v1/select or /v1/answer as they are); 0 = none",
    )


class PlanAspectOut(BaseModel):
    id: str
    text: str
    polarity: str
    answers: list[str] = Field(default_factory=list, description="answer sketches")


class OutlineOut(OutlinePlanOut):
    """The chosen outline (as in an ask run file's plan)."""


class PlanResponse(BaseModel):
    """The plan: the aspects a complete answer covers, and the outline when asked for."""

    request: str
    base: str
    aspects: list[PlanAspectOut] = Field(description="sub-questions, then include/exclude aspects")
    dropped: list[str] = Field(description="sub-questions dropped as near-duplicates")
    outline: OutlineOut | None
    llm: LLMCostOut
    seconds: float
    warnings: list[str] = Field(
        default_factory=list, description="what did not go as asked (an aspect left unsketched)"
    )
