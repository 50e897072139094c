from __future__ import annotations

import json
from typing import Any

import pytest

from covrag.errors import StructuredOutputError
from covrag.plan.qtree import QTree, QTreeBuilder, QTreeNode, check_tree, tree_schema
from llm_support import ScriptedLLM, check_failure, tiny_llm


def tree_json(texts: list[list[str]]) -> str:
    """Two levels: texts[i][0] is level-1 node i, the rest its children."""
    return json.dumps({"tree": [{"q": t[0], "children": [{"q": c} for c in t[1:]]} for t in texts]})


GOOD = [
    ["Air quality effects of cars", "Nitrogen dioxide near roads", "Particulate matter levels"],
    ["Economic impact on businesses", "Retail footfall after bans", "Delivery logistics costs"],
]


def test_tree_ids_levels_and_neighbours() -> None:
    value: Any = json.loads(tree_json(GOOD))
    tree = check_tree("q", value, depth=2, branching=2)
    assert tree.ids == ("1", "1.1", "1.2", "2", "2.1", "2.2")
    assert tree.level_counts() == {1: 2, 2: 4}
    assert tree.children(None) == ("1", "2") and tree.children("2") == ("2.1", "2.2")
    assert tree.node("2.1").parent_id == "2" and tree.node("2.1").level == 2
    assert set(tree.adjacent("1.1")) == {"1", "1.2"}
    assert set(tree.adjacent("1")) == {"1.1", "1.2", "2"}
    assert tree.render().splitlines()[1] == "  1.1 Nitrogen dioxide near roads"


def test_schema_fixes_the_counts_per_level() -> None:
    schema = tree_schema(3, 3)
    top = schema["properties"]["tree"]
    assert top["minItems"] == top["maxItems"] == 3
    level2 = top["items"]["properties"]["children"]
    level3 = level2["items"]["properties"]["children"]
    assert level3["minItems"] == 3 and "children" not in level3["items"]["properties"]
    assert QTreeBuilder(ScriptedLLM([])).size == 39


def test_wrong_counts_and_overlap_are_retried() -> None:
    short = json.dumps(
        {"tree": [{"q": "Air quality effects", "children": [{"q": "NO2 near roads"}]}]}
    )
    overlap = [GOOD[0], ["Air quality effects of cars", "Retail footfall", "Delivery costs"]]
    llm = ScriptedLLM([short, tree_json(overlap), tree_json(GOOD)])
    tree = QTreeBuilder(llm, depth=2, branching=2, strategy="whole").build(
        "Should cities ban cars?"
    )
    assert len(tree) == 6 and tree.node("2.2").text == "Delivery logistics costs"
    assert "should have exactly 2 items" in llm.requests[1][0][-1].content
    assert "sub-queries overlap (1 and 2)" in llm.requests[2][0][-1].content


def test_gives_up_with_what_came_back() -> None:
    one_word = [["Air", "NO2 levels here", "Particulates near schools"], GOOD[1]]
    llm = ScriptedLLM([tree_json(one_word)] * 2)
    with pytest.raises(StructuredOutputError, match=r"nodes \['1'\] are empty or one word"):
        QTreeBuilder(llm, depth=2, branching=2, retries=1, strategy="whole").build("q")


def test_duplicate_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="unique"):
        QTree("q", (QTreeNode("1", "a b"), QTreeNode("1", "c d")))


@pytest.mark.slow
def test_tiny_model_writes_a_checked_tree() -> None:
    llm = tiny_llm()
    builder = QTreeBuilder(llm, depth=2, branching=2, retries=2)
    try:
        tree = builder.build("How do electric cars affect cities?")
    except StructuredOutputError as exc:
        check_failure(exc, 3)
        return
    counts = tree.level_counts()
    assert counts[1] == 2 and counts.get(2, 0) <= 4
    # a node short of children (the model only repeated itself) is always noted
    assert (counts.get(2, 0) < 4) == bool(tree.notes)
    assert all(len(n.text.split()) >= 2 for n in tree)


def test_overlap_reads_content_words() -> None:
    from covrag.plan.qtree import word_overlap

    a = "Who is the protagonist of Jaws and what is their role in the story?"
    b = "Who is the antagonist of Jaws and what is their role in the story?"
    assert word_overlap(a, b) < 0.8  # templated but different questions
    assert word_overlap("What is the plot of Jaws?", "the plot of Jaws") == 1.0


def test_levels_strategy_keeps_new_children_and_asks_only_for_the_missing_ones() -> None:
    def subs(*texts: str) -> str:
        return json.dumps({"sub_queries": list(texts)})

    llm = ScriptedLLM(
        [
            subs("Air quality effects of cars", "Economic impact on businesses"),
            subs("Nitrogen dioxide near roads", "Particulate matter levels"),
            subs("Economic impact on businesses", "Delivery logistics costs"),  # repeats node 2
            subs("Retail footfall after bans"),
        ]
    )
    tree = QTreeBuilder(llm, depth=2, branching=2).build("Should cities ban cars?")
    assert tree.ids == ("1", "1.1", "1.2", "2", "2.1", "2.2")
    assert tree.node("2.1").text == "Delivery logistics costs"
    assert tree.node("2.2").text == "Retail footfall after bans"
    assert llm.usage.calls == 4 and llm.usage.retries == 0
    third = llm.requests[2][0][-1].content
    assert "- Nitrogen dioxide near roads" in third and "'Economic impact on businesses'" in third
    top_up = llm.requests[3][0][-1].content
    assert "Already chosen:\n- Delivery logistics costs" in top_up and "Write 1 more" in top_up
    schema = llm.requests[3][1]
    assert schema is not None and schema["properties"]["sub_queries"]["maxItems"] == 1


def test_levels_strategy_shows_the_model_a_reply_with_nothing_new_and_gives_up() -> None:
    def subs(*texts: str) -> str:
        return json.dumps({"sub_queries": list(texts)})

    repeat = subs("Air quality effects of cars", "Air quality effects of cars")
    llm = ScriptedLLM([subs("Air quality effects of cars", "Economic impact on businesses")])
    llm.replies += [repeat] * 3
    builder = QTreeBuilder(llm, depth=2, branching=2, retries=2, short_ok=False)
    with pytest.raises(StructuredOutputError, match="3 attempts") as info:
        builder.build("Should cities ban cars?")
    assert "overlaps 'Air quality effects of cars'" in str(info.value)
    assert "every sub-query must ask something new" in llm.requests[2][0][-1].content


def test_a_node_whose_children_stay_short_keeps_those_found_unless_strict() -> None:
    def subs(*texts: str) -> str:
        return json.dumps({"sub_queries": list(texts)})

    def script() -> ScriptedLLM:
        llm = ScriptedLLM(
            [
                subs("Air quality effects of cars", "Economic impact on businesses"),
                subs("Nitrogen dioxide near roads", "Particulate matter levels"),
                subs("Delivery logistics costs", "Air quality effects of cars"),  # one new
            ]
        )
        llm.replies += [subs("Particulate matter levels")] * 3  # the top-up only repeats
        return llm

    tree = QTreeBuilder(script(), depth=2, branching=2).build("Should cities ban cars?")
    assert tree.ids == ("1", "1.1", "1.2", "2", "2.1")
    assert len(tree.notes) == 1 and tree.notes[0].startswith("node 2 has 1 of 2 children")
    assert "overlaps 'Particulate matter levels'" in tree.notes[0]
    with pytest.raises(StructuredOutputError, match="QTree children of 2"):
        QTreeBuilder(script(), depth=2, branching=2, short_ok=False).build(
            "Should cities ban cars?"
        )
    # a node with no new child at all becomes a leaf
    llm = ScriptedLLM([subs("Air quality effects of cars", "Economic impact on businesses")])
    llm.replies += [subs("Delivery logistics costs", "Retail footfall after bans")]
    llm.replies += [subs("Economic impact on businesses", "Air quality effects of cars")] * 3
    tree = QTreeBuilder(llm, depth=2, branching=2).build("Should cities ban cars?")
    assert tree.ids == ("1", "1.1", "1.2", "2")
    assert tree.notes[0].startswith("node 2 has 0 of 2 children")
    # the top level is never short: without it there is no tree to speak of
    llm = ScriptedLLM([subs("Air quality effects of cars", "Air quality effects of cars")])
    llm.replies += [subs("Air quality effects of cars")] * 3
    with pytest.raises(StructuredOutputError, match="children of the root"):
        QTreeBuilder(llm, depth=2, branching=2).build("Should cities ban cars?")
