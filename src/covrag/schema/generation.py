"""What generating an answer records: every draft and critique and what each LLM step cost.

The ``generation`` block of an ``ask`` run file (what ``GenerationResult.to_record`` returns)::

    {"question", "passage_ids", "outline",
     "drafts": [{"sentences", "dropped", "raw", "target_sentences",
                 "invalid_citations": [{"sentence", "number"}], "problems", "left_out",
                 "checked", "fallback", "cut_off", "cost": {LLM cost}}],
     "critiques": [{"mode", "llm_underused", "llm_notes", "never_cited", "missing_aspects",
                    "pointers": {aspect id: [passage ids]}, "feedback", "verdict",
                    "cost": {LLM cost}}],
     "cost": {LLM cost}}

An LLM cost is ``{"calls", "cached_calls", "prompt_tokens", "completion_tokens", "seconds",
"reused_prompt_tokens"}`` (:class:`LLMCostOut`); the cost of one stage of ``ask`` adds the wall
and CPU seconds and the coverage pairs scored (:class:`StageCostOut`). A draft is a run file's
answer (:class:`~covrag.schema.answer.RunAnswer`) with what the writer reported about it; the
server's ``/v1/answer`` shows a projection of the same records
(:mod:`covrag.schema.http_answer`). Fields added after the first ``ask`` run files have
defaults, so those files still read.
"""

from __future__ import annotations

from typing import Literal, Protocol, Self

from pydantic import BaseModel, Field

from covrag.schema.answer import RunAnswer


class _Cost(Protocol):
    """What :class:`LLMCostOut.of` reads (``covrag.llm.cost.LLMCost``'s fields)."""

    @property
    def calls(self) -> int: ...
    @property
    def cached_calls(self) -> int: ...
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...
    @property
    def seconds(self) -> float: ...
    @property
    def reused_prompt_tokens(self) -> int: ...


class LLMCostOut(BaseModel):
    """What a step's model calls cost."""

    # The record of covrag.llm.cost.LLMCost (a docstring here is the OpenAPI description).

    calls: int
    cached_calls: int
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    reused_prompt_tokens: int = Field(
        default=0, description="prompt tokens reused from the model's prompt cache"
    )

    @classmethod
    def of(cls, cost: _Cost) -> Self:
        """The record of an ``LLMCost`` (seconds to 3 decimals)."""
        return cls(
            calls=cost.calls,
            cached_calls=cost.cached_calls,
            prompt_tokens=cost.prompt_tokens,
            completion_tokens=cost.completion_tokens,
            seconds=round(cost.seconds, 3),
            reused_prompt_tokens=cost.reused_prompt_tokens,
        )

    @classmethod
    def none(cls) -> Self:
        """No calls, nothing spent."""
        return cls(calls=0, cached_calls=0, prompt_tokens=0, completion_tokens=0, seconds=0.0)


class StageCostOut(BaseModel):
    """What one stage of ``covrag ask`` cost (``covrag.pipeline.ask_records.StageCost``)."""

    seconds: float = Field(description="wall-clock seconds")
    cpu_seconds: float = Field(default=0.0, description="CPU seconds of the whole process")
    llm: LLMCostOut | None = Field(default=None, description="the stage's model calls")
    pairs_scored: int = Field(default=0, description="(passage, aspect) pairs the estimator scored")


#: What replaced an answer with no supported sentence (``Draft.fallback``); None: nothing did.
FallbackOut = Literal["quote", "refuse"] | None


class InvalidCitationOut(BaseModel):
    sentence: int = Field(description="0-based index of the sentence")
    number: int = Field(description="the [n] that names no passage")


class DraftOut(RunAnswer):
    """One draft of the answer (``covrag.generate.records.Draft``): its sentences and the ones
    the check dropped, the raw reply, the writer's problems and the cost."""

    raw: str = Field(default="", description="the model's reply as it came")
    target_sentences: int = Field(default=0, description="sentences the prompt asked for")
    invalid_citations: list[InvalidCitationOut] = []
    problems: list[str] = []
    left_out: list[str] = Field(default=[], description="sentences citing no passage, left out")
    checked: bool = Field(default=False, description="whether the support check ran")
    evidence: list[str] = Field(
        default=[],
        description="passages beyond the context the check read the draft against (the entries "
        "defining what it names); its sentences may cite them",
    )
    fallback: FallbackOut = Field(
        default=None,
        description="quote or refuse when no sentence of the model's reply was supported and "
        "the draft is that fallback (the reply's sentences are then in dropped); null otherwise",
    )
    cut_off: bool = Field(default=False, description="the reply stopped at the token limit")
    cost: LLMCostOut | None = None


class CritiqueRecordOut(BaseModel):
    """One critique (``covrag.generate.records.Critique``) and what became of its rewrite."""

    mode: str = ""
    llm_underused: list[str] = []
    llm_notes: str = ""
    never_cited: list[str] = []
    missing_aspects: list[str] = []
    pointers: dict[str, list[str]] = Field(
        default={}, description="missing aspect id -> context passages that cover it"
    )
    feedback: str = ""
    verdict: str = Field(
        default="",
        description="what became of the rewrite: accepted, unchanged, or rejected: why (the "
        "previous draft is then kept)",
    )
    cost: LLMCostOut | None = None


class GenerationOut(BaseModel):
    """The ``generation`` block: every draft and critique (``GenerationResult.to_record``)."""

    question: str = ""
    passage_ids: list[str] = Field(default=[], description="the context as numbered in prompts")
    outline: list[str] = Field(default=[], description="the outline the writer followed")
    drafts: list[DraftOut] = Field(description="answers after 0, 1, ... passes")
    critiques: list[CritiqueRecordOut] = Field(
        default=[], description="critiques[i] led to drafts[i + 1]"
    )
    cost: LLMCostOut | None = None
