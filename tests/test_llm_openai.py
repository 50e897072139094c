"""The OpenAI-compatible backend against real HTTP servers on loopback: a scripted one for the
failure paths (429, 500, 400, timeouts, refused connections, replies that are not chat
completions, a server that drips or hangs) and xllamacpp's own OpenAI-compatible server running
SmolLM2 for the happy path."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openai")

from covrag.deadline import Deadline, DeadlineExceeded, deadline_scope  # noqa: E402
from covrag.errors import ConfigError, LLMError, StructuredOutputError  # noqa: E402
from covrag.llm import CachedLLM, ResponseCache, chat_json, user  # noqa: E402
from covrag.llm.openai_backend import OpenAIChat  # noqa: E402
from covrag.schema.llm import one_of, reply_model, reply_schema  # noqa: E402
from llm_support import chat_server, tiny_llm  # noqa: E402

#: A scripted reply: (status, body, headers, delay seconds), or a function that writes the
#: reply itself (given the handler and an event set when the server stops).
Handler = Callable[[BaseHTTPRequestHandler, threading.Event], None]
Reply = tuple[int, Any, dict[str, str], float] | Handler


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
    """Replies in order; records request bodies. A ``bytes`` body is sent as it is."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        self.stop = threading.Event()


def _send(handler: BaseHTTPRequestHandler, reply: tuple[int, Any, dict[str, str], float]) -> None:
    status, body, headers, delay = reply
    time.sleep(delay)
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"content-type": "application/json", **headers}
    handler.send_response(status)
    handler.send_header("content-length", str(len(payload)))
    for key, value in headers.items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(payload)


@contextlib.contextmanager
def scripted_server() -> Iterator[tuple[str, Script]]:
    script = Script([])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("content-length", 0))
            script.requests.append(json.loads(self.rfile.read(length)))
            reply = script.replies.pop(0)
            try:
                if callable(reply):
                    reply(self, script.stop)
                else:
                    _send(self, reply)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", script
    finally:
        script.stop.set()
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def server() -> Iterator[tuple[str, Script]]:
    with scripted_server() as served:
        yield served


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
    llm = OpenAIChat("m", base_url=url, max_retries=3)
    with (
        caplog.at_level("WARNING", logger="covrag.llm.openai_backend"),
        caplog.at_level("INFO", logger="openai._base_client"),
    ):
        result = llm.chat([user("hi")])
    assert result.text == "hello" and result.model == "scripted-model"
    assert (result.prompt_tokens, result.completion_tokens) == (11, 4)
    assert llm.usage.retries == 2 and llm.usage.calls == 1
    assert len(script.requests) == 3
    # Each retry is logged with what the previous attempt got, and counted.
    ours = [r.getMessage() for r in caplog.records if r.name == "covrag.llm.openai_backend"]
    assert ours == [
        f"openai:m at {url}: HTTP 429; retry 1 of 3",
        f"openai:m at {url}: HTTP 500; retry 2 of 3",
    ]
    # The waits are the SDK's, read from its log, not timed: Retry-After (0.3 s) outweighs
    # the first backoff; the second is the SDK's backoff (1 s less up to 25 % jitter).
    waits = [
        float(m.group(1))
        for r in caplog.records
        if (m := re.search(r"Retrying request in ([0-9.]+) seconds", r.getMessage()))
    ]
    assert len(waits) == 2 and waits[0] == pytest.approx(0.3) and 0.75 <= waits[1] <= 1.0
    request = script.requests[0]
    assert request["messages"] == [{"role": "user", "content": "hi"}]
    assert request["temperature"] == 0.0 and request["seed"] == 0


def test_gives_up_after_the_bounded_retries(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [error(503, "overloaded", {"retry-after": "0.01"})] * 3
    llm = OpenAIChat("m", base_url=url, max_retries=2)
    with pytest.raises(LLMError, match=rf"at {url} still failing after 3 attempts: HTTP 503"):
        llm.chat([user("hi")])
    assert len(script.requests) == 3 and llm.usage.retries == 2


def test_client_errors_are_not_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [error(400, "bad model name")]
    llm = OpenAIChat("m", base_url=url, max_retries=3)
    with pytest.raises(LLMError, match=rf"at {url} refused the request: HTTP 400.*bad model name"):
        llm.chat([user("hi")])
    assert len(script.requests) == 1


def test_timeouts_are_retried(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [(200, completion("late"), {}, 1.0), (200, completion("on time"), {}, 0.0)]
    llm = OpenAIChat("m", base_url=url, timeout=0.3, max_retries=1, deadline=10)
    assert llm.chat([user("hi")]).text == "on time"
    assert llm.usage.retries == 1


def test_connection_refused_fails_clearly() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    llm = OpenAIChat("m", base_url=url, max_retries=1)
    with pytest.raises(
        LLMError, match=rf"at {url} still failing after 2 attempts: APIConnectionError"
    ):
        llm.chat([user("hi")])


# --- replies that are not chat completions, servers that drip or hang ---------------------------


def drip(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """A 200 whose body arrives one byte per 0.2 s (each read is quick; the whole never ends)."""
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", "100000")
    handler.end_headers()
    handler.wfile.flush()
    while not stop.wait(0.2):
        handler.wfile.write(b" ")
        handler.wfile.flush()


def hang(handler: BaseHTTPRequestHandler, stop: threading.Event) -> None:
    """Reads the request and never answers."""
    stop.wait(60)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((200, b"upstream says hi", {}, 0.0), r"a body that is not JSON \(application/json\)"),
        (
            (200, b"<!doctype html><title>Sign in</title>", {"content-type": "text/html"}, 0.0),
            r"a reply that is not a chat completion \(text/html\): '<!doctype html><title>Sign in",
        ),
        ((200, {**completion("x"), "choices": []}, {}, 0.0), r"a chat completion without choices"),
        (
            (200, {**completion("x"), "choices": [{"index": 0}]}, {}, 0.0),
            r"a choice without a message",
        ),
        (
            (200, [1, 2], {}, 0.0),
            r"a reply that is not a chat completion \(application/json\): '\[1, 2\]'",
        ),
    ],
    ids=["non-json", "html", "no-choices", "no-message", "json-list"],
)
def test_a_reply_that_is_not_a_chat_completion_is_one_clear_error(
    server: tuple[str, Script], reply: Reply, message: str
) -> None:
    url, script = server
    script.replies = [reply]
    llm = OpenAIChat("m", base_url=url, max_retries=2)
    with pytest.raises(LLMError, match=rf"^openai:m at {url} answered with {message}"):
        llm.chat([user("hi")])
    assert len(script.requests) == 1  # a server that answers this way is not asked again


@pytest.mark.parametrize("reply", [drip, hang], ids=["drip", "hang"])
def test_a_slow_server_ends_at_the_deadline(server: tuple[str, Script], reply: Handler) -> None:
    url, script = server
    script.replies = [reply] * 4
    llm = OpenAIChat("m", base_url=url, timeout=30, max_retries=3, deadline=1)
    with pytest.raises(
        LLMError, match=rf"^openai:m at {url} gave no complete reply within the 1 s "
    ):
        llm.chat([user("hi")])
    assert llm.usage.calls == 0


def test_the_default_deadline_is_twice_the_timeout(server: tuple[str, Script]) -> None:
    url, script = server
    script.replies = [hang] * 4
    llm = OpenAIChat("m", base_url=url, timeout=0.4, max_retries=3)
    with pytest.raises(LLMError, match=r"within the 0.8 s deadline \(\d attempt"):
        llm.chat([user("hi")])


def test_the_cache_keeps_only_accepted_replies_per_endpoint(tmp_path: Path) -> None:
    """A broken endpoint's rejected replies are not replayed after it is fixed, and one
    endpoint's replies are never served for another."""
    schema = reply_model("Number", n=int)
    cache = tmp_path / "cache.sqlite"
    with scripted_server() as (url, script), scripted_server() as (other_url, other):
        script.replies = [(200, completion("<html>oops"), {}, 0.0)] * 3
        llm = CachedLLM(OpenAIChat("m", base_url=url), ResponseCache(cache))
        with pytest.raises(StructuredOutputError):
            chat_json(llm, [user("a number")], schema, task="number", retries=2)
        assert len(ResponseCache(cache)) == 0  # no rejected reply was kept
        # The endpoint is fixed: the model is asked again, and its valid reply is kept.
        script.replies = [(200, completion('{"n": 3}'), {}, 0.0)]
        fixed = CachedLLM(OpenAIChat("m", base_url=url), ResponseCache(cache))
        assert chat_json(fixed, [user("a number")], schema, task="number").value.n == 3
        assert len(script.requests) == 4 and len(ResponseCache(cache)) == 1
        again = CachedLLM(OpenAIChat("m", base_url=url), ResponseCache(cache))
        assert chat_json(again, [user("a number")], schema, task="number").value.n == 3
        assert len(script.requests) == 4 and again.usage.cached_calls == 1
        # The same model name at another endpoint is another model.
        other.replies = [(200, completion('{"n": 7}'), {}, 0.0)]
        elsewhere = CachedLLM(OpenAIChat("m", base_url=other_url), ResponseCache(cache))
        assert chat_json(elsewhere, [user("a number")], schema, task="number").value.n == 7
        assert len(other.requests) == 1


def test_schema_goes_out_as_response_format(server: tuple[str, Script]) -> None:
    url, script = server
    schema = reply_model("Number", n=int)
    script.replies = [(200, completion("n = 3"), {}, 0.0), (200, completion('{"n": 3}'), {}, 0.0)]
    llm = OpenAIChat("m", base_url=url)
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


def test_a_transport_fault_ends_a_command_as_one_line(
    server: tuple[str, Script],
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from covrag.cli import main

    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path))  # a fresh response cache

    url, script = server
    script.replies = [(200, b"<html>proxy login</html>", {"content-type": "text/html"}, 0.0)]
    spec = f"openai(model='m', base_url='{url}', max_retries=0)"
    args = ["plan", "Should cities ban cars?", "--llm", spec, "--subquestions", "2"]
    code = main(args)
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert code == 2 and "Traceback" not in err
    assert err.startswith(f"error: openai:m at {url} answered with a reply that is not a chat")


def test_a_cancelled_request_deadline_stops_the_wait_for_a_reply() -> None:
    release = threading.Event()

    def reply(_: dict[str, Any]) -> str:
        release.wait(60)  # a server that takes its time
        return "late"

    with chat_server(reply) as (base_url, _):
        llm = OpenAIChat("m", base_url=base_url, max_retries=0, timeout=60, deadline=60)
        deadline = Deadline.after(60.0)
        threading.Timer(0.3, deadline.cancel).start()  # the served request's client goes away
        started = time.monotonic()
        try:
            with deadline_scope(deadline), pytest.raises(DeadlineExceeded):
                llm.chat([user("hi")])
            assert time.monotonic() - started < 1.0
        finally:
            release.set()
