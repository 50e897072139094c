"""The reply of ``POST /v1/answer`` (``covrag serve --llm``): the final answer, every draft and
critique, what the filters let through and what the context and the answer cover.

The records an answer shares with the run file of ``covrag ask`` are the run file's models, so a
served answer and a saved one are described once: each sentence is a
:class:`~covrag.schema.answer.RunSentence` with its support ``check``
(:class:`~covrag.schema.answer.RunCheck`: the ids as the writer cited them, how it was verified,
the score, the supporting passage and ``[start, end)`` span), a draft is a
:class:`~covrag.schema.answer.RunAnswer` (its sentences and the ones the check ``dropped``), and
the filters' report, the per-aspect coverage and the costs are
:class:`~covrag.schema.ask.FiltersOut`, :class:`~covrag.schema.ask.AspectCoverageOut` and
:class:`~covrag.schema.generation.LLMCostOut`. A draft and a critique are projections of
their records in :mod:`covrag.schema.generation`; only what the wire adds (the final answer's
fields, warnings) is described here.
"""

from __future__ import annotations

from typing import Self

from pydantic import BaseModel, Field

from covrag.schema.answer import RunAnswer, RunSentence
from covrag.schema.ask import AspectCoverageOut, FiltersOut
from covrag.schema.generation import DraftOut, FallbackOut, InvalidCitationOut, LLMCostOut


class AnswerDraftOut(RunAnswer):
    """One draft as ``/v1/answer`` shows it: its checked sentences and the ones the check
    dropped (as in a run file's answer), the citations of passages that do not exist, its
    problems and its cost (a projection of :class:`~covrag.schema.generation.DraftOut`)."""

    invalid_citations: list[InvalidCitationOut]
    problems: list[str]
    fallback: FallbackOut = Field(
        default=None,
        description="quote or refuse when no sentence of the model's reply was supported and "
        "the draft is that fallback (the reply's sentences are then in dropped); null otherwise",
    )
    llm: LLMCostOut

    @classmethod
    def of_record(cls, draft: DraftOut) -> Self:
        """The wire view of a draft's record (``covrag.generate.records.draft_record``)."""
        return cls(
            sentences=draft.sentences,
            dropped=draft.dropped,
            invalid_citations=draft.invalid_citations,
            problems=draft.problems,
            fallback=draft.fallback,
            llm=draft.cost or LLMCostOut.none(),
        )


class CritiqueOut(BaseModel):
    """One critique as ``/v1/answer`` shows it (a projection of
    :class:`~covrag.schema.generation.CritiqueRecordOut`: no mode, no pointers)."""

    llm_underused: list[str]
    llm_notes: str
    never_cited: list[str]
    missing_aspects: list[str]
    feedback: str
    verdict: str = Field(
        description="what became of the rewrite: accepted, unchanged, or rejected: why (the "
        "previous draft is then kept)"
    )
    llm: LLMCostOut


class AnswerResponse(BaseModel):
    """The final answer with each sentence's support check, every draft and critique, what
    the coverage floor and topic gate let through, the coverage per aspect, and the cost."""

    passage_ids: list[str] = Field(description="the context as numbered in the prompts")
    sentences: list[RunSentence] = Field(
        description="the final answer; each sentence of a checked answer carries its check "
        "(the ids as written, verified aligned / judged / unsupported, the score, and the "
        "passage_id and [start, end) span of its text that supports it)"
    )
    dropped: list[RunSentence] = Field(
        default=[], description="sentences of the final draft that no passage supports, left out"
    )
    fallback: FallbackOut = Field(
        default=None,
        description="quote (the answer quotes the passages) or refuse (no answer) when no "
        "sentence of the model's reply was supported; null otherwise",
    )
    problems: list[str] = Field(description="what is wrong with the final answer, if anything")
    warnings: list[str] = Field(
        default=[],
        description="what did not go as asked: no answer and which filter emptied the "
        "context, citations repaired, sentences dropped, the quoted fallback",
    )
    filters: FiltersOut | None = Field(
        default=None,
        description="with k: how many passages the coverage floor and the topic gate let "
        "through, and the best scores; null without k",
    )
    aspect_coverage: list[AspectCoverageOut] = Field(
        default=[],
        description="per wanted aspect: whether a context passage covers it (in_context) and "
        "whether a supported sentence of the answer cites one that does (in_answer)",
    )
    drafts: list[AnswerDraftOut] = Field(description="answers after 0, 1, ... passes")
    critiques: list[CritiqueOut]
    llm: LLMCostOut
    seconds: float
