"""The whole chain for one question: plan -> retrieve -> estimate -> select -> generate.

:func:`ask` runs DES end to end and keeps every intermediate result and what each stage cost
(seconds, LLM calls and tokens, coverage pairs scored), so a run can be printed, saved as a run
file that ``covrag report`` renders, and evaluated later (``covrag eval-answers``).

- **plan**: the request's include / exclude constraints (explicit, as in QPlanner's C2 queries)
  and the sub-questions of the base question (by default grounded in a first search,
  :class:`~covrag.plan.grounded.GroundedPlanner`).
- **retrieve**: one search per sub-question and one for the question, fused by RRF
  (:class:`~covrag.retrieve.MultiQueryRetriever`) into the candidate pool, with the passages
  that define what it names and those that write what the question names (:func:`retrieve_pool`).
- **estimate**: the coverage matrix of pool x aspects (the shipped cross-encoder by default).
- **select**: ``config.selector`` (top-k by relevance to the question by default, the label-free
  choice where that relevance is flat) among the passages the filters keep (coverage floor,
  topic gate, name filter: :mod:`covrag.selectors.floor`): a question the corpus cannot answer
  gets fewer passages, or none, never off-topic padding.
- **generate**: a cited answer, checked sentence by sentence, and critique-and-rewrite passes
  (:class:`~covrag.generate.CritiqueRewriteGenerator`).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence

import numpy as np

from covrag.coverage import CrossEncoderCoverage, parse_estimator
from covrag.coverage.base import CoverageEstimator
from covrag.embed import Encoder
from covrag.generate import (
    CitedWriter,
    Critic,
    CritiqueContext,
    CritiqueRewriteGenerator,
    NearestQuotes,
    SupportChecker,
    SynthesisWriter,
    Writer,
    support_warnings,
)
from covrag.generate.evidence import Evidence
from covrag.generate.records import GenerationResult
from covrag.llm.base import LLM
from covrag.pipeline.ask_records import STAGES as STAGES  # re-exported
from covrag.pipeline.ask_records import AskResult as AskResult  # re-exported
from covrag.pipeline.ask_records import StageCallback as StageCallback  # re-exported
from covrag.pipeline.ask_records import StageClock, UsageMeter
from covrag.pipeline.ask_records import StageCost as StageCost  # re-exported
from covrag.pipeline.config import AskConfig
from covrag.pipeline.context import Chosen, estimate_context, pick_context
from covrag.pipeline.events import (
    Event,
    EventStream,
    PlannedEvent,
    RetrievedEvent,
    SelectedEvent,
)
from covrag.plan import C2Query
from covrag.plan.planned import Planned as Planned  # re-exported
from covrag.plan.planned import PlannerAspects
from covrag.retrieve import CoverRetriever, MultiQueryRetriever, Retriever
from covrag.retrieve.base import IndexRetriever
from covrag.retrieve.definitions import TOP as DEFINITION_READS
from covrag.retrieve.definitions import with_definitions
from covrag.retrieve.named import with_named
from covrag.schema.writer import WriterPolicy
from covrag.types import LOOKED_UP, Aspect, CoverageMatrix, Passage, Selection, Topic

logger = logging.getLogger(__name__)


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
    ``config.outline`` a QPlanner plan) followed by the request's include / exclude aspects
    (the ``planner`` aspect source under ``config``'s options)."""
    query = C2Query.explicit(question, include, exclude)
    return PlannerAspects(llm, config.policy().aspect_options).plan(query, aspects)


def retrieve_pool(
    query: C2Query,
    aspects: Sequence[Aspect],
    retriever: Retriever,
    pool: int,
    definitions: int = 0,
    named: bool = False,
) -> tuple[tuple[str, ...], Topic]:
    """One search per aspect and one for the question, fused: the queries and the topic.

    A :class:`~covrag.retrieve.CoverRetriever` (a ``cover`` index) runs the same searches with
    its coverage-trained encoder (:meth:`~covrag.retrieve.CoverRetriever.search_aspects`).
    With ``definitions``, at most that many passages defining what the pooled passages nearest
    the question name join the pool (:func:`~covrag.retrieve.definitions.with_definitions`).
    With ``named``, so do the corpus passages writing what the question names and no pooled
    passage writes (:func:`~covrag.retrieve.named.with_named`).
    """
    if isinstance(retriever, CoverRetriever):
        queries = retriever.aspect_queries(query.base, aspects)
        found = retriever.search_aspects(query.base, aspects, pool)
    else:
        multi = MultiQueryRetriever(retriever)
        queries = multi.queries(query.base, aspects)
        found = multi.search(query.base, pool, aspects=aspects)
    passages = tuple(found)
    if definitions and isinstance(retriever, IndexRetriever) and passages:
        read = nearest(query.base, passages)
        passages = with_definitions(passages, retriever.passages, read=read, most=definitions)
    if named and isinstance(retriever, IndexRetriever) and passages:
        passages = with_named(passages, retriever.passages, query.base)
    return queries, Topic("ask", query.base, passages=passages, aspects=tuple(aspects))


def nearest(
    question: str, passages: Sequence[Passage], top: int = DEFINITION_READS
) -> list[Passage]:
    """The ``top`` passages nearest ``question`` by the packaged MiniLM's cosine (the estimate
    step reuses the embeddings: the encoder caches them by text)."""
    from covrag.embed import default_encoder

    encoder = default_encoder()
    vectors = encoder.encode([question, *(p.text for p in passages)])
    order = np.argsort(-(vectors[1:] @ vectors[0]), kind="stable")[:top]
    return [passages[int(i)] for i in order]


def build_generator(
    llm: LLM,
    config: WriterPolicy,
    judge: CoverageEstimator | None,
    exclude: Sequence[str] = (),
    support_judge: CoverageEstimator | None = None,
    encoder: Encoder | None = None,
    corpus: Sequence[Passage] = (),
) -> CritiqueRewriteGenerator:
    """The writer and critic ``config`` asks for: ``judge`` tells the critic which aspects the
    answer covers (``pointers`` feedback); ``support_judge`` is the citation check's judge of
    paraphrase, which the check consults only under a threshold (by default it does not:
    alignment alone supports a sentence, :mod:`covrag.generate.support`); ``encoder`` finds the
    context sentences nearest the question (``config.quotes``; None = the packaged MiniLM);
    ``corpus`` is where the check looks up the entries defining what a draft names
    (``config.evidence`` of them at most; :mod:`covrag.generate.evidence`)."""
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
    # Every draft's citations are checked against the passages (by alignment; the judge only
    # when a threshold asks for it), so nothing unsupported is shown or written.
    checker = SupportChecker(
        support_judge,
        unsupported=config.unsupported,
        fallback=config.fallback,
        complete=config.complete,
    )
    # what the writer left unstated, nearest the question: quoted after its sentences
    nearest = NearestQuotes(config.quotes, encoder) if config.quotes else None
    evidence = Evidence(corpus, config.evidence) if corpus and config.evidence else None
    return CritiqueRewriteGenerator(
        writer, critic, passes=config.passes, checker=checker, nearest=nearest, evidence=evidence
    )


def _plan(
    question: str,
    llm: LLM,
    retriever: Retriever,
    config: AskConfig,
    include: Sequence[str],
    exclude: Sequence[str],
    aspects: Sequence[Aspect] | None,
) -> Planned:
    """``ask``'s plan: the ``planner`` aspect source on the request: the given aspects, the
    LLM's sub-questions written seeing a first pool (``aspect_source="grounded"``), key points
    read off a first pool (``"keypoints"``; drop notes as warnings) or the LLM's sub-questions
    from the question alone (``"llm"``)."""
    query = C2Query.explicit(question, include, exclude)
    pool = None
    # a QTree outline (``outline``) is planned from DES's sub-questions, so it takes the llm path
    grounded = config.aspect_source == "grounded" and not config.outline
    if aspects is None and (config.aspect_source == "keypoints" or grounded):
        pool = tuple(retriever.search(query.base, config.pool))
    planner = PlannerAspects(llm, config.policy().aspect_options)
    return planner.plan(query, aspects, pool=pool, gate=config.gate, grounded=grounded)


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
    on_event: Callable[[Event], None] | None = None,
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
        on_event: Called with the plan's aspects, the pool and the context as each is ready
            (:func:`ask_stream` streams them).
    """
    config = config or AskConfig()
    clock = StageClock(on_stage or (lambda _: None))
    emit = on_event or (lambda _: None)

    clock.start("plan")
    usage = UsageMeter(llm)
    planned = _plan(question, llm, retriever, config, include, exclude, aspects)
    query = planned.query
    clock.stop("plan", usage.cost())
    emit(PlannedEvent(planned.aspects))

    clock.start("retrieve")
    queries, topic = retrieve_pool(
        query, planned.aspects, retriever, config.pool, config.definitions, config.names
    )
    clock.stop("retrieve")
    emit(RetrievedEvent(tuple(p.id for p in topic.passages), queries))

    estimator = estimator or parse_estimator(config.coverage)
    chosen = _choose(topic, config, estimator, clock)
    topic, coverage = chosen.topic, chosen.coverage
    assert coverage is not None
    selection, filters = chosen.selection, chosen.filters
    refusal = filters.reason() if not selection.passage_ids else None
    emit(SelectedEvent(selection.passage_ids, refusal or ""))

    clock.start("generate")
    corpus = retriever.passages if isinstance(retriever, IndexRetriever) else topic.passages
    generation = _generate(
        llm, config, estimator, planned, topic, selection, coverage, refusal, clock.notify, corpus
    )
    clock.stop("generate", generation.cost)
    return AskResult(
        query=query,
        subquestions=planned.subquestions,
        plan=planned.plan,
        queries=queries,
        topic=_with_evidence(topic, generation),
        coverage=coverage,
        selection=selection,
        generation=generation,
        costs=clock.costs,
        warnings=(
            *planned.warnings,
            *([f"no answer: {refusal}"] if refusal else []),
            *support_warnings(generation.drafts[-1]),
        ),
        filters=filters,
    )


def _with_evidence(topic: Topic, generation: GenerationResult) -> Topic:
    """``topic`` with the evidence passages the check read beyond the pool after its own, so
    that the run file holds every passage an answer sentence may cite."""
    pooled = {p.id for p in topic.passages}
    beyond = tuple(
        dataclasses.replace(p, metadata={**p.metadata, LOOKED_UP: True})
        for p in generation.evidence
        if p.id not in pooled
    )
    return dataclasses.replace(topic, passages=(*topic.passages, *beyond)) if beyond else topic


def load_models(config: AskConfig | None = None) -> CoverageEstimator:
    """The coverage estimator ``config`` names, its model loaded, and the packaged MiniLM when
    the pool's relevance or the gate reads it (once per process): what the estimate stage
    would otherwise load before its first pair. Pass the estimator to :func:`ask`, so that its
    stage lines time the estimating alone (``covrag ask`` counts this in its load stage)."""
    from covrag.embed import default_encoder
    from covrag.pipeline.context import selector_of
    from covrag.selectors.base import EMBEDDINGS
    from covrag.types import Passage

    config = config or AskConfig()
    policy = config.policy()
    estimator = parse_estimator(config.coverage)
    estimator.estimate(Topic("load", "load", (Passage("load", "load"),), (Aspect("a", "load"),)))
    reads_minilm = policy.relevance in ("dense", "sentences") or policy.gate > 0.0
    if reads_minilm or selector_of(policy).needs(EMBEDDINGS):
        default_encoder().encode(["load"])
    return estimator


def _choose(
    topic: Topic, config: AskConfig, estimator: CoverageEstimator, clock: StageClock
) -> Chosen:
    """The estimate and select stages: the pool's coverage, then the context."""
    clock.start("estimate")
    policy = dataclasses.replace(config.policy(), aspects=None)  # planned in the plan stage
    estimated = estimate_context(topic, policy, estimator=estimator)
    assert estimated.coverage is not None
    clock.stop("estimate", pairs_scored=estimated.coverage.pairs_scored)
    clock.start("select")
    chosen = pick_context(estimated, policy)
    clock.stop("select")
    return chosen


def ask_stream(
    question: str,
    llm: LLM,
    retriever: Retriever,
    config: AskConfig | None = None,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    aspects: Sequence[Aspect] | None = None,
    estimator: CoverageEstimator | None = None,
) -> EventStream[AskResult]:
    """:func:`ask` as it runs: its aspects, pool and context as each is ready, the LLM's tokens
    as it writes, then the :class:`AskResult` (the arguments are :func:`ask`'s).

    The work starts when the stream is first iterated, in a thread of its own; leaving the loop
    early (or ``close()``) stops it at its next token or scoring batch.

    Example:
        >>> for event in ask_stream(question, llm, retriever):  # doctest: +SKIP
        ...     if isinstance(event, TokenEvent):
        ...         print(event.text, end="", flush=True)
    """
    return EventStream.of(
        ask,
        question,
        llm,
        retriever,
        config,
        include=include,
        exclude=exclude,
        aspects=aspects,
        estimator=estimator,
    )


def _generate(
    llm: LLM,
    config: AskConfig,
    estimator: CoverageEstimator,
    planned: Planned,
    topic: Topic,
    selection: Selection,
    coverage: CoverageMatrix,
    refusal: str | None,
    on_step: StageCallback,
    corpus: Sequence[Passage] = (),
) -> GenerationResult:
    """The generate stage: the cited, critiqued answer from the selected passages (the
    estimator judges support when it is a cross-encoder, else the shipped one does)."""
    by_id = {p.id: p for p in topic.passages}
    judge = estimator if isinstance(estimator, CrossEncoderCoverage) else CrossEncoderCoverage()
    writer = config.writer_policy()
    generator = build_generator(llm, writer, judge, planned.query.exclude, corpus=corpus)
    return generator.generate(
        planned.query.request,
        [by_id[p] for p in selection.passage_ids],
        context=CritiqueContext(planned.aspects, coverage, refusal=refusal or ""),
        outline=planned.plan.best.texts if planned.plan is not None else (),
        on_step=on_step,
    )
