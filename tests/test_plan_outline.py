from __future__ import annotations

import json

import pytest

from covrag.errors import ConfigError, StructuredOutputError
from covrag.plan.conditioned import C2Query
from covrag.plan.judge import OutlineJudge
from covrag.plan.outline import Outline, OutlineExtractor, check_outline, connected, random_outline
from covrag.plan.qtree import QTree, QTreeNode
from llm_support import ScriptedLLM, check_failure, tiny_llm

TREE = QTree(
    "Describe the film Jaws",
    tuple(
        QTreeNode(i, t)
        for i, t in [
            ("1", "Plot of Jaws"),
            ("1.1", "The shark attacks on Amity"),
            ("1.2", "The hunt for the shark"),
            ("2", "Production of Jaws"),
            ("2.1", "The mechanical shark"),
            ("2.2", "Filming at sea"),
            ("3", "Reception of Jaws"),
            ("3.1", "Critics' reviews"),
            ("3.2", "Box office records"),
        ]
    ),
)
QUERY = C2Query.explicit("Describe the film Jaws", exclude=["reviews"])


def ids(*node_ids: str) -> str:
    return json.dumps({"node_ids": list(node_ids)})


def test_connected_through_parents_children_and_siblings() -> None:
    assert connected(TREE, ["1", "1.1", "1.2", "2"])  # siblings at the top are neighbours
    assert connected(TREE, ["2", "2.1", "2.2"])
    assert not connected(TREE, ["1.1", "2.1"])
    assert not connected(TREE, ["1.1", "3.2", "3"])
    assert not connected(TREE, [])


@pytest.mark.parametrize(
    ("chosen", "message"),
    [
        (["1", "9.9", "2", "3"], "not node ids"),
        (["1", "1", "2", "3"], "listed twice"),
        (["1", "2", "3"], "exactly 4"),
        (["1.1", "2.1", "3.1", "3.2"], "not connected"),
        (["1", "1.1", "1.2", "2"], "repeats an earlier outline"),
    ],
)
def test_outline_checks(chosen: list[str], message: str) -> None:
    earlier = [Outline(("2", "1.2", "1.1", "1"), ("a", "b", "c", "d"))]
    with pytest.raises(ValueError, match=message):
        check_outline(TREE, chosen, 4, earlier)


def test_candidates_are_extracted_sequentially_and_checked() -> None:
    llm = ScriptedLLM(
        [
            ids("1", "1.1", "1.2", "2"),
            ids("1", "1.1", "2", "1.2"),  # the same set again
            ids("1.1", "2.1", "3.1", "3.2"),  # not connected
            ids("2", "2.1", "2.2", "1"),
        ]
    )
    extractor = OutlineExtractor(llm, size=4, candidates=2, strategy="whole")
    outlines = extractor.extract(TREE, QUERY)
    assert [o.node_ids for o in outlines] == [("1", "1.1", "1.2", "2"), ("2", "2.1", "2.2", "1")]
    assert outlines[1].texts[1] == "The mechanical shark"
    second_prompt = llm.requests[1][0][-1].content
    assert "already chosen" in second_prompt and "- 1, 1.1, 1.2, 2" in second_prompt
    assert "must leave out: reviews" in second_prompt
    assert "repeats an earlier outline" in llm.requests[2][0][-1].content
    assert "not connected" in llm.requests[3][0][-1].content
    schema = llm.requests[0][1]
    assert schema is not None
    assert schema["properties"]["node_ids"]["items"]["enum"] == list(TREE.ids)


def test_extraction_gives_up_after_retries() -> None:
    llm = ScriptedLLM([ids("1.1", "2.1", "3.1", "3.2")] * 2)
    with pytest.raises(StructuredOutputError, match="outline: the LLM gave no valid answer"):
        OutlineExtractor(llm, candidates=1, retries=1, strategy="whole").extract(TREE, QUERY)


def test_random_baseline_is_connected_and_seeded() -> None:
    for seed in range(20):
        outline = random_outline(TREE, 4, seed=seed)
        assert len(set(outline.node_ids)) == 4 and connected(TREE, outline.node_ids)
        assert outline.source == "random"
    assert random_outline(TREE, 4, seed=3) == random_outline(TREE, 4, seed=3)
    assert len({random_outline(TREE, 4, seed=s).node_ids for s in range(20)}) > 3
    with pytest.raises(ConfigError):
        random_outline(TREE, 10)


def test_judge_scores_with_a_rationale_and_retries() -> None:
    llm = ScriptedLLM(
        [
            json.dumps({"rationale": "ok", "score": 4}),
            json.dumps({"rationale": "Covers plot and production, skips reviews.", "score": 5}),
        ]
    )
    outline = Outline(("1", "2"), ("Plot of Jaws", "Production of Jaws"))
    judged = OutlineJudge(llm).judge(QUERY, outline)
    assert judged.score == 5 and judged.rationale.startswith("Covers plot")
    assert judged.node_ids == outline.node_ids
    prompt = llm.requests[0][0][-1].content
    assert "1 - ignores the instruction" in prompt and "must leave out: reviews" in prompt


@pytest.mark.slow
def test_tiny_model_extracts_and_judges_outlines() -> None:
    llm = tiny_llm()
    judged = OutlineJudge(llm).judge(QUERY, random_outline(TREE, 2, seed=1))
    assert judged.score in (1, 2, 3, 4, 5) and len(judged.rationale.split()) >= 3
    try:
        outlines = OutlineExtractor(llm, size=2, candidates=2, retries=2).extract(TREE, QUERY)
    except StructuredOutputError as exc:
        check_failure(exc, 3)
        assert "not connected" in str(exc) or "repeats an earlier outline" in str(exc)
        return
    assert len(outlines) == 2
    for outline in outlines:
        assert len(set(outline.node_ids)) == 2 and connected(TREE, outline.node_ids)
    assert set(outlines[0].node_ids) != set(outlines[1].node_ids)


def test_nodes_strategy_only_offers_adjacent_nodes() -> None:
    def node(node_id: str) -> str:
        return json.dumps({"node_id": node_id})

    llm = ScriptedLLM([node("2"), node("2.1"), node("9"), node("2.2"), node("1")])
    outline = OutlineExtractor(llm, size=4, candidates=1).extract(TREE, QUERY)[0]
    assert outline.node_ids == ("2", "2.1", "2.2", "1")
    second_schema = llm.requests[1][1]
    assert second_schema is not None
    # after "2": its children and its siblings, in tree order
    assert second_schema["properties"]["node_id"]["enum"] == ["1", "2.1", "2.2", "3"]
    assert "should be one of ['1', '2.2', '3'], got '9'" in llm.requests[3][0][-1].content
    assert "- 2.1 The mechanical shark" in llm.requests[3][0][-1].content
    earlier = [Outline(("2", "2.1", "2.2", "1"), ("a", "b", "c", "d"))]
    llm = ScriptedLLM([node("2"), node("2.1"), node("2.2"), node("3")])
    again = OutlineExtractor(llm, size=4, candidates=1)._by_nodes(TREE, QUERY, earlier)
    assert again.node_ids == ("2", "2.1", "2.2", "3")
    last_enum = llm.requests[3][1]["properties"]["node_id"]["enum"]  # type: ignore[index]
    assert "1" not in last_enum  # it would repeat the earlier outline


def test_nodes_strategy_never_offers_a_dead_end() -> None:
    # 1.1, 1.2, 1.3 are siblings; once all three are chosen only their parent is adjacent, and
    # {1, 1.1, 1.2, 1.3} is an earlier outline: the third sibling must not be offered.
    tree = QTree(
        "q",
        tuple(
            QTreeNode(i, f"node {i}") for i in ("1", "1.1", "1.2", "1.3", "2", "2.1", "2.2", "2.3")
        ),
    )
    earlier = [Outline(("1", "1.1", "1.2", "1.3"), ("a", "b", "c", "d"))]

    def node(node_id: str) -> str:
        return json.dumps({"node_id": node_id})

    llm = ScriptedLLM([node("1.1"), node("1.2"), node("1"), node("2")])
    outline = OutlineExtractor(llm, size=4, candidates=1)._by_nodes(tree, QUERY, earlier)
    assert outline.node_ids == ("1.1", "1.2", "1", "2")
    third = llm.requests[2][1]["properties"]["node_id"]["enum"]  # type: ignore[index]
    assert third == ["1"]  # 1.3 would leave only the parent, which repeats the earlier outline
    last = llm.requests[3][1]["properties"]["node_id"]["enum"]  # type: ignore[index]
    assert "1.3" not in last and "2" in last
