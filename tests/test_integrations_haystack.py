from __future__ import annotations

import os

import pytest

from integration_support import ASPECTS, QUERY, TEXTS

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
pytest.importorskip("haystack")

from haystack import Document, Pipeline  # noqa: E402
from haystack.components.retrievers.in_memory import InMemoryBM25Retriever  # noqa: E402
from haystack.document_stores.in_memory import InMemoryDocumentStore  # noqa: E402

from covrag.integrations.haystack import CoverageRanker  # noqa: E402


def store() -> InMemoryDocumentStore:
    document_store = InMemoryDocumentStore()
    document_store.write_documents(
        [
            Document(content=t, meta={"source": f"doc{i}.txt"}, id=f"d{i}")
            for i, t in enumerate(TEXTS)
        ]
    )
    return document_store


def pipeline(ranker: CoverageRanker) -> Pipeline:
    pipe = Pipeline()
    pipe.add_component("retriever", InMemoryBM25Retriever(store(), top_k=len(TEXTS)))
    pipe.add_component("coverage", ranker)
    pipe.connect("retriever.documents", "coverage.documents")
    return pipe


def test_bm25_pipeline_feeds_the_ranker_and_it_covers_every_aspect() -> None:
    # The default estimator, covrag's shipped cross-encoder, on aspects it scores confidently;
    # the DES rule, whose ties in coverage gain go to the retriever's score.
    aspects = [
        "Does it reduce pollution?",
        "Can emergency vehicles and disabled people get access?",
    ]
    result = pipeline(CoverageRanker(selector="greedy-coverage", k=3)).run(
        {
            "retriever": {"query": "cars pollution access"},
            "coverage": {"query": QUERY, "aspects": aspects},
        },
        include_outputs_from={"retriever"},
    )
    retrieved = {d.id: d.score for d in result["retriever"]["documents"]}
    docs = result["coverage"]["documents"]
    assert len(docs) == 3
    # Ties in coverage gain go to the higher BM25 score: the best-scored pollution document first.
    assert docs[0].id == max(["d0", "d1", "d2"], key=lambda i: retrieved[i])
    assert docs[1].id == "d4"
    newly = [d.meta["covrag"]["newly_covered"] for d in docs]
    assert sorted(a for n in newly for a in n) == sorted(aspects)
    assert result["coverage"]["uncovered_aspects"] == []
    for doc in docs:
        assert doc.score is not None  # BM25 score kept
        assert doc.content in TEXTS and doc.meta["source"] == f"{doc.id.replace('d', 'doc')}.txt"


def test_aspects_given_at_construction_and_the_pipeline_round_trips() -> None:
    ranker = CoverageRanker(
        selector="greedy-coverage", coverage="cross-encoder", aspects=ASPECTS, k=2
    )
    pipe = pipeline(ranker)
    data = pipe.to_dict()
    params = data["components"]["coverage"]["init_parameters"]
    assert params == {
        "selector": "greedy-coverage",
        "coverage": "cross-encoder",
        "aspects": ASPECTS,
        "k": 2,
        "max_tokens": None,
        "relevance": "auto",
    }
    # Haystack 3 refuses to load classes from modules not on its allowlist (2.x ignores the
    # keyword): users name covrag's module the same way.
    again = Pipeline.from_dict(data, allowed_modules=["covrag.integrations.haystack"])
    coverage = again.get_component("coverage")
    assert isinstance(coverage, CoverageRanker) and coverage.aspects == ASPECTS


def test_token_budget_and_uncovered_aspects_as_an_output_socket() -> None:
    docs = [Document(content=t, score=s) for t, s in zip(TEXTS, [6, 5, 4, 3, 2, 1], strict=True)]
    ranker = CoverageRanker(selector="topk", k=None, max_tokens=30)
    out = ranker.run(documents=docs, query=QUERY, aspects=["ferries"])
    assert sum(d.meta["covrag"]["tokens"] for d in out["documents"]) <= 30
    assert [d.content for d in out["documents"]] == TEXTS[: len(out["documents"])]
    assert out["uncovered_aspects"] == ["ferries"]
    assert all("covrag" not in d.meta for d in docs)
