"""The one path to a context: aspects -> estimate -> floor / gate -> select.

:func:`choose` runs a topic through the steps under a :class:`~covrag.pipeline.policy.ContextPolicy`
and returns every intermediate result (:class:`Chosen`). It is two halves, so that a caller can
put something between the model work and the selection (the server's model lock, ``ask``'s stage
clock): :func:`estimate_context` does all the model work (the aspect source, token costs,
relevance, embeddings, every coverage column a selection reads, the gate's similarities, the
pool aspects' columns, the vectors the selector reads) and the filters, which are pure functions
of what it computed; :func:`pick_context` selects, computing only, and its seconds are the
selection's only.

The steps are functions of their own (:func:`source_aspects`, :func:`prepare_pool`,
:func:`estimate_matrix`, :func:`question_column`, :func:`pool_columns`, :func:`select_step`):
``cv`` scores many methods per topic and calls them with its caches, so that a
topic's pool, aspects and matrices are computed once whichever methods read them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from covrag.coverage.base import CoverageEstimator, parse_estimator
from covrag.llm.base import LLM
from covrag.pipeline.config import PrepareConfig, config_for
from covrag.pipeline.inputs import question_similarity, with_inputs
from covrag.pipeline.policy import DEFAULT_COVERAGE, ContextPolicy
from covrag.pipeline.prepare import attach_coverage, prepare
from covrag.plan.pool import PoolAspectFinder
from covrag.plan.sources import AspectSource, SourcedTopic, source_class
from covrag.selectors.base import COVERAGE, Candidates, Selector, parse_selector
from covrag.selectors.floor import FilterReport, filter_pool
from covrag.text import subject_names
from covrag.types import Aspect, Budget, CoverageMatrix, FloatArray, Selection, Topic


@dataclass(frozen=True)
class Estimated:
    """What the model work of :func:`estimate_context` produced.

    Attributes:
        topic: The topic coverage was estimated on: the aspect source's aspects, the passages
            with their token costs (measures read the original topic's labels).
        selector: The selector the policy names.
        estimator: The coverage estimator (None: the selector reads no coverage).
        candidates: The whole pool as the selector reads it, with its coverage.
        kept: What clears the floor and the gate, with the pool aspects' columns when asked.
        filters: What the floor and the gate let through.
        wanted: The aspect ids a selection reports as covered (None: every column of ``kept``).
        seconds: Seconds per step (``aspects``, ``estimate``, ``filter``, ``pool_aspects``).
    """

    topic: Topic
    selector: Selector
    estimator: CoverageEstimator | None
    candidates: Candidates
    kept: Candidates
    filters: FilterReport
    wanted: tuple[str, ...] | None = None
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def coverage(self) -> CoverageMatrix | None:
        """The coverage of the whole pool against the topic's aspects."""
        return self.candidates.coverage


@dataclass(frozen=True)
class Chosen:
    """A chosen context: the selection and everything it was chosen from.

    Attributes:
        selection: The ordered, budgeted passages, with the trace of what each newly covers.
        estimated: The model work behind it (:class:`Estimated`).
        seconds: Seconds per step, ``select`` (the selection alone) included.
    """

    selection: Selection
    estimated: Estimated
    seconds: dict[str, float]

    @property
    def topic(self) -> Topic:
        return self.estimated.topic

    @property
    def candidates(self) -> Candidates:
        return self.estimated.candidates

    @property
    def coverage(self) -> CoverageMatrix | None:
        return self.estimated.coverage

    @property
    def filters(self) -> FilterReport:
        return self.estimated.filters


# -- the steps ----------------------------------------------------------------------------------


def build_source(policy: ContextPolicy, llm: LLM | None = None) -> AspectSource | None:
    """The aspect source the policy names, built from its options (None: the topic's own)."""
    if policy.aspects is None:
        return None
    return source_class(policy.aspects).build(policy.aspect_options, llm)


def source_aspects(topic: Topic, source: AspectSource | None) -> SourcedTopic:
    """The topic with the source's aspects (as it is without a source), and the seconds."""
    return SourcedTopic(topic, 0.0) if source is None else source.timed(topic)


def selector_of(policy: ContextPolicy) -> Selector:
    """The policy's selector."""
    chosen = policy.selector
    return chosen if isinstance(chosen, Selector) else parse_selector(chosen)


def estimator_of(policy: ContextPolicy, selector: Selector) -> CoverageEstimator | None:
    """The policy's estimator: the one it names, else the default when the selector reads
    coverage, else none."""
    spec = policy.coverage
    if spec is None:
        if not selector.needs(COVERAGE):
            return None
        spec = DEFAULT_COVERAGE
    return spec if isinstance(spec, CoverageEstimator) else parse_estimator(spec)


def prepare_config(policy: ContextPolicy, selector: Selector, topic: Topic) -> PrepareConfig:
    """What preparing the pool computes: what the selector reads, the embeddings of the gate,
    and the relevance the policy asks for (``auto``: scores when every passage has one)."""
    relevance = policy.relevance
    if relevance == "auto":
        scored = topic.passages and all(p.score is not None for p in topic.passages)
        relevance = "score" if scored else "order"
    config = config_for([selector], relevance, policy.counter)
    if policy.gate > 0.0 and not config.embeddings:
        config = dataclasses.replace(config, embeddings=True)
    return config


def prepare_pool(topic: Topic, config: PrepareConfig) -> Candidates:
    """The pool as a selector reads it, without coverage: token costs, relevance, embeddings."""
    return prepare(topic, None, config).candidates


def estimate_matrix(
    candidates: Candidates, topic: Topic, estimator: CoverageEstimator
) -> CoverageMatrix:
    """The coverage of the prepared pool (passages with token costs) against ``topic``'s aspects."""
    return estimator.estimate(dataclasses.replace(topic, passages=candidates.passages))


def question_column(
    candidates: Candidates, estimator: CoverageEstimator, question: str
) -> FloatArray:
    """Each candidate's probability of answering ``question`` itself (the question floor)."""
    asked = Topic(candidates.query_id, question, candidates.passages, (Aspect("q", question),))
    column: FloatArray = estimator.estimate(asked).probs[:, 0]
    return column


def pool_columns(candidates: Candidates, estimator: CoverageEstimator, n: int) -> Candidates:
    """The candidates with ``n`` representatives of their pool as more aspects (ids
    ``pool:pool1``, ...), scored by ``estimator``, weight 1, none excluded."""
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


def select_step(
    selector: Selector,
    candidates: Candidates,
    budget: Budget,
    wanted: tuple[str, ...] | None = None,
) -> Selection:
    """The selector's choice; with ``wanted``, the trace names only those aspects."""
    selection = selector.select(candidates, budget)
    if wanted is None:
        return selection
    keep = set(wanted)
    steps = tuple(
        dataclasses.replace(s, newly_covered=tuple(a for a in s.newly_covered if a in keep))
        for s in selection.steps
    )
    return dataclasses.replace(selection, steps=steps)


# -- the composition ----------------------------------------------------------------------------


def estimate_context(
    topic: Topic,
    policy: ContextPolicy,
    *,
    selector: Selector | None = None,
    estimator: CoverageEstimator | None = None,
    source: AspectSource | None = None,
    llm: LLM | None = None,
    check: Callable[[Topic], None] | None = None,
) -> Estimated:
    """The model work of choosing a context, then the filters.

    Args:
        topic: The question and its pool (with its own aspects, if any).
        policy: The defaults (:mod:`covrag.pipeline.policy`).
        selector: Overrides the policy's selector (already built).
        estimator: Overrides the policy's estimator (already built).
        source: Overrides the policy's aspect source (already built).
        llm: For an aspect source that needs one.
        check: Called with the topic to estimate on, before estimating (a caller's limits).
    """
    selector = selector or selector_of(policy)
    estimator = estimator or estimator_of(policy, selector)
    sourced = source_aspects(topic, source or build_source(policy, llm))
    if check is not None:
        check(sourced.topic)
    started = time.perf_counter()
    candidates = prepare_pool(sourced.topic, prepare_config(policy, selector, sourced.topic))
    if estimator is not None:
        matrix = estimate_matrix(candidates, sourced.topic, estimator)
        candidates = attach_coverage(candidates, matrix, sourced.topic)
    seconds = {"aspects": sourced.seconds, "estimate": time.perf_counter() - started}
    question = candidates.query if policy.floor_question else None
    return refine(sourced.topic, candidates, selector, estimator, policy, question, seconds)


def refine(
    topic: Topic,
    candidates: Candidates,
    selector: Selector,
    estimator: CoverageEstimator | None,
    policy: ContextPolicy,
    question: str | None = None,
    seconds: dict[str, float] | None = None,
) -> Estimated:
    """The columns the filters read (the candidates' probability of answering ``question``, for
    the floor; their similarity to the query, for the gate), the filters, the columns of the
    pool aspects among what clears them, and the vectors the selector reads of those
    (:func:`~covrag.pipeline.inputs.with_inputs`): :func:`estimate_context` after the pool's
    coverage."""
    seconds = dict(seconds or {})
    started = time.perf_counter()
    answers = similarity = None
    if question is not None and policy.floor > 0.0 and candidates.passages:
        assert estimator is not None, "the question floor needs an estimator"
        answers = question_column(candidates, estimator, question)
    if policy.gate > 0.0:
        similarity = question_similarity(candidates)
    seconds["estimate"] = seconds.get("estimate", 0.0) + time.perf_counter() - started
    started = time.perf_counter()
    kept, report = filter_pool(
        candidates,
        policy.floor,
        answers,
        gate=policy.gate,
        similarity=similarity,
        gate_margin=policy.gate_margin,
        names=subject_names(question or topic.query) if policy.names else (),
        question=question or topic.query,
        gate_scope=policy.gate_scope,
        judge=policy.filters,
    )
    seconds["filter"] = time.perf_counter() - started
    wanted = None
    if policy.pool_aspects and kept.passages and estimator is not None:
        started = time.perf_counter()
        assert kept.coverage is not None
        wanted = kept.coverage.aspect_ids
        kept = pool_columns(kept, estimator, policy.pool_aspects)
        seconds["pool_aspects"] = time.perf_counter() - started
    started = time.perf_counter()
    kept = with_inputs(kept, [selector])
    seconds["estimate"] += time.perf_counter() - started
    topic = dataclasses.replace(topic, passages=candidates.passages)
    return Estimated(topic, selector, estimator, candidates, kept, report, wanted, seconds)


def pick_context(estimated: Estimated, policy: ContextPolicy) -> Chosen:
    """Select under the policy's budget among what cleared the filters."""
    started = time.perf_counter()
    selection = select_step(estimated.selector, estimated.kept, policy.budget(), estimated.wanted)
    seconds = {**estimated.seconds, "select": time.perf_counter() - started}
    return Chosen(selection, estimated, seconds)


def choose(
    topic: Topic,
    policy: ContextPolicy,
    *,
    selector: Selector | None = None,
    estimator: CoverageEstimator | None = None,
    source: AspectSource | None = None,
    llm: LLM | None = None,
) -> Chosen:
    """Choose a context for ``topic`` under ``policy``: aspects -> estimate -> floor / gate ->
    select (:func:`estimate_context`, then :func:`pick_context`).

    Example:
        >>> import covrag
        >>> from covrag.pipeline import SELECT
        >>> from covrag.pipeline.context import choose
        >>> topic = covrag.Topic(
        ...     query_id="q1",
        ...     query="Should cities ban cars?",
        ...     passages=(
        ...         covrag.Passage("p1", "Cars pollute the air."),
        ...         covrag.Passage("p2", "Car bans hurt shops."),
        ...     ),
        ...     aspects=(covrag.Aspect("a1", "pollution"), covrag.Aspect("a2", "economy")),
        ...     labels={"p1": frozenset({"a1"}), "p2": frozenset({"a2"})},
        ... )
        >>> policy = SELECT.budgeted(2, None)
        >>> import dataclasses
        >>> policy = dataclasses.replace(policy, coverage="gold", relevance="order")
        >>> choose(topic, policy).selection.covered
        ('a1', 'a2')
    """
    estimated = estimate_context(
        topic, policy, selector=selector, estimator=estimator, source=source, llm=llm
    )
    return pick_context(estimated, policy)


def select_with_filters(
    selector: Selector,
    candidates: Candidates,
    estimator: CoverageEstimator,
    k: int,
    floor: float,
    pool_aspects: int = 0,
    question: str | None = None,
    gate: float = 0.0,
) -> tuple[Selection, FilterReport]:
    """:func:`refine` and :func:`pick_context` for prepared ``candidates`` (with coverage): at
    most ``k`` of those that clear the coverage ``floor`` (a passage answering ``question`` too,
    when given) and the topic ``gate``, covering ``pool_aspects`` representatives of them beside
    the aspects; and what the filters let through."""
    policy = ContextPolicy(k=k, floor=floor, gate=gate, pool_aspects=pool_aspects)
    topic = Topic(candidates.query_id, candidates.query, candidates.passages, ())
    chosen = pick_context(refine(topic, candidates, selector, estimator, policy, question), policy)
    return chosen.selection, chosen.filters


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
    """:func:`select_with_filters` without the filters' report."""
    return select_with_filters(
        selector, candidates, estimator, k, floor, pool_aspects, question, gate
    )[0]
