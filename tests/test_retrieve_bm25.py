from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from covrag.errors import DataError
from covrag.retrieve import BM25Retriever, NotIndexedError, Retriever, load_index
from covrag.retrieve.base import top_k
from covrag.types import Passage, Topic

CORPUS = (
    Passage("p1", "Banning cars in city centres reduces air pollution.", metadata={"src": "a"}),
    Passage("p2", "Shops in pedestrian zones often lose customers who drive."),
    Passage("p3", "Public transport must improve before any ban."),
    Passage("p4", "Cycling is healthy and cheap.", tokens=5),
    Passage("p5", "Electric cars still produce particulate pollution from tyres."),
)


@pytest.fixture(scope="module")
def bm25() -> BM25Retriever:
    return BM25Retriever().index(CORPUS)


def test_exact_term_match_ranks_first(bm25: BM25Retriever) -> None:
    results = bm25.search("pedestrian zones", k=3)
    assert [p.id for p in results] == ["p2"]  # no other passage shares a term
    assert results[0].score is not None and results[0].score > 0
    assert isinstance(bm25, Retriever)


def test_scores_descend_and_records_keep_their_fields(bm25: BM25Retriever) -> None:
    results = bm25.search("cars pollution", k=10)
    assert [p.id for p in results][:2] in (["p1", "p5"], ["p5", "p1"])
    scores = [p.score for p in results]
    assert scores == sorted(scores, reverse=True)  # type: ignore[type-var]
    first = next(p for p in results if p.id == "p1")
    assert first.text == CORPUS[0].text and first.metadata == {"src": "a"}
    # The results drop straight into a Topic as its pool.
    Topic("q", "cars?", passages=results, aspects=())


def test_stopwords_and_case_are_ignored(bm25: BM25Retriever) -> None:
    assert bm25.search("the AND of", k=5) == ()
    assert [p.id for p in bm25.search("CYCLING", k=5)] == ["p4"]


def test_search_many_matches_search(bm25: BM25Retriever) -> None:
    queries = ["cars", "shops customers", "nothing-matches-this"]
    assert bm25.search_many(queries, k=3) == [bm25.search(q, k=3) for q in queries]
    assert bm25.search_many([], k=3) == []


def test_k_larger_than_corpus_and_bad_k(bm25: BM25Retriever) -> None:
    # Only p1, p3 and p5 share a term with the query: non-matching passages are not returned.
    assert {p.id for p in bm25.search("cars pollution ban transport", k=100)} == {"p1", "p3", "p5"}
    with pytest.raises(ValueError, match="positive integer"):
        bm25.search("cars", k=0)


def test_errors_before_indexing_and_on_bad_corpora(tmp_path: Path) -> None:
    with pytest.raises(NotIndexedError, match="index"):
        BM25Retriever().search("cars", k=1)
    with pytest.raises(NotIndexedError):
        BM25Retriever().save(tmp_path / "idx")
    assert not (tmp_path / "idx").exists()
    with pytest.raises(DataError, match="empty corpus"):
        BM25Retriever().index([])
    with pytest.raises(DataError, match="duplicate passage id 'p1'"):
        BM25Retriever().index([CORPUS[0], CORPUS[0]])
    with pytest.raises(DataError, match="indexable"):
        BM25Retriever().index([Passage("x", "the a of")])


def test_save_load_round_trip_gives_identical_results(bm25: BM25Retriever, tmp_path: Path) -> None:
    bm25.save(tmp_path / "idx")
    loaded = BM25Retriever.load(tmp_path / "idx")
    assert loaded.passages == CORPUS
    assert loaded.passages[0].metadata == {"src": "a"} and loaded.passages[3].tokens == 5
    for query in ("cars pollution", "shops", "cycling healthy", "transport ban"):
        assert loaded.search(query, k=5) == bm25.search(query, k=5)
        assert [p.score for p in loaded.search(query, k=5)] == [
            p.score for p in bm25.search(query, k=5)
        ]
    again = load_index(tmp_path / "idx")
    assert isinstance(again, BM25Retriever) and repr(again) == repr(bm25)


def test_top_k_breaks_ties_by_index() -> None:
    scores = np.array([1.0, 3.0, 3.0, 2.0, 3.0, 0.5])
    assert top_k(scores, 2).tolist() == [1, 2]
    assert top_k(scores, 4).tolist() == [1, 2, 4, 3]
    assert top_k(scores, 10).tolist() == [1, 2, 4, 3, 0, 5]
    assert top_k(np.zeros(0), 3).tolist() == []


def test_options_and_dotted_names_are_matched_as_written(tmp_path: Path) -> None:
    manual = (
        Passage("list", "-l, --list-only (FTP) When listing an FTP directory, list names only."),
        Passage("loc", "-L, --location If the server reports that the page has moved, redo it."),
        Passage("dump", "json.dump(obj, fp) serializes obj as a JSON formatted stream to fp."),
        Passage("dumps", "json.dumps(obj) serializes obj to a JSON formatted str (a dump)."),
    )  # fmt: skip
    bm25 = BM25Retriever().index(manual)
    # the word tokenizer drops one-letter words: without identifiers "-L" finds nothing
    assert not BM25Retriever(identifiers=False).index(manual).search("-L", k=4)
    assert [p.id for p in bm25.search("-L", k=4)] == ["loc"]
    assert [p.id for p in bm25.search("-l", k=4)] == ["list"]
    assert bm25.search("use json.dump to write a file", k=4)[0].id == "dump"
    # the option is recorded with the index; an index saved without it is searched as built
    bm25.save(tmp_path / "idx")
    assert BM25Retriever.load(tmp_path / "idx").search("-L", k=4)[0].id == "loc"
    BM25Retriever(identifiers=False).index(manual).save(tmp_path / "old")
    assert BM25Retriever.load(tmp_path / "old").identifiers is False
