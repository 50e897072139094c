from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from covrag.embed import DEFAULT_MODEL
from covrag.errors import DataError, MissingExtraError
from covrag.retrieve import BM25Retriever, DenseRetriever, HybridRetriever, load_index
from covrag.retrieve.versions import resolve_index
from covrag.types import Passage

pytestmark = pytest.mark.model

CORPUS = (
    Passage("p1", "The feline rested on the rug all afternoon."),
    Passage("p2", "Stock markets fell sharply after the announcement."),
    Passage("p3", "Add two eggs and a cup of flour to the bowl."),
    Passage("p4", "The committee postponed the vote until next week."),
)
PARAPHRASE = "A cat was sleeping on the carpet."


@pytest.fixture(scope="module")
def dense() -> DenseRetriever:
    return DenseRetriever(faiss=False).index(CORPUS)


def test_dense_ranks_a_paraphrase_first(dense: DenseRetriever) -> None:
    assert BM25Retriever().index(CORPUS).search(PARAPHRASE, k=4) == ()  # no shared word
    results = dense.search(PARAPHRASE, k=2)
    assert [p.id for p in results][0] == "p1"
    assert 1.0 >= results[0].score > results[1].score  # type: ignore[operator]
    assert dense.search_many([PARAPHRASE, "baking recipe"], k=1)[1][0].id == "p3"


def test_dense_save_load_round_trip_gives_identical_results(
    dense: DenseRetriever, tmp_path: Path
) -> None:
    dense.save(tmp_path / "dense")
    manifest = json.loads((resolve_index(tmp_path / "dense") / "manifest.json").read_text())
    assert manifest["model"] == DEFAULT_MODEL and manifest["count"] == 4
    loaded = load_index(tmp_path / "dense", faiss=False)
    assert isinstance(loaded, DenseRetriever) and loaded.passages == CORPUS
    for query in (PARAPHRASE, "finance news", "politics"):
        expected = dense.search(query, k=4)
        assert loaded.search(query, k=4) == expected
        assert [p.score for p in loaded.search(query, k=4)] == [p.score for p in expected]
    with pytest.raises(DataError, match="built with model"):
        DenseRetriever.load(tmp_path / "dense", model="sentence-transformers/all-mpnet-base-v2")


def test_hybrid_cli_end_to_end(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from covrag.cli import main

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n" for p in CORPUS))
    out = tmp_path / "hybrid"
    assert main(["index", "--corpus", str(corpus), "--kind", "hybrid", "--out", str(out)]) == 0
    assert "indexed 4 passages" in capsys.readouterr().out
    assert isinstance(load_index(out), HybridRetriever)
    assert main(["search", "--index", str(out), PARAPHRASE, "--k", "1"]) == 0
    table = capsys.readouterr().out
    assert "p1" in table and "p2" not in table


@pytest.mark.skipif(importlib.util.find_spec("faiss") is not None, reason="faiss is installed")
def test_requiring_faiss_without_it_names_the_package() -> None:
    with pytest.raises(MissingExtraError, match="faiss-cpu"):
        DenseRetriever(faiss=True).index(CORPUS)
