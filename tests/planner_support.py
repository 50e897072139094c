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
from typing import Any

from llm_support import chat_server

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

    def reply(body: dict[str, Any]) -> str:
        schema = body.get("response_format", {}).get("json_schema", {}).get("schema")
        with answers.lock:
            answers.requests += 1
            return json.dumps(answers.value(schema)) if schema else "plain text"

    with chat_server(reply, model="fake-teacher") as (url, _):
        yield url, answers


def fake_llm(url: str) -> str:
    """The ``--llm`` spec of the fake server."""
    return f"openai(model='fake-teacher', base_url='{url}')"
