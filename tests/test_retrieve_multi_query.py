from __future__ import annotations

from collections.abc import Sequence

from covrag.retrieve import BM25Retriever, MultiQueryRetriever, Retriever
from covrag.retrieve.base import Ranking
from covrag.types import Aspect, Passage

CORPUS = (
    Passage("p1", "Banning cars cuts air pollution in city centres."),
    Passage("p2", "Shops lose customers when cars are banned from the centre."),
    Passage("p3", "Air pollution causes asthma in children."),
    Passage("p4", "Shops and restaurants need deliveries by van."),
    Passage("p5", "Bikes are cheap."),
)


class _Recorder:
    """Records the queries it is asked (the multi-query logic is the unit under test)."""

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner
        self.asked: list[str] = []

    def search(self, query: str, k: int) -> Ranking:
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[Ranking]:
        self.asked.extend(queries)
        return self.inner.search_many(queries, k)


def test_pool_is_deduplicated_by_passage_id() -> None:
    bm25 = BM25Retriever().index(CORPUS)
    aspects = ["air pollution", "shops customers", "cars banned"]
    pool = MultiQueryRetriever(bm25).search("Should cities ban cars?", k=10, aspects=aspects)
    ids = [p.id for p in pool]
    assert len(ids) == len(set(ids))
    assert set(ids) == {"p1", "p2", "p3", "p4"}
    # p1 and p2 are found by three queries each; their fused scores lead the pool.
    assert set(ids[:2]) == {"p1", "p2"}
    single = {p.id for p in bm25.search("Should cities ban cars?", k=10)}
    assert single < set(ids)  # the aspects reach passages the question alone misses
    assert all(p.score is not None and p.score > 0 for p in pool)


def test_pool_size_is_capped() -> None:
    multi = MultiQueryRetriever(BM25Retriever().index(CORPUS), depth=5)
    pool = multi.search("cars", k=2, aspects=["air pollution", "shops"])
    assert len(pool) == 2


def test_queries_skip_excluded_aspects_and_repeats() -> None:
    recorder = _Recorder(BM25Retriever().index(CORPUS))
    multi = MultiQueryRetriever(recorder)
    aspects = [
        Aspect("a1", "air pollution"),
        "shops",
        Aspect("a2", "bikes", polarity="exclude"),
        Aspect("a3", "shops"),
    ]
    pool = multi.search("ban cars?", k=10, aspects=aspects)
    assert recorder.asked == ["ban cars?", "air pollution", "shops"]
    assert "p5" not in {p.id for p in pool}  # the excluded aspect was not searched
    assert MultiQueryRetriever(recorder, include_question=False).queries("q", ["x"]) == ("x",)
    assert MultiQueryRetriever(recorder, include_question=False).queries("q") == ("q",)


def test_search_many_without_aspects_equals_a_fused_single_search() -> None:
    bm25 = BM25Retriever().index(CORPUS)
    multi = MultiQueryRetriever(bm25)
    (pool,) = multi.search_many(["air pollution"], k=3)
    assert [p.id for p in pool] == [p.id for p in bm25.search("air pollution", k=3)]
