"""The use cases, the only way in: the CLI, the server, the integrations and ``covrag``'s verbs
translate their inputs into these functions' records and render what they return.

- :func:`open_corpus` (:mod:`covrag.pipeline.corpus`): documents, an index or a dataset -> a
  retriever.
- :func:`plan`: a question -> its aspects (sub-questions, a QPlanner outline, or key points of
  its pool), each with answer sketches when asked.
- :func:`select`: a topic under a resolved :class:`~covrag.pipeline.policy.ContextPolicy` -> a
  context (:func:`select_topics`: many topics, on an executor; :func:`estimate` then
  :func:`pick`: the same in two halves, for a caller that locks the model work;
  :func:`aspects_for`: only the aspects it estimates against).
- :func:`answer` (:mod:`covrag.pipeline.answer`): a question, passages and aspects -> a cited
  answer, under a context policy and a :class:`~covrag.schema.writer.WriterPolicy`.
- :func:`ask`: a question and a corpus -> a cited answer, every stage recorded.
- :func:`evaluate`: a run -> its measures on gold labels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeAlias

from covrag.errors import ConfigError
from covrag.pipeline.answer import Answered, GatedEstimator, answer
from covrag.pipeline.ask import ask as run_ask
from covrag.pipeline.cache import TopicCache
from covrag.pipeline.config import AskConfig
from covrag.pipeline.context import Chosen, Estimated, choose, selector_of
from covrag.pipeline.corpus import Corpus, DocumentOptions, open_corpus
from covrag.pipeline.measures import JudgedAnswers, evaluate, judge_answers, report
from covrag.pipeline.policy import ContextPolicy
from covrag.types import Aspect, Topic

if TYPE_CHECKING:
    from covrag.coverage.base import CoverageEstimator
    from covrag.embed import Encoder
    from covrag.llm.base import LLM
    from covrag.pipeline.ask_records import AskResult, StageCallback
    from covrag.pipeline.events import Event
    from covrag.pipeline.executor import Executor
    from covrag.plan.sources import AspectSource
    from covrag.selectors.base import Candidates, Selector
    from covrag.types import CoverageMatrix, Selection

#: A selector, or its spec (``"greedy-coverage"``, ``"mmr(lam=0.7)"``).
SelectorSpec: TypeAlias = "str | Selector"
#: A coverage estimator, or its spec (``"gold"``, ``"cross-encoder"``).
EstimatorSpec: TypeAlias = "str | CoverageEstimator"
#: An LLM, or its spec (``"local"``, ``"openai(model='gpt-4o-mini')"``).
LLMSpec: TypeAlias = "str | LLM"

__all__ = [
    "Answered",
    "Corpus",
    "DocumentOptions",
    "Estimated",
    "EstimatorSpec",
    "FieldError",
    "GatedEstimator",
    "LLMSpec",
    "PlanResult",
    "SelectorSpec",
    "TopicCache",
    "answer",
    "aspects_for",
    "ask",
    "estimate",
    "evaluate",
    "open_corpus",
    "pick",
    "plan",
    "select",
    "select_topics",
    "built",
    "run_file",
    "report",
    "topic_record",
    "given_aspects",
    "judge_answers",
    "JudgedAnswers",
]


class FieldError(ConfigError):
    """An input field a use case cannot serve, named (a server answers it with 422)."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def select(
    topic: Topic,
    policy: ContextPolicy,
    *,
    llm: LLM | None = None,
    cache: TopicCache | None = None,
) -> Chosen:
    """Choose a context for ``topic`` under ``policy`` (resolve it first:
    :meth:`ContextPolicy.resolve`): aspects -> estimate -> floor / gate -> select. With a
    ``cache`` of the topic, what an earlier policy over it estimated is reused (several
    selectors and budgets over one topic: ``bench``, ``cv``, batch selection)."""
    policy.budget()  # a budget that limits nothing is an error before any model work
    if cache is None:
        return choose(topic, policy, llm=llm)
    return pick(cache.estimate(topic, policy, llm=llm), policy)


def estimate(
    topic: Topic,
    policy: ContextPolicy,
    *,
    llm: LLM | None = None,
    check: Callable[[Topic], None] | None = None,
    cache: TopicCache | None = None,
) -> Estimated:
    """The model work of :func:`select` (aspects, token costs, relevance, coverage, the
    filters), for a caller that holds a lock around it; :func:`pick` then selects, computing
    only. ``check`` is called with the topic to estimate on, before estimating (a caller's
    limits); ``cache`` as in :func:`select`."""
    from covrag.pipeline.context import estimate_context

    policy.budget()
    if cache is not None:
        return cache.estimate(topic, policy, llm=llm, check=check)
    return estimate_context(topic, policy, llm=llm, check=check)


def pick(estimated: Estimated, policy: ContextPolicy) -> Chosen:
    """The selection of :func:`select` after :func:`estimate`, under ``policy``'s budget."""
    from covrag.pipeline.context import pick_context

    return pick_context(estimated, policy)


def aspects_for(
    topic: Topic, policy: ContextPolicy, *, llm: LLM | None = None
) -> tuple[Aspect, ...]:
    """The aspects :func:`select` estimates coverage against: those of ``policy``'s aspect
    source for ``topic`` (``pool``, ``query``, ``planner``, ...), else the topic's own."""
    from covrag.pipeline.context import build_source, source_aspects

    return source_aspects(topic, build_source(policy, llm)).topic.aspects


def built(policy: ContextPolicy) -> ContextPolicy:
    """``policy`` with its selector and its coverage estimator (when it names one) built from
    their specs, so a caller can name them as they are (``repr``) and build them once."""
    from covrag.coverage.base import parse_estimator

    spec = policy.coverage
    estimator = parse_estimator(spec) if isinstance(spec, str) else spec
    return replace(policy, selector=selector_of(policy), coverage=estimator)


def topic_record(
    topic: Topic, selection: Selection, coverage: CoverageMatrix | None
) -> dict[str, Any]:
    """A topic's record of a run file (``covrag report``): its aspects, passages, coverage
    matrix, selection and trace."""
    from covrag.report.runfile import topic_run_record

    return topic_run_record(topic, selection, coverage)


def run_file(
    topics: Sequence[Topic],
    done: Sequence[tuple[Selection, Candidates]],
    policy: ContextPolicy,
    dataset: str,
) -> dict[str, Any]:
    """The run file ``covrag report`` reads of :func:`select_topics`'s selections: per topic
    the aspects, passages, coverage matrix, selection and trace."""
    from covrag.report.runfile import run_file_record

    records = [
        topic_record(replace(topic, passages=candidates.passages), selection, candidates.coverage)
        for topic, (selection, candidates) in zip(topics, done, strict=True)
    ]
    return run_file_record(
        records,
        dataset=dataset,
        selector=repr(policy.selector),
        coverage=repr(policy.coverage) if policy.coverage else "",
        budget=str(policy.budget()),
    )


def select_topics(
    topics: Sequence[Topic],
    policy: ContextPolicy,
    *,
    llm: LLM | None = None,
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[Selection, Candidates]]:
    """:func:`select` for every topic, the model step of each on ``executor``; the selections
    with the candidates they were chosen from, in topic order. The coverage estimator is the
    policy's (none when it names none); a batch applies no floor and no gate (the ``covrag
    select`` preset has none, :data:`~covrag.pipeline.policy.SELECT_BATCH`)."""
    from covrag.pipeline.context import build_source
    from covrag.pipeline.executor import SerialExecutor, preloaded
    from covrag.selectors.base import COVERAGE

    if policy.floor or policy.gate or policy.pool_aspects:
        raise ConfigError("a batch selection applies no floor, gate or pool aspects")
    if policy.relevance == "auto":
        raise ConfigError("a batch selection reads one relevance source: dense, score or order")
    policy.budget()
    policy = built(policy)
    if policy.coverage is None and selector_of(policy).needs(COVERAGE):
        raise ConfigError(f"{policy.selector!r} needs a coverage matrix (choose --coverage)")
    model_step = _EstimateStep(policy, build_source(policy, llm))
    return (executor or SerialExecutor()).map(
        topics, [t.query_id for t in topics], preloaded(model_step), _PickStep(policy), progress
    )


@dataclass(frozen=True)
class _EstimateStep:
    """The model step of :func:`select_topics` for one topic: :func:`estimate`, the aspect
    source built once for every topic."""

    policy: ContextPolicy
    source: AspectSource | None

    def __call__(self, topic: Topic) -> Estimated:
        # Coverage is estimated against the chosen aspects; the run is judged on the gold labels.
        named = self.policy.aspects
        sources = {} if self.source is None or named is None else {named: self.source}
        return estimate(topic, self.policy, cache=TopicCache(sources=sources))


@dataclass(frozen=True)
class _PickStep:
    """The task step of :func:`select_topics`: :func:`pick`, with the candidates it read."""

    policy: ContextPolicy

    def __call__(self, estimated: Estimated) -> tuple[Selection, Candidates]:
        return pick(estimated, self.policy).selection, estimated.kept


@dataclass(frozen=True)
class PlanResult:
    """What :func:`plan` found for a question.

    Attributes:
        query: The request split into its base question and include / exclude constraints.
        subquestions: The sub-questions (or key points of the pool), None when none were asked.
        plan: The QPlanner plan (QTree, judged outlines, baseline), with ``outline``.
        aspects: The sub-questions, then the include / exclude aspects, with their sketches.
        warnings: What could not be done (an aspect without a usable sketch).
        usage: What the LLM spent planning (:meth:`~covrag.llm.base.Usage.as_dict`'s keys: the
            change in its running totals).
    """

    query: Any
    subquestions: Any
    plan: Any
    aspects: tuple[Aspect, ...]
    warnings: tuple[str, ...] = ()
    usage: dict[str, float] = field(default_factory=dict)


def plan(
    question: str,
    llm: LLM,
    *,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    subquestions: int = 8,
    outline: bool = False,
    split: bool = False,
    answers: int = 0,
    pool: Corpus | None = None,
    pool_k: int = 50,
    depth: int = 3,
    branching: int = 3,
    encoder: Encoder | None = None,
) -> PlanResult:
    """The aspects of a question.

    Args:
        question: The request.
        llm: Splits, decomposes, outlines and sketches.
        include: Subtopics the answer must cover.
        exclude: Subtopics it must leave out.
        subquestions: At most this many sub-questions (0: none).
        outline: Also plan a QTree (``depth`` levels, ``branching`` children per node) and
            judged outlines (QPlanner; it splits the request itself).
        split: Without include / exclude, let the LLM split the request into them, and
            decompose the split's base question (QPlanner's sub-questions).
        answers: Answer sketches per aspect (0: none).
        pool: Read key points off this corpus's pool for the question instead (``pool_k``
            passages; :func:`~covrag.pipeline.corpus.open_corpus` opens it).
        encoder: Sentence encoder de-duplicating sub-questions (the server's, under its lock).
    """
    from covrag.plan import C2Query, LLMDecomposer
    from covrag.plan.keypoints import pool_keypoints
    from covrag.plan.planner import QPlanner
    from covrag.plan.sketch import AnswerSketcher

    before = llm.usage.as_dict()
    planner = QPlanner(
        llm, subquestions=subquestions, depth=depth, branching=branching, encoder=encoder
    )
    try:
        query = (
            planner.query(question, include, exclude)
            if split
            else C2Query.explicit(question, include, exclude)
        )
    except ConfigError as exc:
        raise FieldError("exclude", str(exc)) from exc
    tree = None
    if pool is not None:
        found: Any = pool_keypoints(
            query.base, llm, open_corpus(pool), pool=pool_k, n=max(subquestions, 1)
        )
    elif outline:
        tree = (
            planner.plan_tree(query, planner.decompose(query))
            if split
            else planner.plan(question, include, exclude)
        )
        found = tree.subquestions
    elif split:
        found = planner.decompose(query)
    else:
        found = LLMDecomposer(llm, n=subquestions, encoder=encoder).decompose(query.base)
    aspects = (*(found.aspects if found else ()), *query.aspects())
    warnings: list[str] = []  # an aspect the LLM gives no usable sketch keeps none
    if answers:
        aspects = AnswerSketcher(llm, n=answers).sketch_aspects(aspects, query.base, warnings)
    after = llm.usage.as_dict()
    usage = {key: after[key] - before[key] for key in after}
    return PlanResult(query, found, tree, tuple(aspects), tuple(warnings), usage)


def ask(
    question: str,
    corpus: Corpus = "bundled",
    *,
    llm: LLMSpec = "local",
    config: AskConfig | None = None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    aspects: Sequence[Aspect] | None = None,
    on_stage: StageCallback | None = None,
    on_event: Callable[[Event], None] | None = None,
) -> AskResult:
    """Answer ``question`` from ``corpus`` (anything :func:`open_corpus` opens): plan ->
    retrieve -> estimate -> select -> a cited, critiqued answer (:func:`covrag.pipeline.ask`;
    ``on_event`` hears the aspects, the pool and the context as each is ready)."""
    from covrag.llm import parse_llm

    model = parse_llm(llm) if isinstance(llm, str) else llm
    retriever = open_corpus(corpus)
    return run_ask(
        question,
        model,
        retriever,
        config,
        include=include,
        exclude=exclude,
        aspects=aspects,
        on_stage=on_stage,
        on_event=on_event,
    )


def given_aspects(
    question: str,
    texts: Sequence[str] | None,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
) -> tuple[Aspect, ...] | None:
    """The aspects a user gives ``ask`` (ids ``sq1``, ``sq2``, ...), then the request's include /
    exclude aspects; None without texts (the planner writes them)."""
    from covrag.plan import C2Query

    if not texts:
        return None
    given = tuple(Aspect(f"sq{i}", text) for i, text in enumerate(texts, start=1))
    return given + C2Query.explicit(question, include, exclude).aspects()
