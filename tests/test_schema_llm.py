"""The reply models of every structured LLM step generate exactly the JSON schemas covrag sent
when they were written by hand (so llama.cpp grammars and response-cache keys do not change),
and validate replies with the same wording."""

from __future__ import annotations

from typing import Any

import pytest

from covrag.evaluation.answers import SUPPORT_LABELS
from covrag.schema.llm import parse_reply, reply_schema

# --- the hand-written schemas, as they were -------------------------------------------------


def _array(item: dict[str, Any], n: int) -> dict[str, Any]:
    return {"type": "array", "items": item, "minItems": n, "maxItems": n}


def old_items_schema(least: int, most: int) -> dict[str, Any]:
    """``{"items": [{"factor": ..., "question": ...}, ...]}`` with ``least``..``most`` items."""
    item = {
        "type": "object",
        "properties": {"factor": {"type": "string"}, "question": {"type": "string"}},
        "required": ["factor", "question"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": item, "minItems": least, "maxItems": most}
        },
        "required": ["items"],
        "additionalProperties": False,
    }


def old_tree_schema(depth: int, branching: int) -> dict[str, Any]:

    def level(d: int) -> dict[str, Any]:
        properties: dict[str, Any] = {"q": {"type": "string"}}
        required = ["q"]
        if d < depth:
            properties["children"] = _array(level(d + 1), branching)
            required.append("children")
        return {
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }

    return {
        "type": "object",
        "properties": {"tree": _array(level(1), branching)},
        "required": ["tree"],
        "additionalProperties": False,
    }


def _array(items: dict[str, Any], n: int) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": n, "maxItems": n}


def old_strings_schema(n: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"sub_queries": _array({"type": "string"}, n)},
        "required": ["sub_queries"],
        "additionalProperties": False,
    }


def old_outline_schema(ids: list[str], size: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "node_ids": {
                "type": "array",
                "items": {"type": "string", "enum": ids},
                "minItems": size,
                "maxItems": size,
            }
        },
        "required": ["node_ids"],
        "additionalProperties": False,
    }


def old_critique_schema(k: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "underused": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1, "maximum": k},
                "maxItems": k,
            },
            "missing": {"type": "string"},
        },
        "required": ["underused", "missing"],
        "additionalProperties": False,
    }


def old_nugget_schema(m: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "judgments": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "point": {"type": "integer", "minimum": 1, "maximum": m},
                        "label": {"type": "string", "enum": list(SUPPORT_LABELS)},
                    },
                    "required": ["point", "label"],
                    "additionalProperties": False,
                },
                "minItems": m,
                "maxItems": m,
            }
        },
        "required": ["judgments"],
        "additionalProperties": False,
    }


def old_sentence_schema(m: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "verdicts": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "sentence": {"type": "integer", "minimum": 1, "maximum": m},
                        "supported": {"type": "boolean"},
                    },
                    "required": ["sentence", "supported"],
                    "additionalProperties": False,
                },
                "minItems": m,
                "maxItems": m,
            }
        },
        "required": ["verdicts"],
        "additionalProperties": False,
    }


OLD_SPLIT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "base_query": {"type": "string"},
        "include": {"type": "array", "items": {"type": "string"}},
        "exclude": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["base_query", "include", "exclude"],
    "additionalProperties": False,
}

OLD_JUDGE: dict[str, Any] = {
    "type": "object",
    "properties": {
        "rationale": {"type": "string"},
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
    },
    "required": ["rationale", "score"],
    "additionalProperties": False,
}

OLD_NODE: dict[str, Any] = {
    "type": "object",
    "properties": {"node_id": {"type": "string", "enum": ["1", "2.1"]}},
    "required": ["node_id"],
    "additionalProperties": False,
}
OLD_QUESTION: dict[str, Any] = {
    "type": "object",
    "properties": {"question": {"type": "string"}},
    "required": ["question"],
    "additionalProperties": False,
}


# --- the models ---------------------------------------------------------------------------


@pytest.mark.parametrize(("least", "most"), [(1, 1), (2, 3), (3, 5), (6, 9)])
def test_decompose_items(least: int, most: int) -> None:
    from covrag.plan.decompose import items_reply

    assert reply_schema(items_reply(least, most)) == old_items_schema(least, most)


@pytest.mark.parametrize(("depth", "branching"), [(1, 1), (1, 3), (2, 2), (3, 3)])
def test_qtree_whole_tree_and_children(depth: int, branching: int) -> None:
    from covrag.plan.qtree import sub_queries_reply, tree_schema

    assert tree_schema(depth, branching) == old_tree_schema(depth, branching)
    assert reply_schema(sub_queries_reply(branching)) == old_strings_schema(branching)


@pytest.mark.parametrize("size", [1, 2, 4])
def test_outline_and_node(size: int) -> None:
    from covrag.plan.outline import node_reply, outline_reply

    ids = ("1", "1.1", "1.2", "2", "2.1")
    assert reply_schema(outline_reply(ids, size)) == old_outline_schema(list(ids), size)
    assert reply_schema(node_reply(("1", "2.1"))) == OLD_NODE
    assert reply_schema(node_reply(("3",)))["properties"]["node_id"]["enum"] == ["3"]


def test_split_judge_and_pool_question() -> None:
    from covrag.plan.conditioned import SplitReply
    from covrag.plan.judge import VerdictReply
    from covrag.plan.pool import QuestionReply

    assert reply_schema(SplitReply) == OLD_SPLIT
    assert reply_schema(VerdictReply) == OLD_JUDGE
    assert reply_schema(QuestionReply) == OLD_QUESTION


@pytest.mark.parametrize("m", [1, 3, 7])
def test_critique_and_answer_judgments(m: int) -> None:
    from covrag.evaluation.answers import citation_reply, nugget_reply
    from covrag.generate.critique import critique_reply

    assert reply_schema(critique_reply(m)) == old_critique_schema(m)
    assert reply_schema(nugget_reply(m)) == old_nugget_schema(m)
    assert reply_schema(citation_reply(m)) == old_sentence_schema(m)
    assert SUPPORT_LABELS == ("support", "partial", "not")


def test_cache_keys_do_not_change() -> None:
    """The response cache hashes the schema: a generated one keys like the hand-written one."""
    from covrag.llm.base import ChatParams, user
    from covrag.llm.cache import request_key
    from covrag.plan.qtree import tree_reply

    def key(schema: dict[str, Any]) -> str:
        return request_key("b", "m", [user("x")], schema, ChatParams())

    assert key(reply_schema(tree_reply(3, 3))) == key(old_tree_schema(3, 3))


def test_replies_are_validated_with_the_model() -> None:
    from covrag.evaluation.answers import nugget_reply
    from covrag.plan.qtree import tree_reply

    reply = nugget_reply(2)
    ok = parse_reply(reply, {"judgments": [{"point": 1, "label": "not"}] * 2})
    assert [j.label for j in ok.judgments] == ["not", "not"]
    cases = [
        ({"judgments": [{"point": 1, "label": "maybe"}] * 2}, "$.judgments[0].label should be one"),
        ({"judgments": [{"point": 3, "label": "not"}] * 2}, "$.judgments[0].point should be <= 2"),
        ({"judgments": [{"point": 1, "label": "not"}]}, "should have exactly 2 items, got 1"),
        ({"judgments": [{"point": True, "label": "not"}] * 2}, "point should be integer, got bool"),
        ({"judgments": [{"point": 1}] * 2}, "$.judgments[0] is missing 'label'"),
    ]
    for value, message in cases:
        with pytest.raises(ValueError) as info:
            parse_reply(reply, value)
        assert message in str(info.value)
    tree = {"tree": [{"q": "a", "children": [{"q": "b"}, {"q": "c", "x": 1}]}] * 2}
    unexpected = r"\$.tree\[0\].children\[1\] has unexpected keys \['x'\]"
    with pytest.raises(ValueError, match=unexpected):
        parse_reply(tree_reply(2, 2), tree)
