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
:class:`~covrag.schema.ask.LLMCostOut`. Only what the wire adds (invalid citations, critiques,
warnings) is described here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, Self

from pydantic import BaseModel, Field

from covrag.schema.answer import RunAnswer, RunSentence
from covrag.schema.ask import AspectCoverageOut, FiltersOut, LLMCostOut
from covrag.types import Answer

#: What replaced an answer with no supported sentence (``Draft.fallback``); None: nothing did.
FallbackOut = Literal["quote", "refuse"] | None


class InvalidCitationOut(BaseModel):
    sentence: int = Field(description="0-based index of the sentence")
    number: int = Field(description="the [n] that names no passage")


class AnswerDraftOut(RunAnswer):
    """One draft: its checked sentences and the ones the check dropped (as in a run file's
    answer), the citations of passages that do not exist, its problems and its cost."""

    invalid_citations: list[InvalidCitationOut]
    problems: list[str]
    fallback: FallbackOut = Field(
        default=None,
        description="quote or refuse when no sentence of the model's reply was supported and "
        "the draft is that fallback (the reply's sentences are then in dropped); null otherwise",
    )
    llm: LLMCostOut

    @classmethod
    def of_draft(
        cls,
        answer: Answer,
        *,
        invalid_citations: Sequence[tuple[int, int]],
        problems: Sequence[str],
        fallback: str | None,
        cost: Mapping[str, Any],
    ) -> Self:
        """A draft from its answer and plain values: ``invalid_citations`` holds ``(sentence,
        number)`` pairs and ``cost`` is ``LLMCost.as_dict()``."""
        return cls.model_construct(
            sentences=[RunSentence.of(s) for s in answer.sentences],
            dropped=[RunSentence.of(s) for s in answer.dropped],
            invalid_citations=[
                InvalidCitationOut(sentence=s, number=n) for s, n in invalid_citations
            ],
            problems=list(problems),
            fallback=fallback,
            llm=LLMCostOut(**cost),
        )


class CritiqueOut(BaseModel):
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
