"""Batch commands over many topics or passages, on any :class:`~.executor.Executor`.

- :func:`select_topics`: every topic prepared (aspects, coverage, embeddings) and selected.
- :func:`build_index`: a retrieval index over a corpus, its embeddings computed on the executor.

With the default executor everything runs here; with
:class:`~covrag.pipeline.distributed.RayExecutor` the model step of each item runs on an actor
pool and the rest as Ray tasks. The results are the same either way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from covrag.coverage.base import CoverageEstimator
from covrag.embed import Encoder, default_encoder
from covrag.pipeline.config import PrepareConfig
from covrag.pipeline.context import estimate_matrix, prepare_pool, select_step, source_aspects
from covrag.pipeline.executor import Executor, SerialExecutor, identity, preloaded
from covrag.pipeline.inputs import with_inputs
from covrag.pipeline.prepare import attach_coverage
from covrag.plan.sources import AspectSource
from covrag.retrieve.base import IndexRetriever
from covrag.retrieve.dense import DenseRetriever, embedding_chunks, gather_embeddings
from covrag.retrieve.fusion import HybridRetriever
from covrag.retrieve.kinds import make_retriever
from covrag.selectors.base import Candidates, Selector
from covrag.types import Budget, FloatArray, Passage, Selection, Topic


@dataclass(frozen=True)
class _Prepare:
    """The model step of ``select``: the chosen aspects, coverage against them, embeddings and
    the vectors the selector reads."""

    estimator: CoverageEstimator | None
    config: PrepareConfig
    source: AspectSource | None
    selector: Selector

    def __call__(self, topic: Topic) -> Candidates:
        # Coverage is estimated against the chosen aspects; the run is judged on the gold labels.
        # The steps of covrag.pipeline.choose, a topic at a time.
        estimated = source_aspects(topic, self.source).topic
        candidates = with_inputs(prepare_pool(estimated, self.config), [self.selector])
        if self.estimator is None:
            return candidates
        matrix = estimate_matrix(candidates, estimated, self.estimator)
        return attach_coverage(candidates, matrix, estimated)


@dataclass(frozen=True)
class _Select:
    """The task step of ``select``: one selector under one budget."""

    selector: Selector
    budget: Budget

    def __call__(self, candidates: Candidates) -> tuple[Selection, Candidates]:
        return select_step(self.selector, candidates, self.budget), candidates


def select_topics(
    topics: Sequence[Topic],
    selector: Selector,
    budget: Budget,
    estimator: CoverageEstimator | None = None,
    config: PrepareConfig | None = None,
    *,
    source: AspectSource | None = None,
    executor: Executor | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[tuple[Selection, Candidates]]:
    """Prepare every topic and select from it; the selections (with the candidates they were
    chosen from) in topic order.

    Args:
        topics: The topics, with gold labels or without.
        selector: The selector to run.
        budget: Its budget.
        estimator: The coverage estimator, when the selector reads coverage.
        config: How topics are prepared (default: :class:`PrepareConfig`).
        source: The aspects coverage is estimated against (None: the topics' own).
        executor: Where the work runs (default: this process).
        progress: Called with each topic id once it is selected.
    """
    model_step = _Prepare(estimator, config or PrepareConfig(), source, selector)
    return (executor or SerialExecutor()).map(
        topics,
        [t.query_id for t in topics],
        preloaded(model_step),
        _Select(selector, budget),
        progress,
    )


def _encoder_step(model: str | None) -> Callable[[Sequence[str]], FloatArray]:
    """Loads the encoder once (per process or worker) and returns its ``encode``."""
    encoder = default_encoder() if model is None else Encoder(model)
    return encoder.encode


def build_index(
    passages: Sequence[Passage], kind: str, *, executor: Executor | None = None
) -> IndexRetriever:
    """A new index of ``kind`` over ``passages``; the dense embeddings (of ``dense`` and
    ``hybrid``) are computed on ``executor``, in the same chunks as
    :meth:`DenseRetriever.index <covrag.retrieve.DenseRetriever.index>`, so the index is the
    same. BM25 is built here: it is one pass over the corpus statistics."""
    retriever = make_retriever(kind)
    if executor is None:
        return retriever.index(passages)
    parts = retriever.retrievers if isinstance(retriever, HybridRetriever) else (retriever,)
    for part in parts:
        if isinstance(part, DenseRetriever):
            texts = [p.text for p in passages]
            chunks = embedding_chunks(texts)
            labels = [f"{i + 1} of {len(chunks)}" for i in range(len(chunks))]
            load = functools.partial(_encoder_step, part.model)
            vectors = executor.map(chunks, labels, load, identity, what="embedding chunk")
            part.index_embedded(passages, gather_embeddings(texts, chunks, vectors))
        elif isinstance(part, IndexRetriever):
            part.index(passages)
    return retriever
