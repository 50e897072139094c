"""Haystack 2.x / 3.x: a component that selects for coverage instead of a diversity ranker.

Example (needs ``pip install 'covrag[integrations]'``)::

    from haystack import Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from covrag.integrations.haystack import CoverageRanker

    pipeline = Pipeline()
    pipeline.add_component("retriever", InMemoryBM25Retriever(document_store, top_k=30))
    pipeline.add_component("coverage", CoverageRanker(k=5))
    pipeline.connect("retriever.documents", "coverage.documents")
    result = pipeline.run({
        "retriever": {"query": question},
        "coverage": {"query": question, "aspects": ["What does it cost?", "Who pays?"]},
    })
"""

# No ``from __future__ import annotations`` here: Haystack reads the run() annotations at runtime
# to build the component's input and output sockets.

from typing import Any

from covrag.errors import MissingExtraError

try:
    from haystack import Document, component
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("haystack-ai", "integrations") from exc

import dataclasses

from covrag.integrations._engine import (
    DEFAULT_ASPECTS,
    DEFAULT_COVERAGE,
    DEFAULT_K,
    METADATA_KEY,
    CoverageChoice,
    LabelFree,
    Relevance,
)


@component
class CoverageRanker:
    """Keeps the documents that together cover the query's aspects, within a budget.

    Inputs: ``documents`` (retrieved, in retrieval order), ``query``, and optionally ``aspects``
    (sub-questions for this query; they override the ones given at construction). Outputs:
    ``documents``, copies of the chosen documents in selection order (same ``id``, content,
    ``score`` and ``meta``, never truncated), each with ``meta["covrag"]`` (``rank``, ``score``,
    ``tokens``, ``newly_covered``, ``covers``, ``uncovered``, ``selector``, ``coverage``), and
    ``uncovered_aspects``, the wanted aspects no chosen document covers.

    Args:
        selector: covrag selector spec; None (the default):
            ``expected-coverage`` over the given aspects, without aspects facility location
            over covrag's same-point similarity (``covrag.pipeline.LABEL_FREE_SELECTOR``).
        coverage: coverage estimator spec (default covrag's shipped cross-encoder).
        aspects: Default sub-questions, or label-free: ``"pool"`` (the default: the documents
            that best represent the others) or ``"query"`` / None (the query is the only
            aspect).
        k: At most this many documents.
        max_tokens: At most this many tokens (MiniLM WordPiece); documents that do not fit are
            skipped, never cut.
        relevance: ``auto`` (the documents' scores when all have one, else their order),
            ``score``, ``order`` or ``dense``.
    """

    def __init__(
        self,
        selector: str | None = None,
        coverage: str = DEFAULT_COVERAGE,
        aspects: list[str] | LabelFree | None = DEFAULT_ASPECTS,
        k: int | None = DEFAULT_K,
        max_tokens: int | None = None,
        relevance: Relevance = "auto",
    ) -> None:
        # Stored under the init parameters' names: Haystack's default to_dict/from_dict reads them.
        self.selector = selector
        self.coverage = coverage
        self.aspects = aspects
        self.k = k
        self.max_tokens = max_tokens
        self.relevance = relevance
        self._choice = CoverageChoice(
            selector=selector,
            coverage=coverage,
            aspects=list(aspects) if isinstance(aspects, list) else aspects,
            k=k,
            max_tokens=max_tokens,
            relevance=relevance,
        )

    @component.output_types(documents=list[Document], uncovered_aspects=list[str])
    def run(
        self,
        documents: list[Document],
        query: str = "",
        aspects: list[str] | None = None,
    ) -> dict[str, Any]:
        """Choose among ``documents`` for ``query`` (and ``aspects``, when given)."""
        choice = self._choice.choose(
            [d.content or "" for d in documents],
            query,
            scores=[d.score for d in documents],
            aspects=list(aspects) if aspects is not None else None,
        )
        chosen = []
        for pick in choice.picks:
            doc = documents[pick.index]
            meta = {**doc.meta, METADATA_KEY: choice.metadata(pick)}
            chosen.append(dataclasses.replace(doc, meta=meta))
        return {"documents": chosen, "uncovered_aspects": [a.text for a in choice.uncovered]}
