"""The JSON bodies of the HTTP API, as pydantic models (they also make the OpenAPI schema).

The requests add the HTTP limits (strict types, sizes) and convert to covrag's frozen records
(:meth:`PassageIn.to_passage`, :meth:`AspectIn.to_aspect`); the trace and the coverage matrix of a
response are the run file's models (:mod:`covrag.schema.runfile`), so the API and run files
describe a selection in one way. ``/v1/answer``'s request (:class:`AnswerRequest`, whose
defaults are ``covrag ask``'s) is here too; its reply is :mod:`covrag.schema.http_answer`. No
module past :mod:`covrag.server.service` sees a pydantic object.
"""

from __future__ import annotations

from typing import Annotated, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from covrag.pipeline.config import AskConfig, Fallback, UnsupportedPolicy, WriterName
from covrag.schema.runfile import RunCoverage, RunStep
from covrag.types import Aspect, Passage

MAX_PASSAGES = 2000
MAX_ASPECTS = 200
MAX_TEXT = 100_000
MAX_ID = 512
MAX_ANSWERS = 10
MAX_ANSWER = 2000
MAX_TOKENS = 10_000_000
MAX_SCORE = 1e12
MAX_CONTEXT = 200

#: The defaults of ask's stages, which /v1/answer shares.
_ASK = AskConfig()


class _Strict(BaseModel):
    # Strict: 0 is not false and "3" is not 3; unknown fields are errors, not ignored.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class PassageIn(_Strict):
    """A candidate passage."""

    id: str = Field(min_length=1, max_length=MAX_ID, description="unique within the request")
    text: str = Field(max_length=MAX_TEXT, description="full text; never truncated by selection")
    score: float | None = Field(
        default=None,
        ge=-MAX_SCORE,
        le=MAX_SCORE,
        description="retriever score (higher is better), used by relevance=score",
    )
    tokens: int | None = Field(
        default=None,
        ge=0,
        le=MAX_TOKENS,
        description="token cost; counted with MiniLM WordPiece when absent",
    )
    covers: list[str] = Field(
        default_factory=list,
        max_length=MAX_ASPECTS,
        description="ids of the aspects this passage is known to cover (read by coverage=gold)",
    )

    def to_passage(self) -> Passage:
        return Passage(id=self.id, text=self.text, tokens=self.tokens, score=self.score)


class AspectIn(_Strict):
    """One sub-question, key point or viewpoint a complete answer covers."""

    id: str = Field(min_length=1, max_length=MAX_ID, description="unique within the request")
    text: str = Field(max_length=MAX_TEXT, description="the aspect as a question or statement")
    weight: float = Field(default=1.0, ge=0.0, le=1e6, description="importance (default 1)")
    vital: bool = Field(default=False, description="whether a complete answer must state it")
    polarity: Literal["include", "exclude", "neutral"] = Field(
        default="neutral", description="exclude: an aspect the context must avoid"
    )
    answers: list[Annotated[str, Field(max_length=MAX_ANSWER, pattern=r"\S")]] = Field(
        default_factory=list,
        max_length=MAX_ANSWERS,
        description="statements a passage covering the aspect would make (answer sketches): "
        "the estimator also scores each passage against these and keeps the highest",
    )

    def to_aspect(self) -> Aspect:
        return Aspect(
            self.id, self.text, self.weight, self.vital, self.polarity, answers=tuple(self.answers)
        )


class SelectRequest(_Strict):
    """Select context from a candidate pool so that it covers the aspects, within a budget."""

    query: str = Field(min_length=1, max_length=MAX_TEXT, description="the question")
    query_id: str = Field(default="q", min_length=1, max_length=MAX_ID)
    passages: list[PassageIn] = Field(max_length=MAX_PASSAGES, description="the candidate pool")
    aspects: list[AspectIn] = Field(
        default_factory=list,
        max_length=MAX_ASPECTS,
        description="what the context must cover; when a coverage-based selector gets none, "
        "the pool's representative passages become the aspects (see the response's 'aspects')",
    )
    selector: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="selector spec, e.g. greedy-coverage or mmr(lam=0.5) (server default if unset)",
    )
    coverage: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="coverage estimator spec: cross-encoder, embedding, "
        "embedding(threshold=0.6) or gold (server default if unset)",
    )
    k: int | None = Field(default=None, ge=1, le=MAX_PASSAGES, description="at most k passages")
    tokens: int | None = Field(
        default=None, ge=1, le=MAX_TOKENS, description="at most this many tokens"
    )
    relevance: Literal["dense", "score", "order"] = Field(
        default="dense",
        description="dense: MiniLM cosine to the query; score: the passages' scores; "
        "order: pool order",
    )
    include_matrix: bool = Field(default=True, description="return the coverage matrix")


class AnswerRequest(_Strict):
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
        default=_ASK.floor,
        ge=0.0,
        le=1.0,
        description="with k: only passages the estimator gives at least this probability of "
        "answering an aspect enter the context (0: off); none clearing it means no context, "
        "and the answer says the passages do not answer the question",
    )
    floor_question: bool = Field(
        default=_ASK.floor_question,
        description="with k: a passage also clears the floor when it answers the question "
        "itself, not only an aspect",
    )
    gate: float = Field(
        default=_ASK.gate,
        ge=0.0,
        le=1.0,
        description="with k: only passages whose MiniLM cosine similarity to the question "
        "reaches this enter the context (0: off)",
    )
    writer: WriterName = Field(
        default=_ASK.writer,
        description="extractive (cited sentences close to the passages) or synthesis (one "
        "paragraph per covered aspect, in the writer's own words)",
    )
    passes: int = Field(default=_ASK.passes, ge=0, le=3, description="critique-and-rewrite passes")
    feedback: Literal["self", "pointers"] = Field(default=_ASK.feedback)
    max_words: int = Field(
        default=cast(int, _ASK.max_words), ge=1, le=5000, description="words per passage in prompts"
    )
    sentences: int = Field(default=_ASK.sentences, ge=1, le=60)
    rewrite_sentences: int = Field(default=_ASK.rewrite_sentences, ge=1, le=80)
    max_tokens: int = Field(
        default=_ASK.max_tokens,
        ge=16,
        le=8192,
        description="most tokens per first answer (rewrites: 1.5x)",
    )
    unsupported: UnsupportedPolicy = Field(
        default=_ASK.unsupported,
        description="answer sentences no passage supports (by text alignment or the support "
        "judge): drop = leave them out (listed in the response's dropped); mark = keep them, "
        "their check verified unsupported",
    )
    fallback: Fallback = Field(
        default=_ASK.fallback,
        description="when no sentence of the model's reply is supported: quote = quote the "
        "passages, each quotation cited; refuse = give no answer, and say why",
    )


class StepOut(RunStep):
    """One pick of the selector (as in a run file's trace)."""

    model_config = ConfigDict(extra="ignore")


class CoverageOut(RunCoverage):
    """P[passage, aspect] with the threshold that turns it into coverage (as in a run file)."""

    model_config = ConfigDict(extra="ignore")


class TimingsOut(BaseModel):
    prepare_s: float = Field(description="token costs, coverage, relevance and embeddings")
    select_s: float


class AspectOut(BaseModel):
    id: str
    text: str


class SelectResponse(BaseModel):
    """The selection, its per-step trace and (optionally) the coverage matrix it used."""

    query_id: str
    selector: str = Field(description="the selector's canonical spec")
    budget: str
    passage_ids: list[str] = Field(description="selected passages in pick order")
    tokens_used: int
    trace: list[StepOut]
    covered: list[str] = Field(description="aspect ids covered, in the order first covered")
    uncovered: list[str] = Field(description="wanted (non-excluded) aspect ids left uncovered")
    coverage: CoverageOut | None
    aspects: list[AspectOut] | None = Field(
        default=None,
        description="the aspects found in the pool when the request gave none (ids pool1, "
        "pool2, ...: the passages that best represent the others); null otherwise",
    )
    timings: TimingsOut


class FieldErrorOut(BaseModel):
    field: str | None = Field(description="the offending field, e.g. passages[3].text")
    message: str


class ErrorOut(BaseModel):
    """Every 4xx/5xx answer: one line to show a user, and each field at fault."""

    detail: str = Field(description="e.g. 'passages[3].text: field required'")
    field: str | None = Field(description="the first offending field, when there is one")
    errors: list[FieldErrorOut]


class HealthOut(BaseModel):
    status: Literal["ok"]
    version: str
    selectors: list[str]
    coverage_estimators: list[str]


class ReportsOut(BaseModel):
    reports: list[str] = Field(description="names GET /reports/{name} serves")
