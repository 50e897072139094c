from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from pydantic import Field

from covrag.errors import StructuredOutputError
from covrag.llm import chat_json, extract_json, user
from covrag.schema.llm import Reply, one_of, parse_reply, reply_schema, sized
from llm_support import ScriptedLLM


class Listing(Reply):
    items: sized(Annotated[str, Field(min_length=3)], 2, 2)
    score: one_of(int, [1, 2, 3, 4, 5]) = None


# The JSON schema the model generates (what the backend is sent).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "items": {
            "type": "array",
            "items": {"type": "string", "minLength": 3},
            "minItems": 2,
            "maxItems": 2,
        },
        "score": {"type": "integer", "enum": [1, 2, 3, 4, 5]},
    },
    "required": ["items"],
    "additionalProperties": False,
}


def test_extract_json_finds_fenced_and_embedded_values() -> None:
    assert extract_json('{"a": 1}') == {"a": 1}
    assert extract_json('Sure!\n```json\n{"a": [1, 2]}\n```') == {"a": [1, 2]}
    assert extract_json('Here: {"a": 2} and more text') == {"a": 2}
    assert extract_json("[1, 2] trailing") == [1, 2]
    with pytest.raises(ValueError, match="not JSON"):
        extract_json("no json here {")


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"items": ["abc"]}, r"exactly 2 items, got 1"),
        ({"items": ["abc", 5]}, r"\$.items\[1\] should be string"),
        ({"items": ["abc", "x"]}, r"too short"),
        ({}, r"missing 'items'"),
        ({"items": ["abc", "def"], "extra": 1}, r"unexpected keys \['extra'\]"),
        ({"items": ["abc", "def"], "score": 7}, r"one of \[1, 2, 3, 4, 5\]"),
        ({"items": ["abc", "def"], "score": True}, r"should be integer"),
        ([], r"\$ should be object"),
    ],
)
def test_validate_names_the_first_mismatch(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_reply(Listing, value)


def test_validate_accepts_a_matching_value() -> None:
    assert parse_reply(Listing, {"items": ["abc", "def"], "score": 3}).score == 3
    assert reply_schema(Listing) == SCHEMA


def test_chat_json_retries_with_feedback_then_succeeds() -> None:
    llm = ScriptedLLM(
        ["I think the answer is...", '{"items": ["one"]}', '{"items": ["one", "two"]}']
    )
    result = chat_json(llm, [user("list two")], Listing, task="listing", retries=2)
    assert result.value == Listing(items=["one", "two"])
    assert result.attempts == 3
    assert llm.usage.calls == 3 and llm.usage.retries == 2
    # The retries repeat the request with a note on what was wrong (not the bad reply itself).
    second, schema = llm.requests[1]
    assert schema == SCHEMA and len(second) == 1
    assert second[0].content.startswith("list two\n\nA previous answer to this was rejected")
    assert "not JSON" in second[0].content and "I think" not in second[0].content
    third = llm.requests[2][0]
    assert "exactly 2 items, got 1" in third[0].content and "not JSON" not in third[0].content


def test_chat_json_runs_the_task_check() -> None:
    def check(value: Listing) -> list[str]:
        items = [s.lower() for s in value.items]
        if len(set(items)) < len(items):
            raise ValueError("the items overlap")
        return items

    llm = ScriptedLLM(['{"items": ["Same", "same"]}', '{"items": ["One", "Two"]}'])
    result = chat_json(llm, [user("x")], Listing, task="t", check=check, retries=1)
    assert result.value == ["one", "two"]
    assert "overlap" in llm.requests[1][0][-1].content


def test_chat_json_gives_up_with_every_reply_shown() -> None:
    llm = ScriptedLLM(["nope", '{"items": 3}', '{"items": ["a"]}'])
    with pytest.raises(StructuredOutputError) as info:
        chat_json(llm, [user("x")], Listing, task="sub-questions", retries=2)
    error = info.value
    assert len(error.attempts) == 3 and llm.usage.calls == 3
    text = str(error)
    assert text.startswith("sub-questions: the LLM gave no valid answer in 3 attempts")
    assert "got: nope" in text and '{"items": 3}' in text and "should be array" in text


def test_chat_json_treats_a_cut_off_reply_as_invalid() -> None:
    from covrag.llm.base import ChatParams, ChatResult, JsonSchema, Message

    class CutOff(ScriptedLLM):
        def _chat(
            self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
        ) -> ChatResult:
            result = super()._chat(messages, schema, params)
            return ChatResult(result.text, self.model, finish_reason="length")

    llm = CutOff(['{"items": ["abc", "de'])
    with pytest.raises(StructuredOutputError, match="cut off at the token limit"):
        chat_json(llm, [user("x")], Listing, task="t", retries=0)
    # A whole value padded with whitespace up to the limit (as grammar-constrained decoders
    # do) is complete.
    padded = CutOff([json.dumps({"items": ["abc", "def"]}) + "\n" * 20])
    result = chat_json(padded, [user("x")], Listing, task="t", retries=0)
    assert result.value.items == ["abc", "def"]
    # Prose after a whole value that then hits the limit is still a cut-off reply.
    trailing = CutOff([json.dumps({"items": ["abc", "def"]}) + " and then some"])
    with pytest.raises(StructuredOutputError, match="cut off at the token limit"):
        chat_json(trailing, [user("x")], Listing, task="t", retries=0)
