from __future__ import annotations

from covrag.plan.conditioned import C2Query
from covrag.plan.outline import Outline
from covrag.plan.search import draft, outline_search
from covrag.retrieve import BM25Retriever
from covrag.types import Passage

CORPUS = [
    Passage("d1", "Jaws plot: a great white shark attacks swimmers at Amity Island."),
    Passage("d2", "The shark attacks on Amity Island beaches terrify the town."),
    Passage("d3", "The mechanical shark, nicknamed Bruce, often broke down during filming."),
    Passage("d4", "Filming at sea off Martha's Vineyard ran far over schedule."),
    Passage("d5", "Critics' reviews praised the suspense of Jaws."),
    Passage("d6", "Jaws set box office records and created the summer blockbuster."),
    Passage("d7", "Spielberg directed Jaws in 1975, based on the novel by Benchley."),
    Passage("d8", "John Williams composed the famous two-note Jaws theme."),
]


def test_top_two_per_sub_query_then_the_request() -> None:
    retriever = BM25Retriever().index(CORPUS)
    query = C2Query.explicit("Describe the film Jaws", exclude=["reviews"])
    outline = Outline(("1.1", "2.1"), ("shark attacks on Amity", "mechanical shark filming"))
    found = outline_search(retriever, query, outline, per_query=2, total=5)
    assert len(found) == 5 and len({p.id for p in found}) == 5
    by = [p.metadata["found_by"] for p in found]
    assert by[:2] == ["shark attacks on Amity"] * 2
    assert by[2:4] == ["mechanical shark filming"] * 2
    assert by[4] == query.request
    assert {"d1", "d2"} == {p.id for p in found[:2]} and found[2].id == "d3"
    assert all(p.score is not None for p in found)


def test_draft_carries_the_constraints() -> None:
    query = C2Query.explicit("Describe the film Jaws", exclude=["reviews"])
    text = draft(query, Outline(("1", "2"), ("Plot", "Production")))
    assert "must leave out: reviews" in text and "1. Plot\n2. Production" in text
    assert "evidence only" in text
