"""``POST /v1/plan`` and ``POST /v1/answer``: the LLM stages over HTTP (``covrag serve --llm``).

``/v1/plan`` decomposes a question into sub-questions (DES) with include / exclude constraints and,
when asked, a QPlanner outline. ``/v1/answer`` writes a cited answer from the caller's passages
(optionally selecting ``k`` of them first by coverage of the caller's aspects) with
critique-and-rewrite passes, checks every citation against its passage as ``covrag ask`` does,
and returns every draft, critique, invalid citation and what it cost, with each sentence's
support check, the sentences the check dropped, the warnings, the filters' report and the
coverage per aspect (the records of :mod:`covrag.schema.http_answer`, which reuse the run
file's).
Both check the request's size caps (:mod:`covrag.server.caps`, 413 / 422) before any model
work, then take the LLM gate (:data:`~covrag.server.service.LLM_GATE`: at most ``model_wait_s``
of waiting, then 429 with ``Retry-After``) and run in the server's thread pool under
``llm_timeout_s``: the deadline is checked between LLM calls, between the embedded model's
tokens and between scoring batches, and a request past it is a 504 with every lock given back.
A client that goes away stops its request's work at the next such check (within a second).
Their scoring steps take the model gate shared with ``/v1/select`` one step at a time. An LLM
that fails (unreachable, unusable replies after the retries) is answered with 502. The routes
exist only when the server has an LLM (``ServerConfig.llm``). ``/v1/answer`` with ``stream``
runs the same work as server-sent events (:mod:`covrag.server.streaming`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from fastapi import FastAPI, Request, Response

from covrag.deadline import Deadline
from covrag.embed import Encoder, default_encoder
from covrag.llm.base import LLM
from covrag.pipeline.answer import answer_estimator as pipeline_estimator
from covrag.pipeline.events import EventSink, EventStream
from covrag.pipeline.policy import ANSWER
from covrag.pipeline.usecases import FieldError, GatedEstimator, answer, plan
from covrag.schema.ask import AspectCoverageOut, FiltersOut
from covrag.schema.generation import LLMCostOut
from covrag.schema.http_answer import AnswerDraftOut, AnswerRequest, AnswerResponse, CritiqueOut
from covrag.schema.http_plan import OutlineOut, PlanAspectOut, PlanRequest, PlanResponse
from covrag.server.caps import check_answer, check_plan
from covrag.server.config import ServerConfig
from covrag.server.gate import run_gated
from covrag.server.metrics import metrics
from covrag.server.service import (
    LLM_GATE,
    MODEL_GATE,
    RequestFieldError,
    aspect_records,
    passage_records,
    unique_ids,
)
from covrag.server.streaming import MEDIA_TYPE, streamed
from covrag.types import FloatArray, Topic

if TYPE_CHECKING:
    from covrag.pipeline.policy import ContextPolicy
    from covrag.pipeline.usecases import EstimatorSpec

T = TypeVar("T")


def _locked(inner: EstimatorSpec) -> GatedEstimator:
    """An estimator whose models run under the server's model gate (shared with /v1/select),
    one estimate at a time, counted in the pairs-scored metric."""
    return GatedEstimator(pipeline_estimator(inner), MODEL_GATE.step, metrics().pairs_scored.inc)


class _LockedEncoder(Encoder):
    """The process's sentence encoder (de-duplicating sub-questions) under the model gate; the
    planners only call :meth:`encode`."""

    def __init__(self) -> None:  # wraps the loaded encoder: loads nothing of its own
        with MODEL_GATE.step():
            self.inner = default_encoder()
        self.name = self.inner.name

    def encode(self, texts: Sequence[str]) -> FloatArray:
        with MODEL_GATE.step():
            return self.inner.encode(texts)

    @property
    def dimension(self) -> int:
        return self.inner.dimension


def run_plan(request: PlanRequest, llm: LLM) -> PlanResponse:
    """Decompose (and outline) a question; blocking, call from a thread."""
    started = time.perf_counter()
    try:
        planned = plan(
            request.question,
            llm,
            include=request.include,
            exclude=request.exclude,
            subquestions=request.subquestions,
            outline=request.outline,
            answers=request.answers,
            encoder=_LockedEncoder(),
        )
    except FieldError as exc:
        raise RequestFieldError(exc.field, exc.message) from exc
    query, subquestions, tree = planned.query, planned.subquestions, planned.plan
    outline = None
    if tree is not None:
        outline = OutlineOut(
            texts=list(tree.best.texts),
            score=tree.best.score,
            rationale=tree.best.rationale,
            baseline_score=tree.baseline.score,
        )
    spent = planned.usage
    return PlanResponse(
        request=query.request,
        base=query.base,
        aspects=[
            PlanAspectOut(id=a.id, text=a.text, polarity=a.polarity, answers=list(a.answers))
            for a in planned.aspects
        ],
        dropped=list(subquestions.dropped) if subquestions else [],
        outline=outline,
        llm=LLMCostOut(
            calls=int(spent["calls"]),
            cached_calls=int(spent["cached_calls"]),
            prompt_tokens=int(spent["prompt_tokens"]),
            completion_tokens=int(spent["completion_tokens"]),
            seconds=round(float(spent["seconds"]), 3),
            reused_prompt_tokens=int(spent["reused_prompt_tokens"]),
        ),
        seconds=time.perf_counter() - started,
        warnings=list(planned.warnings),
    )


def _topic(request: AnswerRequest) -> Topic:
    unique_ids("passages", [p.id for p in request.passages])
    unique_ids("aspects", [a.id for a in request.aspects])
    if request.k is not None and not request.aspects:
        raise RequestFieldError("aspects", "selecting k passages by coverage needs aspects")
    return Topic(
        query_id="answer",
        query=request.question,
        passages=passage_records(request.passages),
        aspects=aspect_records(request.aspects),
    )


def answer_estimator(config: ServerConfig) -> EstimatorSpec:
    """The coverage estimator of ``/v1/answer``: the server's default, the cross-encoder in
    place of ``gold`` (a request carries no labels)."""
    return pipeline_estimator(config.default_coverage)


def _policy(request: AnswerRequest, config: ServerConfig) -> ContextPolicy:
    """The :data:`~covrag.pipeline.policy.ANSWER` preset under the request's fields; coverage
    (under the model gate) only where there are aspects."""
    return dataclasses.replace(
        ANSWER,
        selector=config.default_selector,
        coverage=_locked(config.default_coverage) if request.aspects else None,
        k=request.k,
        floor=request.floor,
        floor_question=request.floor_question,
        gate=request.gate,
        gate_margin=request.gate_margin,
        names=request.names,
    )


def run_answer(
    request: AnswerRequest, llm: LLM, config: ServerConfig, sink: EventSink | None = None
) -> AnswerResponse:
    """Select (when ``k`` is set) and write the answer; blocking, call from a thread. ``sink``
    hears the aspects, the passages, the context and the generation steps (a stream's)."""
    started = time.perf_counter()
    # the citation check's judge (consulted only under a threshold) would run under the model
    # lock too (it shares the scorer's cache)
    done = answer(
        _topic(request),
        llm,
        _policy(request, config),
        request.writer_policy(),
        support_judge=_locked("cross-encoder"),
        encoder=_LockedEncoder(),
        sink=sink,
    )
    result = done.generation
    drafts = [AnswerDraftOut.of_record(record) for record in done.draft_records()]
    shown = drafts[-1]
    return AnswerResponse(
        passage_ids=[p.id for p in done.passages],
        sentences=shown.sentences,
        dropped=shown.dropped,
        fallback=shown.fallback,
        problems=shown.problems,
        warnings=list(done.warnings),
        filters=None if done.filters is None else FiltersOut.model_validate(done.filters.as_dict()),
        aspect_coverage=[
            AspectCoverageOut.of(row.aspect_id, row.context_passages, row.answer_sentences)
            for row in done.aspect_coverage
        ],
        drafts=drafts,
        critiques=[
            CritiqueOut(
                llm_underused=list(c.llm_underused),
                llm_notes=c.llm_notes,
                never_cited=list(c.never_cited),
                missing_aspects=list(c.missing_aspects),
                feedback=c.feedback,
                verdict=c.verdict,
                llm=LLMCostOut.of(c.cost),
            )
            for c in result.critiques
        ],
        llm=LLMCostOut.of(result.cost),
        seconds=time.perf_counter() - started,
    )


def add_llm_routes(
    api: FastAPI,
    config: ServerConfig,
    executor: ThreadPoolExecutor,
    llm: LLM,
    errors: dict[int | str, dict[str, Any]],
) -> None:
    """Register ``/v1/plan`` and ``/v1/answer`` on the FastAPI app ``api``."""
    documented = {
        **errors,
        502: {"model": errors[422]["model"], "description": "the LLM failed"},
    }

    def served(check: Callable[[], None], run: Callable[[], T]) -> Callable[[Deadline], T]:
        """The work of one request: its caps, then ``run`` holding the LLM gate."""

        def work(deadline: Deadline) -> T:
            check()  # before any model work
            with LLM_GATE.hold(deadline, config.model_wait_s):
                before = llm.usage.as_dict()
                try:
                    return run()
                finally:
                    after = llm.usage.as_dict()
                    for kind in ("prompt", "completion"):
                        spent = after[f"{kind}_tokens"] - before[f"{kind}_tokens"]
                        metrics().llm_tokens.labels(kind).inc(spent)

        return work

    @api.post(
        "/v1/plan",
        response_model=PlanResponse,
        responses=documented,
        summary="Sub-questions (and an outline) for a question, from the server's LLM",
    )
    async def plan(request: PlanRequest, http: Request) -> PlanResponse:
        """DES sub-questions of the question, its include / exclude aspects, and with
        ``outline`` a QPlanner outline (QTree, judged candidates, random baseline score)."""
        work = served(lambda: check_plan(request, config), lambda: run_plan(request, llm))
        return await run_gated(executor, work, config.llm_timeout_s, http.is_disconnected)

    stream_doc = "the response; with `stream`, server-sent events (planned, retrieved, selected, "
    stream_doc += "token..., then answer: this response, or error: an error's status and body)"

    @api.post(
        "/v1/answer",
        response_model=AnswerResponse,
        responses={**documented, 200: {"content": {MEDIA_TYPE: {}}, "description": stream_doc}},
        summary="A cited answer from the given passages, with critique-and-rewrite passes",
    )
    async def answer(request: AnswerRequest, http: Request) -> AnswerResponse | Response:
        """Writes a cited answer (about ``sentences`` sentences, each factual one citing
        passages as [n]) and ``passes`` critique-and-rewrite rounds; citations of passages that
        do not exist are reported per draft, never kept. Every sentence is checked against the
        passages: its ``check`` says how it was verified and which span supports it, a
        mis-pointed citation is repaired, an unsupported sentence is dropped (or marked), and a
        reply with no supported sentence becomes quotations of the passages (or a refusal).
        With ``stream``, the same work as server-sent events, the response last."""

        def check() -> None:
            check_answer(request, config, lambda: answer_estimator(config))

        if request.stream:
            deadline = Deadline.after(config.llm_timeout_s)

            def run(sink: EventSink) -> AnswerResponse:
                return served(check, lambda: run_answer(request, llm, config, sink))(deadline)

            stream = EventStream(run, deadline).start(executor)
            return await streamed(stream, http.is_disconnected)
        work = served(check, lambda: run_answer(request, llm, config))
        return await run_gated(executor, work, config.llm_timeout_s, http.is_disconnected)
