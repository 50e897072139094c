"""The whole chain for one question: plan -> retrieve -> estimate -> select -> generate.

:func:`ask` runs DES end to end and keeps every intermediate result and what each stage cost
(seconds, LLM calls and tokens, coverage pairs scored), so a run can be printed, saved as a run
file that ``covrag report`` renders, and evaluated later (``covrag eval-answers``).

- **plan**: the request's include / exclude constraints (explicit, as in QPlanner's C2 queries)
  and the LLM's sub-questions of the base question (:class:`~covrag.plan.LLMDecomposer`); with
  ``outline=True`` the full QPlanner plan (QTree, judged outlines) whose best outline guides the
  writer as a content draft.
- **retrieve**: one search per sub-question and one for the question, fused by RRF
  (:class:`~covrag.retrieve.MultiQueryRetriever`) into the candidate pool (with a ``cover``
  index, by the coverage-trained encoder).
- **estimate**: the coverage matrix of pool x aspects (the shipped cross-encoder by default).
- **select**: expected coverage (by default; DES's greedy coverage with
  ``selector="greedy-coverage"``) under a passage budget, with its trace, among the passages
  that clear the coverage floor (``config.floor``): a question the corpus cannot answer gets
  fewer passages, or none, never off-topic padding. With ``config.pool_aspects`` the selector
  also covers representatives of what cleared the floor (:func:`select_context`).
- **generate**: a cited answer (free cited prose, or planned by aspect with
  ``writer="synthesis"``, :class:`~covrag.generate.SynthesisWriter`) and critique-and-rewrite
  passes
  (:class:`~covrag.generate.CritiqueRewriteGenerator`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from covrag.coverage import CrossEncoderCoverage, parse_estimator
from covrag.coverage.base import CoverageEstimator
from covrag.errors import ConfigError, StructuredOutputError
from covrag.generate import (
    CitedWriter,
    Critic,
    CritiqueContext,
    CritiqueRewriteGenerator,
    SynthesisWriter,
    Writer,
)
from covrag.generate.records import GenerationResult, LLMCost
from covrag.llm.base import LLM
from covrag.pipeline.config import AskConfig, PrepareConfig
from covrag.pipeline.prepare import prepare
from covrag.plan import C2Query, LLMDecomposer, Plan, QPlanner, SubQuestions
from covrag.plan.keypoints import keypoint_aspects
from covrag.plan.sketch import AnswerSketcher
from covrag.retrieve import CoverRetriever, MultiQueryRetriever, Retriever
from covrag.schema.ask import ask_plan, ask_run_record
from covrag.select import parse_selector
from covrag.select.base import Candidates, Selector
from covrag.select.floor import above_floor, question_similarity
from covrag.types import Aspect, Budget, CoverageMatrix, Selection, Topic

logger = logging.getLogger(__name__)

#: Called when a stage starts (``plan``, ``retrieve``, ...) and after each generation step.
StageCallback = Callable[[str], None]

STAGES = ("plan", "retrieve", "estimate", "select", "generate")


@dataclass(frozen=True)
class StageCost:
    """What one stage cost: wall-clock seconds, LLM spend and coverage pairs scored.

    ``cpu_seconds`` is the CPU time of the whole process during the stage (every thread: the
    embedded model's, ONNX Runtime's): on a shared machine it measures the work done, where
    ``seconds`` also counts the time spent waiting for a core.
    """

    seconds: float
    llm: LLMCost = LLMCost()
    pairs_scored: int = 0
    cpu_seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "seconds": round(self.seconds, 3),
            "cpu_seconds": round(self.cpu_seconds, 3),
            "llm": self.llm.as_dict(),
            "pairs_scored": self.pairs_scored,
        }


@dataclass(frozen=True)
class AskResult:
    """Everything one question produced.

    Attributes:
        query: The request: base question, include and exclude constraints.
        subquestions: The LLM's decomposition (None when aspects were given).
        plan: The QPlanner plan when an outline was asked for.
        queries: The search queries, in search order.
        topic: The question with the candidate pool (token costs set) and the aspects.
        coverage: The estimated pool x aspects coverage.
        selection: The selected context with its trace.
        generation: Every draft and critique.
        costs: Stage -> its cost.
        warnings: What did not go as asked (e.g. an outline the LLM could not plan).
    """

    query: C2Query
    subquestions: SubQuestions | None
    plan: Plan | None
    queries: tuple[str, ...]
    topic: Topic
    coverage: CoverageMatrix
    selection: Selection
    generation: GenerationResult
    costs: Mapping[str, StageCost] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

    @property
    def uncovered(self) -> tuple[Aspect, ...]:
        """Wanted aspects no selected passage covers."""
        covered = set(self.selection.covered)
        return tuple(
            a for a in self.topic.aspects if a.polarity != "exclude" and a.id not in covered
        )

    def run_record(self) -> dict[str, Any]:
        """The run file of this question (``covrag report`` renders it; ``covrag eval-answers``
        reads it), with the plan, the searches, every draft and critique and the costs."""
        subs, outline = self.subquestions, self.plan
        plan = ask_plan(
            request=self.query.request,
            base=self.query.base,
            include=self.query.include,
            exclude=self.query.exclude,
            subquestions=None if subs is None else (subs.texts, subs.dropped, subs.calls),
            outline=None
            if outline is None
            else (
                outline.best.texts,
                outline.best.score,
                outline.best.rationale,
                outline.baseline.score,
            ),
        )
        return ask_run_record(
            topic=self.topic,
            selection=self.selection,
            coverage=self.coverage,
            answer=self.generation.answer,
            plan=plan,
            queries=self.queries,
            uncovered=[a.id for a in self.uncovered],
            generation=self.generation.to_json(),
            costs={stage: cost.as_dict() for stage, cost in self.costs.items()},
            warnings=self.warnings,
            seconds=sum(c.seconds for c in self.costs.values()),
        )


class _Usage:
    """LLM spend between two points, read from the backend's running totals."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.start = dict(llm.usage.as_dict())

    def cost(self) -> LLMCost:
        now = self.llm.usage.as_dict()
        return LLMCost(
            calls=int(now["calls"] - self.start["calls"]),
            cached_calls=int(now["cached_calls"] - self.start["cached_calls"]),
            prompt_tokens=int(now["prompt_tokens"] - self.start["prompt_tokens"]),
            completion_tokens=int(now["completion_tokens"] - self.start["completion_tokens"]),
            seconds=float(now["seconds"] - self.start["seconds"]),
            reused_prompt_tokens=int(
                now["reused_prompt_tokens"] - self.start["reused_prompt_tokens"]
            ),
        )


@dataclass(frozen=True)
class Planned:
    """What the plan stage decided: the request, its aspects and where they came from."""

    query: C2Query
    aspects: tuple[Aspect, ...]
    subquestions: SubQuestions | None = None
    plan: Plan | None = None
    warnings: tuple[str, ...] = ()


def plan_aspects(
    question: str,
    llm: LLM,
    config: AskConfig,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    aspects: Sequence[Aspect] | None = None,
) -> Planned:
    """The aspects of a request: the given ones, or the LLM's sub-questions (and with
    ``config.outline`` a QPlanner plan) followed by the request's include / exclude aspects."""
    query = C2Query.explicit(question, include, exclude)
    if aspects is not None:
        planned = Planned(query, tuple(aspects))
    else:
        subquestions: SubQuestions | None = None
        plan: Plan | None = None
        warnings: list[str] = []
        if config.outline:
            planner = QPlanner(
                llm,
                subquestions=max(config.subquestions, 1),
                decompose_style=config.decompose_style,
            )
            try:
                plan = planner.plan(question, include, exclude)
                subquestions = plan.subquestions
            except StructuredOutputError as exc:
                # The outline is optional guidance: without it the answer is written from the
                # sub-questions alone, and the run says why.
                first = str(exc).splitlines()[0]
                warnings.append(f"no outline ({first}); writing without one")
                logger.warning("ask: %s", warnings[-1])
        if subquestions is None and config.subquestions:
            decomposer = LLMDecomposer(llm, n=config.subquestions, style=config.decompose_style)
            subquestions = decomposer.decompose(query.base)
        found = subquestions.aspects if subquestions is not None else ()
        planned = Planned(query, (*found, *query.aspects()), subquestions, plan, tuple(warnings))
    if not planned.aspects:
        raise ConfigError("no aspects: ask for sub-questions or give aspects")
    if config.answers:
        failures: list[str] = []
        sketcher = AnswerSketcher(llm, n=config.answers)
        sketched = sketcher.sketch_aspects(planned.aspects, query.base, failures)
        planned = dataclasses.replace(
            planned, aspects=sketched, warnings=(*planned.warnings, *failures)
        )
    return planned


def retrieve_pool(
    query: C2Query, aspects: Sequence[Aspect], retriever: Retriever, pool: int
) -> tuple[tuple[str, ...], Topic]:
    """One search per aspect and one for the question, fused: the queries and the topic.

    A :class:`~covrag.retrieve.CoverRetriever` (a ``cover`` index) runs the same searches with
    its coverage-trained encoder (:meth:`~covrag.retrieve.CoverRetriever.search_aspects`).
    """
    if isinstance(retriever, CoverRetriever):
        queries = retriever.aspect_queries(query.base, aspects)
        found = retriever.search_aspects(query.base, aspects, pool)
    else:
        multi = MultiQueryRetriever(retriever)
        queries = multi.queries(query.base, aspects)
        found = multi.search(query.base, pool, aspects=aspects)
    return queries, Topic("ask", query.base, passages=tuple(found), aspects=tuple(aspects))


def build_generator(
    llm: LLM,
    config: AskConfig,
    judge: CoverageEstimator | None,
    exclude: Sequence[str] = (),
) -> CritiqueRewriteGenerator:
    """The writer and critic ``config`` asks for: ``judge`` tells the critic which aspects the
    answer covers (``pointers`` feedback)."""
    writer: Writer
    if config.writer == "synthesis":
        writer = SynthesisWriter(
            llm, max_words=config.max_words, max_tokens=config.max_tokens, exclude=exclude
        )
    else:
        writer = CitedWriter(
            llm,
            sentences=config.sentences,
            rewrite_sentences=config.rewrite_sentences,
            max_words=config.max_words,
            max_tokens=config.max_tokens,
            exclude=exclude,
        )
    critic = Critic(
        llm,
        mode=config.feedback,
        estimator=judge,
        max_words=config.max_words,
        system_prompt=writer.system_prompt,
    )
    return CritiqueRewriteGenerator(writer, critic, passes=config.passes)


class _Clock:
    """Times the stages of one run and tells ``notify`` when each starts."""

    def __init__(self, notify: StageCallback) -> None:
        self.notify = notify
        self.costs: dict[str, StageCost] = {}
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()

    def start(self, stage: str) -> None:
        self.notify(stage)
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()

    def stop(self, stage: str, llm: LLMCost | None = None, pairs_scored: int = 0) -> None:
        spent = time.perf_counter() - self.started
        cpu = time.process_time() - self.cpu_started
        self.costs[stage] = StageCost(spent, llm or LLMCost(), pairs_scored, cpu)


def select_context(
    selector: Selector,
    candidates: Candidates,
    estimator: CoverageEstimator,
    k: int,
    floor: float,
    pool_aspects: int = 0,
    question: str | None = None,
    gate: float = 0.0,
) -> Selection:
    """``ask``'s selection: at most ``k`` of the candidates that clear the coverage ``floor``.

    With ``pool_aspects`` the selector also covers that many representatives of what cleared
    the floor (:class:`~covrag.plan.pool.PoolAspectFinder`), beside the sub-questions: the
    sub-questions say what a complete answer needs, the representatives what the pool holds.
    The floor reads the sub-questions only (a pool of padding has representatives too), and the
    selection reports coverage of the sub-questions only. With ``question`` a passage also
    clears the floor when the estimator says it answers the question itself (the question is
    not an aspect to cover). With a ``gate`` above 0 a passage must also be about the question's
    subject: its embedding's cosine to the candidates' query reaches ``gate``
    (:func:`~covrag.select.floor.above_floor`).
    """
    also = None
    if question is not None and floor > 0.0 and candidates.passages:
        asked = Topic(candidates.query_id, question, candidates.passages, (Aspect("q", question),))
        also = estimator.estimate(asked).probs[:, 0]
    similarity = question_similarity(candidates) if gate > 0.0 else None
    kept = above_floor(candidates, floor, also, gate=gate, similarity=similarity)
    if not pool_aspects or not kept.passages:
        return selector.select(kept, Budget(max_passages=k))
    selection = selector.select(
        add_pool_aspects(kept, estimator, pool_aspects), Budget(max_passages=k)
    )
    assert kept.coverage is not None
    wanted = set(kept.coverage.aspect_ids)
    steps = tuple(
        dataclasses.replace(s, newly_covered=tuple(a for a in s.newly_covered if a in wanted))
        for s in selection.steps
    )
    return dataclasses.replace(selection, steps=steps)


def add_pool_aspects(candidates: Candidates, estimator: CoverageEstimator, n: int) -> Candidates:
    """The candidates with ``n`` representatives of their pool as more aspects (ids
    ``pool:pool1``, ...), scored by ``estimator``, weight 1, none excluded."""
    from covrag.plan.pool import PoolAspectFinder

    coverage = candidates.coverage
    assert coverage is not None
    topic = Topic(candidates.query_id, candidates.query, candidates.passages, ())
    found = tuple(
        dataclasses.replace(a, id=f"pool:{a.id}") for a in PoolAspectFinder(k=n).find(topic)
    )
    extra = estimator.estimate(dataclasses.replace(topic, aspects=found))
    m, added = len(coverage.aspect_ids), len(found)
    weights = candidates.aspect_weights
    excluded = candidates.excluded
    merged = dataclasses.replace(
        coverage,
        aspect_ids=coverage.aspect_ids + extra.aspect_ids,
        probs=np.hstack([coverage.probs, extra.probs]),
        pairs_scored=coverage.pairs_scored + extra.pairs_scored,
        seconds=coverage.seconds + extra.seconds,
    )
    return dataclasses.replace(
        candidates,
        coverage=merged,
        aspect_weights=np.concatenate([np.ones(m) if weights is None else weights, np.ones(added)]),
        excluded=np.concatenate(
            [np.zeros(m, dtype=bool) if excluded is None else excluded, np.zeros(added, bool)]
        ),
    )


def ask(
    question: str,
    llm: LLM,
    retriever: Retriever,
    config: AskConfig | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    aspects: Sequence[Aspect] | None = None,
    estimator: CoverageEstimator | None = None,
    on_stage: StageCallback | None = None,
) -> AskResult:
    """Answer ``question`` from ``retriever``'s corpus with a cited, critiqued answer.

    Args:
        question: The question.
        llm: Plans, writes and critiques.
        retriever: Searches the corpus (e.g. a :class:`~covrag.retrieve.BM25Retriever`).
        config: Stage settings (default :class:`AskConfig`: 8 sub-questions, a pool of 50,
            k = 8, expected coverage, 2 passes).
        include: Subtopics the answer must cover (aspects of polarity ``include``).
        exclude: Subtopics it must leave out (polarity ``exclude``: searched for never,
            penalised by the selector, named to the writer as off limits).
        aspects: Use these aspects instead of asking the LLM for sub-questions.
        estimator: Coverage estimator (default: from ``config.coverage``).
        on_stage: Progress callback.
    """
    config = config or AskConfig()
    clock = _Clock(on_stage or (lambda _: None))

    clock.start("plan")
    usage = _Usage(llm)
    notes: tuple[str, ...] = ()
    if aspects is None and config.aspect_source == "keypoints":
        aspects, notes = keypoint_aspects(
            question,
            llm,
            retriever,
            pool=config.pool,
            n=config.subquestions,
            gate=config.gate,
            include=include,
            exclude=exclude,
        )
    planned = plan_aspects(question, llm, config, include=include, exclude=exclude, aspects=aspects)
    planned = dataclasses.replace(planned, warnings=(*notes, *planned.warnings))
    query = planned.query
    clock.stop("plan", usage.cost())

    clock.start("retrieve")
    queries, topic = retrieve_pool(query, planned.aspects, retriever, config.pool)
    clock.stop("retrieve")

    clock.start("estimate")
    estimator = estimator or parse_estimator(config.coverage)
    candidates = prepare(topic, estimator, PrepareConfig(relevance="score")).candidates
    coverage = candidates.coverage
    assert coverage is not None
    topic = dataclasses.replace(topic, passages=candidates.passages)
    clock.stop("estimate", pairs_scored=coverage.pairs_scored)

    clock.start("select")
    selector = parse_selector(config.selector)
    selection = select_context(
        selector,
        candidates,
        estimator,
        config.k,
        config.floor,
        config.pool_aspects,
        query.base if config.floor_question else None,
        config.gate,
    )
    clock.stop("select")

    clock.start("generate")
    by_id = {p.id: p for p in topic.passages}
    judge = estimator if isinstance(estimator, CrossEncoderCoverage) else CrossEncoderCoverage()
    generation = build_generator(llm, config, judge, query.exclude).generate(
        query.request,
        [by_id[p] for p in selection.passage_ids],
        context=CritiqueContext(planned.aspects, coverage),
        outline=planned.plan.best.texts if planned.plan is not None else (),
        on_step=clock.notify,
    )
    clock.stop("generate", generation.cost)
    return AskResult(
        query=query,
        subquestions=planned.subquestions,
        plan=planned.plan,
        queries=queries,
        topic=topic,
        coverage=coverage,
        selection=selection,
        generation=generation,
        costs=clock.costs,
        warnings=planned.warnings,
    )
