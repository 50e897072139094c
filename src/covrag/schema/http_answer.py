"""The request and the reply of ``POST /v1/answer`` (``covrag serve --llm``): the question and
its passages, then the final answer, every draft and critique, what the filters let through and
what the context and the answer cover.

The request's defaults are ``covrag ask``'s (:data:`~covrag.schema.defaults.ASK_DEFAULTS`, which
the pipeline's ``ASK`` preset, and so ``covrag.pipeline.AskConfig``, is built from: a schema
imports no pipeline); its writer fields are built from
:class:`~covrag.schema.writer.WriterPolicy` (their defaults, :data:`~covrag.schema.writer.WRITER`),
as ``AskConfig``'s are, and become one (:meth:`AnswerRequest.writer_policy`).

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

from typing import Self, cast

from pydantic import BaseModel, Field

from covrag.schema.answer import RunAnswer, RunSentence
from covrag.schema.ask import AspectCoverageOut, FiltersOut
from covrag.schema.defaults import ASK_DEFAULTS as ASK_DEFAULTS  # re-exported
from covrag.schema.defaults import AskDefaults as AskDefaults  # re-exported
from covrag.schema.generation import DraftOut, FallbackOut, InvalidCitationOut, LLMCostOut
from covrag.schema.http import MAX_ASPECTS, MAX_CONTEXT, MAX_TEXT, AspectIn, PassageIn, Strict
from covrag.schema.writer import WRITER, WRITER_FIELDS, WriterPolicy
from covrag.schema.writer import Fallback as Fallback  # re-exported
from covrag.schema.writer import FeedbackMode as FeedbackMode  # re-exported
from covrag.schema.writer import UnsupportedPolicy as UnsupportedPolicy  # re-exported
from covrag.schema.writer import WriterName as WriterName  # re-exported


class AnswerRequest(Strict):
    """Write a cited answer from the given passages, with critique-and-rewrite passes."""

    question: str = Field(min_length=1, max_length=MAX_TEXT)
    passages: list[PassageIn] = Field(
        min_length=1, max_length=MAX_CONTEXT, description="the context, numbered [1].. in order"
    )
    aspects: list[AspectIn] = Field(
        default_factory=list,
        max_length=MAX_ASPECTS,
        description="what the answer must cover: the critique points at passages covering "
        "aspects the answer misses; needed by k",
    )
    k: int | None = Field(
        default=None, ge=1, le=MAX_CONTEXT, description="select k passages by coverage first"
    )
    floor: float = Field(
        default=ASK_DEFAULTS.floor,
        ge=0.0,
        le=1.0,
        description="with k: only passages the estimator gives at least this probability of "
        "answering an aspect enter the context (0: off); none clearing it means no context, "
        "and the answer says the passages do not answer the question",
    )
    floor_question: bool = Field(
        default=ASK_DEFAULTS.floor_question,
        description="with k: a passage also clears the floor when it answers the question "
        "itself, not only an aspect",
    )
    gate: float = Field(
        default=ASK_DEFAULTS.gate,
        ge=0.0,
        le=1.0,
        description="with k: only passages whose MiniLM cosine similarity to the question "
        "reaches this enter the context (0: off)",
    )
    gate_margin: float = Field(
        default=ASK_DEFAULTS.gate_margin,
        ge=0.0,
        le=1.0,
        description="with k: where even the best passage sits under the gate, the gate applied "
        "is its similarity minus this margin (0: the gate as given)",
    )
    names: bool = Field(
        default=ASK_DEFAULTS.names,
        description="with k: a question naming something (an acronym or a code name such as "
        "TOML or shutil.copy2) that no given passage writes gets no context, and the refusal "
        "names it (false: off)",
    )
    writer: WriterName = Field(
        default=WRITER.writer,
        description="extractive (cited sentences close to the passages) or synthesis (one "
        "paragraph per covered aspect, in the writer's own words)",
    )
    passes: int = Field(
        default=WRITER.passes, ge=0, le=3, description="critique-and-rewrite passes"
    )
    feedback: FeedbackMode = Field(default=WRITER.feedback)
    max_words: int = Field(  # a request always cuts passages (None, no cut, is ask's only)
        default=cast(int, WRITER.max_words),
        ge=1,
        le=5000,
        description="words per passage in prompts",
    )
    sentences: int = Field(default=WRITER.sentences, ge=1, le=60)
    rewrite_sentences: int = Field(default=WRITER.rewrite_sentences, ge=1, le=80)
    max_tokens: int = Field(
        default=WRITER.max_tokens,
        ge=16,
        le=8192,
        description="most tokens per first answer (rewrites: 1.5x)",
    )
    unsupported: UnsupportedPolicy = Field(
        default=WRITER.unsupported,
        description="answer sentences no passage supports (by text alignment or the support "
        "judge): quote = put in its place the passage sentence holding most of its words, "
        "quoted and cited, where one holds enough of it, else leave it out; drop = leave them "
        "out (listed in the response's dropped); mark = keep them, their check verified "
        "unsupported",
    )
    fallback: Fallback = Field(
        default=WRITER.fallback,
        description="when no sentence of the model's reply is supported: quote = quote the "
        "passages, each quotation cited; refuse = give no answer, and say why",
    )
    complete: int = Field(
        default=WRITER.complete,
        ge=0,
        le=50,
        description="with fallback quote: an answer that keeps fewer than this many of the "
        "model's own sentences gets the fallback's quotations, by sub-question, after them "
        "(0 = never)",
    )
    evidence: int = Field(
        default=WRITER.evidence,
        ge=0,
        le=12,
        description="check each draft also against at most this many of the request's passages "
        "beyond the context that define the options, settings and functions it names (0 = the "
        "context only)",
    )
    quotes: int = Field(
        default=WRITER.quotes,
        ge=0,
        le=12,
        description="after the check, add to a written answer this many context sentences "
        "nearest the question that it does not state, quoted and cited (0 = none)",
    )
    stream: bool = Field(
        default=False,
        description="answer with server-sent events (text/event-stream): planned, retrieved and "
        "selected as each stage ends, token for each piece the LLM writes, then answer (this "
        "route's response) or error (an error's status and body)",
    )

    def writer_policy(self) -> WriterPolicy:
        """How the answer is written: the request's writer fields."""
        return WriterPolicy(**{name: getattr(self, name) for name in WRITER_FIELDS})


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
    def of_record(cls, draft: DraftOut) -> Self:
        """The wire view of a draft's record (``covrag.generate.records.draft_record``): a
        projection of :class:`~covrag.schema.generation.DraftOut`."""
        return cls(
            sentences=draft.sentences,
            dropped=draft.dropped,
            invalid_citations=draft.invalid_citations,
            problems=draft.problems,
            fallback=draft.fallback,
            llm=draft.cost or LLMCostOut.none(),
        )


class CritiqueOut(BaseModel):
    # A projection of schema.generation.CritiqueRecordOut (no mode, no pointers).

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
        "(the ids as written, verified aligned / judged / composed / unsupported, the score, "
        "and the passage_id and [start, end) span of its text that supports it)"
    )
    dropped: list[RunSentence] = Field(
        default=[],
        description="sentences of the final draft that no passage supports, left out "
        "(or replaced by a quotation of the passage sentence holding most of their words)",
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
