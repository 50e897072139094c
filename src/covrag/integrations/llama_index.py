"""LlamaIndex: a node postprocessor that selects for coverage instead of MMR.

Example (needs ``pip install 'covrag[integrations]'``; the index is yours)::

    from covrag.integrations.llama_index import CoverageNodePostprocessor

    postprocessor = CoverageNodePostprocessor(
        aspects=["What does it cost?", "Who pays?"], max_tokens=1024
    )
    engine = index.as_query_engine(similarity_top_k=30, node_postprocessors=[postprocessor])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from covrag.errors import ConfigError, MissingExtraError

try:
    from llama_index.core.bridge.pydantic import ConfigDict, PrivateAttr
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("llama-index-core", "integrations") from exc

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


class CoverageNodePostprocessor(BaseNodePostprocessor):
    """Keeps the nodes that together cover the query's aspects, within a budget.

    A drop-in for LlamaIndex's MMR / top-k trimming: it returns the chosen nodes in selection
    order as new ``NodeWithScore`` objects that keep the retriever's score and copies of the
    nodes (same ``node_id``, text and metadata, never truncated). Each copy's metadata gains
    ``covrag`` (``rank``, ``score``, ``tokens``, ``newly_covered``, ``covers``, ``uncovered``,
    ``selector``, ``coverage``), a key excluded from what the LLM and the embedder see.

    Attributes:
        selector: covrag selector spec or object; None (the default):
            ``expected-coverage`` over the given aspects, without aspects facility location
            over covrag's same-point similarity (``covrag.pipeline.LABEL_FREE_SELECTOR``).
        coverage: coverage estimator spec or object (default covrag's shipped cross-encoder).
        aspects: Sub-questions: a list, a callable ``query -> list``, or label-free: ``"pool"``
            (the default: the nodes that best represent the others) or ``"query"`` / None (the
            query is the only aspect).
        k: At most this many nodes.
        max_tokens: At most this many tokens (MiniLM WordPiece); nodes that do not fit are
            skipped, never cut.
        relevance: ``auto`` (the retriever's scores when every node has one, else its order),
            ``score``, ``order`` or ``dense``.
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

    _choice: CoverageChoice = PrivateAttr()

    def model_post_init(self, context: Any, /) -> None:
        super().model_post_init(context)
        self._choice = CoverageChoice(
            selector=self.selector,
            coverage=self.coverage,
            aspects=self.aspects,
            k=self.k,
            max_tokens=self.max_tokens,
            relevance=self.relevance,
        )

    @classmethod
    def class_name(cls) -> str:
        return "CoverageNodePostprocessor"

    def _postprocess_nodes(
        self,
        nodes: list[NodeWithScore],
        query_bundle: QueryBundle | None = None,
    ) -> list[NodeWithScore]:
        query = query_bundle.query_str if query_bundle is not None else ""
        if not query and self.aspects in (None, "query"):
            raise ConfigError("CoverageNodePostprocessor needs a query or explicit aspects")
        texts = [n.node.get_content(metadata_mode=MetadataMode.NONE) for n in nodes]
        choice = self._choice.choose(texts, query, scores=[n.score for n in nodes])
        chosen = []
        for pick in choice.picks:
            original = nodes[pick.index]
            node = original.node
            update = {
                "metadata": {**node.metadata, METADATA_KEY: choice.metadata(pick)},
                "excluded_llm_metadata_keys": _with_key(node.excluded_llm_metadata_keys),
                "excluded_embed_metadata_keys": _with_key(node.excluded_embed_metadata_keys),
            }
            chosen.append(NodeWithScore(node=node.model_copy(update=update), score=original.score))
        return chosen


def _with_key(keys: list[str]) -> list[str]:
    return keys if METADATA_KEY in keys else [*keys, METADATA_KEY]
