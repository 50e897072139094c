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

from collections.abc import Callable, Sequence
from typing import Any

from covrag.errors import MissingExtraError

try:
    from langchain_core.callbacks import Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("langchain-core", "integrations") from exc

from pydantic import ConfigDict, PrivateAttr

from covrag.coverage.base import CoverageEstimator
from covrag.integrations._engine import (
    DEFAULT_ASPECTS,
    DEFAULT_COVERAGE,
    DEFAULT_K,
    METADATA_KEY,
    CoverageChoice,
    LabelFree,
    Relevance,
)
from covrag.selectors.base import Selector
from covrag.types import Aspect


class CoverageCompressor(BaseDocumentCompressor):
    """Keeps the documents that together cover the query's aspects, within a budget.

    A drop-in for the MMR step: give it the retrieved documents and the query; it returns copies
    of the chosen documents (same ``id``, ``page_content`` and metadata, never truncated) in
    selection order, each with ``metadata["covrag"]``: ``rank``, ``score``, ``tokens``,
    ``newly_covered`` and ``covers`` (aspect texts), ``uncovered`` (aspects no chosen document
    covers), ``selector`` and ``coverage``.

    Attributes:
        selector: covrag selector spec or object; None (the default):
            ``expected-coverage`` over the given aspects, without aspects facility location
            over covrag's same-point similarity (``covrag.pipeline.LABEL_FREE_SELECTOR``).
        coverage: coverage estimator spec or object (default covrag's shipped cross-encoder).
        aspects: Sub-questions a complete answer covers: a list, a callable ``query -> list``,
            or label-free: ``"pool"`` (the default: the documents that best represent the
            others) or ``"query"`` / None (the query is the only aspect).
        k: At most this many documents.
        max_tokens: At most this many tokens (MiniLM WordPiece); documents that do not fit are
            skipped, never cut.
        relevance: ``auto`` (the ``score_key`` metadata when every document has it, else the
            retriever's order), ``score``, ``order`` or ``dense``.
        score_key: Metadata key holding the retriever's score, if any.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    selector: str | Selector | None = None
    coverage: str | CoverageEstimator = DEFAULT_COVERAGE
    aspects: list[str | Aspect] | Callable[[str], Sequence[str | Aspect]] | LabelFree | None = (
        DEFAULT_ASPECTS
    )
    k: int | None = DEFAULT_K
    max_tokens: int | None = None
    relevance: Relevance = "auto"
    score_key: str | None = None

    _choice: CoverageChoice = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        self._choice = CoverageChoice(
            selector=self.selector,
            coverage=self.coverage,
            aspects=self.aspects,
            k=self.k,
            max_tokens=self.max_tokens,
            relevance=self.relevance,
        )

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
