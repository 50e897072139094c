from __future__ import annotations

import pytest

from integration_support import ASPECTS, QUERY, TEXTS, KeywordCoverage

pytest.importorskip("langchain_core")

from langchain_classic.retrievers.contextual_compression import (  # noqa: E402
    ContextualCompressionRetriever,
)
from langchain_core.callbacks import CallbackManagerForRetrieverRun  # noqa: E402
from langchain_core.documents import Document  # noqa: E402
from langchain_core.prompts import PromptTemplate  # noqa: E402
from langchain_core.retrievers import BaseRetriever  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402

from covrag.integrations.langchain import CoverageCompressor  # noqa: E402


class ListRetriever(BaseRetriever):
    """Returns every stored document whose text shares a word with the query, in stored order."""

    documents: list[Document]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        words = {w.strip("?.,:;").lower() for w in query.split()}
        return [
            d
            for d in self.documents
            if words & {w.strip("?.,:;").lower() for w in d.page_content.split()}
        ]


def stored() -> list[Document]:
    return [
        Document(page_content=t, metadata={"source": f"doc{i}.txt", "page": i}, id=f"id{i}")
        for i, t in enumerate(TEXTS)
    ]


def test_compression_retriever_returns_one_document_per_aspect_with_its_metadata() -> None:
    compressor = CoverageCompressor(coverage=KeywordCoverage(), aspects=ASPECTS, k=3)
    retriever = ContextualCompressionRetriever(
        base_compressor=compressor, base_retriever=ListRetriever(documents=stored())
    )
    docs = retriever.invoke("cars cost pollution access")
    assert [d.id for d in docs] == ["id0", "id3", "id4"]
    originals = {d.id: d for d in stored()}
    for doc in docs:
        original = originals[doc.id]
        assert doc.page_content == original.page_content  # never truncated
        assert {k: v for k, v in doc.metadata.items() if k != "covrag"} == original.metadata
    assert [d.metadata["covrag"]["newly_covered"] for d in docs] == [
        ["pollution"],
        ["business"],
        ["access"],
    ]
    assert docs[0].metadata["covrag"]["rank"] == 1 and docs[0].metadata["covrag"]["tokens"] > 0


def test_compressor_in_an_lcel_chain_builds_the_prompt_context() -> None:
    compressor = CoverageCompressor(coverage=KeywordCoverage(), aspects=ASPECTS, k=3)
    retriever = ListRetriever(documents=stored())
    prompt = PromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")

    def select(question: str) -> str:
        docs = compressor.compress_documents(retriever.invoke(question), question)
        return "\n".join(d.page_content for d in docs)

    chain = {"context": RunnableLambda(select), "question": RunnableLambda(lambda q: q)} | prompt
    text = chain.invoke("Should cars be banned: pollution, access, cost?").to_string()
    assert text.count("\n") == 5  # 3 context lines, a blank line, the question
    assert TEXTS[1] not in text and TEXTS[3] in text and TEXTS[4] in text


def test_input_documents_are_not_modified_and_scores_can_come_from_metadata() -> None:
    docs = [
        Document(page_content=t, metadata={"relevance_score": s})
        for t, s in zip(TEXTS, [0.1, 0.2, 0.3, 0.9, 0.5, 0.4], strict=True)
    ]
    compressor = CoverageCompressor(selector="topk", k=2, score_key="relevance_score")
    out = compressor.compress_documents(docs, QUERY)
    assert [d.page_content for d in out] == [TEXTS[3], TEXTS[4]]
    assert all("covrag" not in d.metadata for d in docs)
    assert out[0].metadata["covrag"]["coverage"] is None  # topk estimates no coverage
