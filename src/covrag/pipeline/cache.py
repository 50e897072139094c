"""What the estimate step computed for a topic, kept for the next policy over the same topic.

``bench``, ``cv`` and batch selection run several selectors and budgets over each topic: each
passes :func:`covrag.pipeline.usecases.select` (or :func:`~covrag.pipeline.usecases.estimate`) a
:class:`TopicCache`, so that the topic's pool is prepared once, its aspects found once per aspect
source and its coverage estimated once per (aspect source, estimator), whichever policies read
them. A policy over a cached topic gets the same :class:`~covrag.pipeline.context.Estimated` as
without the cache.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from covrag.coverage.base import CoverageEstimator
from covrag.llm.base import LLM
from covrag.pipeline.config import PrepareConfig
from covrag.pipeline.context import (
    Estimated,
    build_source,
    estimate_matrix,
    estimator_of,
    prepare_config,
    prepare_pool,
    refine,
    selector_of,
    source_aspects,
)
from covrag.pipeline.inputs import with_inputs
from covrag.pipeline.policy import ContextPolicy
from covrag.pipeline.prepare import attach_coverage
from covrag.plan.sources import AspectSource, SourcedTopic
from covrag.selectors.base import Candidates, Selector
from covrag.types import CoverageMatrix, Topic


@dataclass
class TopicCache:
    """One topic's estimate-step results, filled as policies ask for them.

    Attributes:
        config: How the pool is prepared, once for every policy over the topic (what all their
            selectors read); None: as the first policy asks (:func:`prepare_config`).
        sources: Built aspect sources by the name a policy's ``aspects`` gives (others are
            built from the policy).
        pool: The prepared pool, without coverage, with the same-point vectors read so far.
        sourced: The topic with each aspect source's aspects, by the policy's ``aspects``.
        matrices: Coverage matrices of the pool by (aspect source, ``repr`` of the estimator).
    """

    config: PrepareConfig | None = None
    sources: dict[str, AspectSource] = field(default_factory=dict)
    pool: Candidates | None = None
    sourced: dict[str | None, SourcedTopic] = field(default_factory=dict)
    matrices: dict[tuple[str | None, str], CoverageMatrix] = field(default_factory=dict)

    def aspects(self, topic: Topic, policy: ContextPolicy, llm: LLM | None = None) -> SourcedTopic:
        """``topic`` with the aspects of ``policy``'s source, found once per source."""
        if policy.aspects not in self.sourced:
            source = self.sources.get(policy.aspects) if policy.aspects else None
            found = source_aspects(topic, source or build_source(policy, llm))
            self.sourced[policy.aspects] = found
        return self.sourced[policy.aspects]

    def prepared(self, topic: Topic, policy: ContextPolicy, selector: Selector) -> Candidates:
        """The pool as ``selector`` reads it, without coverage, prepared once."""
        if self.pool is None:
            config = self.config or prepare_config(policy, selector, topic)
            self.pool = prepare_pool(topic, config)
        self.pool = with_inputs(self.pool, [selector])
        return self.pool

    def matrix(
        self, topic: Topic, policy: ContextPolicy, estimator: CoverageEstimator
    ) -> CoverageMatrix:
        """``estimator``'s coverage of the pool against the aspects of ``policy``'s source."""
        key = (policy.aspects, repr(estimator))
        if key not in self.matrices:
            sourced = self.aspects(topic, policy).topic
            assert self.pool is not None, "prepare the pool first"
            self.matrices[key] = estimate_matrix(self.pool, sourced, estimator)
        return self.matrices[key]

    def estimate(
        self,
        topic: Topic,
        policy: ContextPolicy,
        *,
        llm: LLM | None = None,
        check: Callable[[Topic], None] | None = None,
    ) -> Estimated:
        """:func:`~covrag.pipeline.context.estimate_context` from what is cached, computing
        (and keeping) what is not."""
        selector = selector_of(policy)
        estimator = estimator_of(policy, selector)
        sourced = self.aspects(topic, policy, llm)
        if check is not None:
            check(sourced.topic)
        started = time.perf_counter()
        candidates = self.prepared(topic, policy, selector)
        if estimator is not None:
            matrix = self.matrix(topic, policy, estimator)
            candidates = attach_coverage(candidates, matrix, sourced.topic)
        seconds = {"aspects": sourced.seconds, "estimate": time.perf_counter() - started}
        question = candidates.query if policy.floor_question else None
        return refine(sourced.topic, candidates, selector, estimator, policy, question, seconds)
