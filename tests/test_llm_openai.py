"""The OpenAI-compatible backend against real HTTP servers on loopback: a scripted one for the
failure paths (429, 500, 400, timeouts, refused connections) and xllamacpp's own OpenAI-compatible
server running SmolLM2 for the happy path."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytest.importorskip("openai")

from covrag.errors import ConfigError, LLMError  # noqa: E402
from covrag.llm import chat_json, user  # noqa: E402
from covrag.llm.openai_backend import OpenAIChat  # noqa: E402
from covrag.schema.llm import one_of, reply_model, reply_schema  # noqa: E402
from llm_support import tiny_llm  # noqa: E402


def completion(text: str) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "scripted-model",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15},
    }


class Script:
    """Replies in order: (status, body, headers, delay seconds); records request bodies."""

    def __init__(self, replies: list[tuple[int, Any, dict[str, str], float]]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    script = Script([])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length", 0))
            script.requests.append(json.loads(self.rfile.read(length)))
            status, body, headers, delay = script.replies.pop(0)
            time.sleep(delay)
            payload = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    httpd.shutdown()
    httpd.server_close()


def error(status: int, message: str, headers: dict[str, str] | None = None) -> tuple[Any, ...]:
    return (status, {"error": {"message": message, "type": "x"}}, headers or {}, 0.0)


def test_retries_429_and_500_with_backoff_then_succeeds(
    server: tuple[str, Script], caplog: pytest.LogCaptureFixture
) -> None:
    url, script = server
    script.replies = [
        error(429, "slow down", {"retry-after": "0.3"}),
        error(500, "boom"),
        (200, completion("hello"), {}, 0.0),
    ]
    llm = OpenAIChat("m", base_url=url, max_retries=3, backoff=0.05)
    with caplog.at_level("WARNING", logger="covrag.llm.openai_backend"):
        result = llm.chat([user("hi")])
    assert result.text == "hello" and result.model == "scripted-model"
    assert (result.prompt_tokens, result.completion_tokens) == (11, 4)
    assert llm.usage.retries == 2 and llm.usage.calls == 1
    assert len(script.requests) == 3
    # Retry-After (0.3 s) outweighs the first backoff (0.05 s); the second waits 0.1 s. The
    # chosen waits are read from the log, not timed.
    waits = [r.getMessage() for r in caplog.records if "retry" in r.getMessage()]
    assert len(waits) == 2
    assert "HTTP 429" in waits[0] and waits[0].endswith("retry 1 of 3 in 0.3 s")
    assert "HTTP 500" in waits[1] and waits[1].endswith("retry 2 of 3 in 0.1 s")
    request = script.requests[0]
    assert request["messages"] == [{"role": "user", "content": "hi"}]
    assert request["temperature"] == 0.0 and request["seed"] == 0


def test_gives_up_after_the_bounded_retries(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [error(503, "overloaded")] * 3
    llm = OpenAIChat("m", base_url=url, max_retries=2, backoff=0.01)
    with pytest.raises(LLMError, match=r"still failing after 3 attempts: HTTP 503"):
        llm.chat([user("hi")])
    assert len(script.requests) == 3


def test_client_errors_are_not_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [error(400, "bad model name")]
    llm = OpenAIChat("m", base_url=url, max_retries=3, backoff=0.01)
    with pytest.raises(LLMError, match=r"refused the request: HTTP 400.*bad model name"):
        llm.chat([user("hi")])
    assert len(script.requests) == 1


def test_timeouts_are_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [(200, completion("late"), {}, 1.0), (200, completion("on time"), {}, 0.0)]
    llm = OpenAIChat("m", base_url=url, timeout=0.3, max_retries=1, backoff=0.01)
    assert llm.chat([user("hi")]).text == "on time"
    assert llm.usage.retries == 1


def test_connection_refused_fails_clearly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    llm = OpenAIChat("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff=0.01)
    with pytest.raises(LLMError, match=r"still failing after 2 attempts: APIConnectionError"):
        llm.chat([user("hi")])


def test_schema_goes_out_as_response_format(server: tuple[str, Script]) -> None:
    url, script = server
    schema = reply_model("Number", n=int)
    script.replies = [(200, completion("n = 3"), {}, 0.0), (200, completion('{"n": 3}'), {}, 0.0)]
    llm = OpenAIChat("m", base_url=url, backoff=0.01)
    result = chat_json(llm, [user("a number")], schema, task="number", retries=1)
    assert result.value.model_dump() == {"n": 3} and result.attempts == 2
    sent = script.requests[0]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["schema"] == {
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "required": ["n"],
        "additionalProperties": False,
    }
    plain = OpenAIChat("m", base_url=url, json_schema=False)
    script.replies = [(200, completion('{"n": 1}'), {}, 0.0)]
    plain.chat([user("x")], schema=reply_schema(schema))
    assert "response_format" not in script.requests[-1]


def test_settings_come_from_the_environment(
    server: tuple[str, Script], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, script = server
    monkeypatch.setenv("COVRAG_LLM_BASE_URL", url)
    monkeypatch.setenv("COVRAG_LLM_MODEL", "env-model")
    monkeypatch.setenv("COVRAG_LLM_API_KEY", "secret-key")
    script.replies = [(200, completion("ok"), {}, 0.0)]
    llm = OpenAIChat()
    assert llm.chat([user("x")]).text == "ok"
    assert script.requests[0]["model"] == "env-model"
    monkeypatch.delenv("COVRAG_LLM_MODEL")
    with pytest.raises(ConfigError, match="COVRAG_LLM_MODEL"):
        OpenAIChat()


def test_against_xllamacpp_openai_server_running_smollm2() -> None:
    local = tiny_llm()
    address = local.address  # type: ignore[attr-defined]
    llm = OpenAIChat("smollm2", base_url=address.rstrip("/") + "/v1", timeout=120)
    schema = reply_model("Colour", colour=one_of(str, ["red", "green", "blue"]))
    result = chat_json(llm, [user("Name a colour as JSON.")], schema, task="colour", retries=0)
    assert result.value.colour in ("red", "green", "blue")  # type: ignore[attr-defined]
    assert llm.usage.completion_tokens > 0 and llm.usage.prompt_tokens > 0
