"""LangChain: a document compressor that selects for coverage instead of MMR.

Example (needs ``pip install 'covrag[integrations]'``; the retriever is yours)::

    from langchain_classic.retrievers import ContextualCompressionRetriever
    from covrag.integrations.langchain import CoverageCompressor

    compressor = CoverageCompressor(
        aspects=["What does it cost?", "Who pays?", "What are the risks?"], k=4
    )
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=my_retriever
    )
    for doc in retriever.invoke("Should cities ban cars?"):
        print(doc.metadata["covrag"]["newly_covered"], doc.page_content)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from covrag.errors import MissingExtraError

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("langchain-core", "integrations") from exc

from covrag.integrations._engine import METADATA_KEY, documented
from covrag.integrations._models import CoverageOptions


@documented
class CoverageCompressor(CoverageOptions, BaseDocumentCompressor):
    """Keeps the documents that together cover the query's aspects, within a budget.

    A drop-in for the MMR step: give it the retrieved documents and the query; it returns copies
    of the chosen documents (same ``id``, ``page_content`` and metadata, never truncated) in
    selection order, each with ``metadata["covrag"]``: ``rank``, ``score``, ``tokens``,
    ``newly_covered`` and ``covers`` (aspect texts), ``uncovered`` (aspects no chosen document
    covers), ``selector`` and ``coverage``. Its options are :class:`CoverageChoice`'s (below),
    and ``score_key``: the metadata key holding the retriever's score, if any (without it,
    ``relevance="auto"`` follows the retriever's order).
    """

    score_key: str | None = None

    def compress_documents(
        self,
        documents: Sequence[Document],
        query: str,
        callbacks: Callbacks | None = None,
    ) -> Sequence[Document]:
        """The chosen documents, in selection order, with what each newly covers."""
        scores = None
        if self.score_key is not None:
            scores = [_score(doc.metadata.get(self.score_key)) for doc in documents]
        choice = self._choice.choose([d.page_content for d in documents], query, scores=scores)
        chosen = []
        for pick in choice.picks:
            doc = documents[pick.index]
            metadata = {**doc.metadata, METADATA_KEY: choice.metadata(pick)}
            chosen.append(doc.model_copy(update={"metadata": metadata}))
        return chosen


def _score(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
