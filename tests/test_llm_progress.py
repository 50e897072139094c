"""Streaming progress of LLM calls on the real tiny model (SmolLM2-135M through xllamacpp), both
embedded and through its OpenAI-compatible loopback server."""

from __future__ import annotations

from covrag.llm import LLM, ChatParams, ChatResult, user
from covrag.llm.openai_backend import OpenAIChat
from covrag.llm.progress import TokenProgress, current, reporting
from llm_support import tiny_llm

PARAMS = ChatParams(max_tokens=6)
MESSAGES = [user("Name one fruit.")]


def _streamed(llm: LLM) -> tuple[ChatResult, list[TokenProgress]]:
    seen: list[TokenProgress] = []
    with reporting(seen.append):
        result = llm.chat(MESSAGES, params=PARAMS)
    assert current() is None
    return result, seen


def _check(result: ChatResult, seen: list[TokenProgress], plain: ChatResult) -> None:
    # The reply is the same streamed or not (greedy decoding), and fully counted.
    assert result.text == plain.text and result.completion_tokens == plain.completion_tokens
    assert result.prompt_tokens == plain.prompt_tokens > 5
    pieces, last = seen[:-1], seen[-1]
    assert pieces and [p.tokens for p in pieces] == list(range(1, len(pieces) + 1))
    assert not any(p.done for p in pieces) and last.done
    # each report carries its piece of the reply (what a stream forwards as tokens)
    assert "".join(p.text for p in pieces) == result.text and not last.text
    assert last.tokens == result.completion_tokens > 0
    assert all(p.seconds > 0 for p in seen) and last.tokens_per_second > 0


def test_the_embedded_model_reports_tokens_as_they_stream() -> None:
    llm = tiny_llm()
    plain = llm.chat(MESSAGES, params=PARAMS)  # no callback: nothing streams
    result, seen = _streamed(llm)
    _check(result, seen, plain)
    assert llm.usage.calls == 2 and llm.usage.completion_tokens == 2 * plain.completion_tokens


def test_an_openai_endpoint_reports_tokens_as_they_stream() -> None:
    local = tiny_llm()
    address = local.address  # type: ignore[attr-defined]
    llm = OpenAIChat("smollm2", base_url=address.rstrip("/") + "/v1", timeout=300)
    plain = llm.chat(MESSAGES, params=PARAMS)
    result, seen = _streamed(llm)
    _check(result, seen, plain)
    assert {p.model for p in seen} == {"smollm2"}
