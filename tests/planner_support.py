"""A fake teacher and judge for the planner tests: an OpenAI-compatible HTTP server on loopback
that answers every structured request with JSON made from the request's own schema.

Strings are distinct phrases (so QTree overlap checks pass), an enum takes its first value (the
outline extractor's node choices), and the judge's 1-5 score cycles through ``SCORES`` so the
candidates of one request differ (DPO pairs need a margin).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SCORES = (5, 2, 4, 1, 3)
WORDS = ("costs", "history", "safety", "ethics", "law", "health", "jobs", "public", "risks")


class SchemaAnswers:
    """JSON values following a schema; thread-safe counters keep strings distinct."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.strings = itertools.count()
        self.scores = itertools.cycle(SCORES)
        self.requests = 0

    def value(self, schema: dict[str, Any]) -> Any:
        if "enum" in schema:
            if schema.get("type") == "integer":
                return next(self.scores)
            return schema["enum"][0]
        kind = schema.get("type")
        if kind == "object":
            return {k: self.value(v) for k, v in schema.get("properties", {}).items()}
        if kind == "array":
            return [self.value(schema["items"]) for _ in range(schema.get("minItems") or 1)]
        if kind == "integer":
            return 3
        n = next(self.strings)
        return f"what about {WORDS[n % len(WORDS)]} item{n} detail{n} of the topic"


@contextlib.contextmanager
def schema_server() -> Iterator[tuple[str, SchemaAnswers]]:
    """``(base_url, answers)`` of a server answering chat completions from their schema."""
    answers = SchemaAnswers()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            schema = body.get("response_format", {}).get("json_schema", {}).get("schema")
            with answers.lock:
                answers.requests += 1
                text = json.dumps(answers.value(schema)) if schema else "plain text"
            reply = {
                "id": "c",
                "object": "chat.completion",
                "created": 0,
                "model": "fake-teacher",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": text},
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
            payload = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/v1", answers
    finally:
        httpd.shutdown()
        httpd.server_close()


def fake_llm(url: str) -> str:
    """The ``--llm`` spec of the fake server."""
    return f"openai(model='fake-teacher', base_url='{url}')"
