from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path

import pytest

from covrag.errors import ConfigError
from covrag.retrieve import BM25Retriever, HybridRetriever, load_index, reciprocal_rank_fusion
from covrag.retrieve.base import Ranking
from covrag.types import Passage

A, B, C, D = (Passage(x, f"text {x}") for x in "abcd")


def test_rrf_matches_hand_computed_ranks() -> None:
    # ranks: a 1,-,2  b 2,1,-  c 3,-,1  d -,2,3
    rankings = [[A, B, C], [B, D], [C, A, D]]
    fused = reciprocal_rank_fusion(rankings, k=60)
    expected = {
        "a": Fraction(1, 61) + Fraction(1, 62),
        "b": Fraction(1, 62) + Fraction(1, 61),
        "c": Fraction(1, 63) + Fraction(1, 61),
        "d": Fraction(1, 62) + Fraction(1, 63),
    }
    assert [p.id for p in fused] == ["a", "b", "c", "d"]  # a and b tie: a was seen first
    for passage in fused:
        assert passage.score == pytest.approx(float(expected[passage.id]), rel=1e-15)
    assert fused[0].score == fused[1].score  # exactly equal: same ranks, fsum


def test_rrf_small_k_limit_and_dedup_within_a_ranking() -> None:
    fused = reciprocal_rank_fusion([[A, B, A], [C, B]], k=1, limit=2)
    # a: 1/2; b: 1/3 + 1/3 = 2/3; c: 1/2 (a's repeat at rank 3 is ignored)
    assert [(p.id, p.score) for p in fused] == [("b", pytest.approx(2 / 3)), ("a", 0.5)]
    assert reciprocal_rank_fusion([]) == ()
    with pytest.raises(ValueError, match="k must be > 0"):
        reciprocal_rank_fusion([[A]], k=0)


def test_rrf_keeps_the_first_record_of_a_passage() -> None:
    richer = Passage("a", "text a", tokens=3, metadata={"from": "second"})
    fused = reciprocal_rank_fusion([[A], [richer]])
    assert len(fused) == 1 and fused[0].tokens is None


class _Fixed:
    """A component retriever with a fixed ranking (the fusion is the unit under test)."""

    def __init__(self, ranking: Sequence[Passage]) -> None:
        self.ranking = tuple(ranking)

    def search(self, query: str, k: int) -> Ranking:
        return self.ranking[:k]

    def search_many(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return [self.search(q, k) for q in queries]


def test_hybrid_fuses_component_rankings() -> None:
    hybrid = HybridRetriever([_Fixed([A, B, C]), _Fixed([C, B, D])], rrf_k=60, depth=3)
    # c: 1/61 + 1/63 > b: 2/62 > a: 1/61 > d: 1/63
    assert [p.id for p in hybrid.search("q", k=3)] == ["c", "b", "a"]
    assert hybrid.search_many(["q", "r"], k=2) == [hybrid.search("q", k=2)] * 2
    with pytest.raises(ConfigError, match="index and save"):
        hybrid.index([A])


CORPUS = (
    Passage("p1", "Banning cars reduces air pollution in cities."),
    Passage("p2", "Shops lose customers when cars are banned."),
    Passage("p3", "Cars cars cars: traffic jams everywhere."),
    Passage("p4", "Cycling is healthy."),
)


def test_hybrid_save_load_round_trip(tmp_path: Path) -> None:
    hybrid = HybridRetriever([BM25Retriever(), BM25Retriever(k1=0.5, b=0.2)], depth=2)
    hybrid.index(CORPUS)
    hybrid.save(tmp_path / "hybrid")
    loaded = load_index(tmp_path / "hybrid")
    assert isinstance(loaded, HybridRetriever) and repr(loaded) == repr(hybrid)
    for query in ("cars", "air pollution", "shops customers"):
        assert loaded.search(query, k=3) == hybrid.search(query, k=3)
        assert [p.score for p in loaded.search(query, k=3)] == [
            p.score for p in hybrid.search(query, k=3)
        ]
