"""Multi-query retrieval: one search per aspect or sub-question, fused into one candidate pool.

A single query finds passages about the question's dominant aspect; searching with each aspect as
well reaches passages for the others (the "retrieve" step of DES and of QTree outlines). The
rankings are fused with reciprocal rank fusion, which deduplicates by passage id.
"""

from __future__ import annotations

from collections.abc import Sequence

from covrag.retrieve.base import Ranking, Retriever, check_k
from covrag.retrieve.fusion import RRF_K, reciprocal_rank_fusion
from covrag.types import Aspect


class MultiQueryRetriever:
    """Searches once per query (the question and each aspect) and fuses the rankings with RRF.

    The pool is deduplicated by passage id: a passage found by several queries appears once,
    with the sum of its reciprocal ranks as ``score`` (see :func:`reciprocal_rank_fusion`), so
    passages that answer several aspects rise. Aspects of polarity ``exclude`` are not searched
    (they name what to avoid), and a query text given twice is searched once.

    Args:
        retriever: The retriever that runs each query.
        depth: Passages retrieved per query; None for the pool size ``k`` of each search.
        rrf_k: The RRF constant.
        include_question: Also search with the question itself (it is searched anyway when
            there are no aspects).

    Example:
        >>> from covrag.retrieve import BM25Retriever
        >>> from covrag.types import Passage
        >>> corpus = [Passage("p1", "Car bans cut air pollution."),
        ...           Passage("p2", "Shops lose customers when cars are banned."),
        ...           Passage("p3", "Bikes are cheap.")]
        >>> pool = MultiQueryRetriever(BM25Retriever().index(corpus)).search(
        ...     "Should cities ban cars?", k=10, aspects=["pollution", "shops and customers"])
        >>> sorted(p.id for p in pool)
        ['p1', 'p2']
    """

    def __init__(
        self,
        retriever: Retriever,
        *,
        depth: int | None = None,
        rrf_k: int = RRF_K,
        include_question: bool = True,
    ) -> None:
        if depth is not None:
            check_k(depth)
        self.retriever = retriever
        self.depth = depth
        self.rrf_k = rrf_k
        self.include_question = include_question

    def __repr__(self) -> str:
        return (
            f"MultiQueryRetriever({self.retriever!r}, depth={self.depth!r}, "
            f"rrf_k={self.rrf_k!r}, include_question={self.include_question!r})"
        )

    def queries(self, question: str, aspects: Sequence[str | Aspect] = ()) -> tuple[str, ...]:
        """The query texts searched for ``question`` and ``aspects``, in search order."""
        texts = [
            a if isinstance(a, str) else a.text
            for a in aspects
            if isinstance(a, str) or a.polarity != "exclude"
        ]
        if self.include_question or not texts:
            texts.insert(0, question)
        return tuple(dict.fromkeys(t for t in texts if t.strip()))

    def search(self, query: str, k: int, *, aspects: Sequence[str | Aspect] = ()) -> Ranking:
        """A pool of up to ``k`` passages for ``query`` and its ``aspects``, best fused first."""
        check_k(k)
        texts = self.queries(query, aspects)
        if not texts:
            return ()
        rankings = self.retriever.search_many(texts, self.depth or k)
        return reciprocal_rank_fusion(rankings, self.rrf_k, limit=k)

    def search_many(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """:meth:`search` for each query, without aspects."""
        return [self.search(query, k) for query in queries]
