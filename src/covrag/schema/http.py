"""The JSON bodies of the HTTP API (``covrag serve``), as pydantic models (they also make the
OpenAPI schema): ``/v1/select``, the errors, ``/healthz`` and ``/reports``.

The requests add the HTTP limits (strict types, sizes) and convert to covrag's frozen records
(:meth:`PassageIn.to_passage`, :meth:`AspectIn.to_aspect`); the trace and the coverage matrix of a
response are the run file's models (:mod:`covrag.schema.runfile`), so the API and run files
describe a selection in one way. ``/v1/answer``'s request and reply are in
:mod:`covrag.schema.http_answer`, ``/v1/plan``'s in :mod:`covrag.schema.http_plan`. No module past
:mod:`covrag.server.service` sees a pydantic object; :mod:`covrag.server` keeps the routing.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

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


class Strict(BaseModel):
    # Strict: 0 is not false and "3" is not 3; unknown fields are errors, not ignored.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)


class PassageIn(Strict):
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


class AspectIn(Strict):
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


class SelectRequest(Strict):
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


class ReadyOut(BaseModel):
    status: Literal["ready"]
    models: Literal["loaded", "on first request"] = Field(
        description="the default models are loaded in this process, or load at the first "
        "request that needs them (covrag serve --no-preload)"
    )
    pid: int = Field(description="the server process that answered (one of its replicas)")


class ReportsOut(BaseModel):
    reports: list[str] = Field(description="names GET /reports/{name} serves")
