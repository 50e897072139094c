"""LlamaIndex: a node postprocessor that selects for coverage instead of MMR.

Example (needs ``pip install 'covrag[integrations]'``; the index is yours)::

    from covrag.integrations.llama_index import CoverageNodePostprocessor

    postprocessor = CoverageNodePostprocessor(
        aspects=["What does it cost?", "Who pays?"], max_tokens=1024
    )
    engine = index.as_query_engine(similarity_top_k=30, node_postprocessors=[postprocessor])
"""

from __future__ import annotations

from covrag.errors import ConfigError, MissingExtraError

try:
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtraError("llama-index-core", "integrations") from exc

from covrag.integrations._engine import METADATA_KEY, documented
from covrag.integrations._models import CoverageOptions


@documented
class CoverageNodePostprocessor(CoverageOptions, BaseNodePostprocessor):
    """Keeps the nodes that together cover the query's aspects, within a budget.

    A drop-in for LlamaIndex's MMR / top-k trimming: it returns the chosen nodes in selection
    order as new ``NodeWithScore`` objects that keep the retriever's score and copies of the
    nodes (same ``node_id``, text and metadata, never truncated). Each copy's metadata gains
    ``covrag`` (``rank``, ``score``, ``tokens``, ``newly_covered``, ``covers``, ``uncovered``,
    ``selector``, ``coverage``), a key excluded from what the LLM and the embedder see. Its
    options are :class:`CoverageChoice`'s (below).
    """

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
