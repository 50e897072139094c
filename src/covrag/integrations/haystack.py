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
    DEFAULTS,
    METADATA_KEY,
    LabelFree,
    Relevance,
    choice_of,
    documented,
)


@component
@documented
class CoverageRanker:
    """Keeps the documents that together cover the query's aspects, within a budget.

    Inputs: ``documents`` (retrieved, in retrieval order), ``query``, and optionally ``aspects``
    (sub-questions for this query; they override the ones given at construction). Outputs:
    ``documents``, copies of the chosen documents in selection order (same ``id``, content,
    ``score`` and ``meta``, never truncated), each with ``meta["covrag"]`` (``rank``, ``score``,
    ``tokens``, ``newly_covered``, ``covers``, ``uncovered``, ``selector``, ``coverage``), and
    ``uncovered_aspects``, the wanted aspects no chosen document covers. Its options are
    :class:`CoverageChoice`'s (below), as specs and lists, which Haystack serialises.
    """

    def __init__(
        self,
        selector: str | None = DEFAULTS["selector"],
        coverage: str = DEFAULTS["coverage"],
        aspects: list[str] | LabelFree | None = DEFAULTS["aspects"],
        k: int | None = DEFAULTS["k"],
        max_tokens: int | None = DEFAULTS["max_tokens"],
        relevance: Relevance = DEFAULTS["relevance"],
    ) -> None:
        # Stored under the init parameters' names: Haystack's default to_dict/from_dict reads them.
        self.selector = selector
        self.coverage = coverage
        self.aspects = aspects
        self.k = k
        self.max_tokens = max_tokens
        self.relevance = relevance
        self._choice = choice_of(self)

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
