from __future__ import annotations

import pytest

from integration_support import ASPECTS, QUERY, TEXTS, KeywordCoverage

pytest.importorskip("llama_index.core")

from llama_index.core import VectorStoreIndex  # noqa: E402
from llama_index.core.embeddings import MockEmbedding  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode  # noqa: E402

from covrag.errors import ConfigError  # noqa: E402
from covrag.integrations.llama_index import CoverageNodePostprocessor  # noqa: E402


def nodes() -> list[TextNode]:
    return [
        TextNode(text=t, id_=f"n{i}", metadata={"source": f"doc{i}.txt"})
        for i, t in enumerate(TEXTS)
    ]


def test_query_engine_with_the_postprocessor_answers_from_covering_nodes() -> None:
    # MockEmbedding and MockLLM ship with llama-index-core: nothing is downloaded.
    index = VectorStoreIndex(nodes(), embed_model=MockEmbedding(embed_dim=8))
    postprocessor = CoverageNodePostprocessor(coverage=KeywordCoverage(), aspects=ASPECTS, k=3)
    engine = index.as_query_engine(
        llm=MockLLM(), similarity_top_k=len(TEXTS), node_postprocessors=[postprocessor]
    )
    response = engine.query(QUERY)
    sources = response.source_nodes
    assert len(sources) == 3
    covered = [s.node.metadata["covrag"]["newly_covered"] for s in sources]
    assert sorted(c[0] for c in covered) == sorted(ASPECTS)
    assert all(len(c) == 1 for c in covered)
    for source in sources:
        assert source.score is not None  # the retriever's score is kept
        assert source.node.metadata["source"].startswith("doc")
        # covrag's record never reaches the LLM's or the embedder's view of the node
        assert "covrag" not in source.node.get_content(metadata_mode=MetadataMode.LLM)
        assert "covrag" not in source.node.get_content(metadata_mode=MetadataMode.EMBED)


def test_retriever_then_postprocessor_keeps_ids_text_and_order_of_selection() -> None:
    index = VectorStoreIndex(nodes(), embed_model=MockEmbedding(embed_dim=8))
    retrieved = index.as_retriever(similarity_top_k=len(TEXTS)).retrieve(QUERY)
    by_id = {n.node.node_id: n for n in retrieved}
    postprocessor = CoverageNodePostprocessor(coverage=KeywordCoverage(), aspects=ASPECTS, k=4)
    chosen = postprocessor.postprocess_nodes(retrieved, query_str=QUERY)
    assert [n.node.metadata["covrag"]["rank"] for n in chosen] == [1, 2, 3, 4]
    assert {n.node.metadata["covrag"]["newly_covered"][0] for n in chosen[:3]} == set(ASPECTS)
    assert chosen[3].node.metadata["covrag"]["newly_covered"] == []
    for node in chosen:
        original = by_id[node.node.node_id]
        assert node.node.get_content() == original.node.get_content()
        assert node.score == original.score
        assert "covrag" not in original.node.metadata  # inputs untouched


def test_scores_order_the_fallback_and_a_query_is_needed_without_aspects() -> None:
    scored = [
        NodeWithScore(node=n, score=s) for n, s in zip(nodes(), [1, 2, 3, 9, 5, 4], strict=True)
    ]
    topk = CoverageNodePostprocessor(selector="topk", k=2)
    assert [n.node.node_id for n in topk.postprocess_nodes(scored, query_str=QUERY)] == [
        "n3",
        "n4",
    ]
    with pytest.raises(ConfigError, match="query"):
        topk.postprocess_nodes(scored)
