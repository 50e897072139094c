"""Structured output: ask for JSON that follows a reply model, and get it or a clear error.

Each step declares a pydantic model of its reply (:class:`covrag.schema.llm.Reply`); the JSON
schema generated from it goes to the backend, which decodes under it when it can (llama.cpp turns
it into a grammar; OpenAI's structured outputs). Whatever the backend, the reply is then parsed,
validated with the same model and with a task-specific check (no overlap, ...). An invalid
reply is shown back to the model with what was wrong, a bounded number of times (sampling
retries at a higher temperature with fixed seeds); after that a
:class:`~covrag.errors.StructuredOutputError` lists every attempt.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from covrag.errors import ConfigError, StructuredOutputError
from covrag.llm.base import LLM, ChatParams, ChatResult, Message
from covrag.schema.llm import Reply, parse_reply, reply_schema

logger = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R", bound=Reply)

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON value in ``text``: the whole text, a fenced block, or the first ``{...}``/``[...]``.

    Raises:
        ValueError: when no JSON value can be found.
    """
    stripped = text.strip()
    candidates = [stripped]
    candidates += [m.strip() for m in _FENCE.findall(stripped)]
    for opener in "{[":
        start = stripped.find(opener)
        if start >= 0:
            candidates.append(stripped[start:])
    decoder = json.JSONDecoder()
    for candidate in candidates:
        try:
            value, _ = decoder.raw_decode(candidate)
            return value
        except json.JSONDecodeError:
            continue
    raise ValueError("the reply is not JSON")


def with_feedback(messages: Sequence[Message], problem: str) -> list[Message]:
    """The request again, its last message noting why the previous answer was rejected.

    The rejected answer itself is not shown: small models shown their own reply tend to copy it.
    """
    last = messages[-1]
    note = (
        f"\n\nA previous answer to this was rejected: {problem}. Write a new answer that avoids "
        "this mistake; reply with JSON only."
    )
    return [*messages[:-1], Message(last.role, last.content + note)]


@dataclass(frozen=True)
class Structured:
    """A validated structured answer and what it took.

    Attributes:
        value: The reply model, or what the task's check made of it.
        attempts: How many calls were made (1 = first reply was valid).
        results: The raw results of every call, in order.
    """

    value: Any
    attempts: int
    results: tuple[ChatResult, ...]


def chat_json(
    llm: LLM,
    messages: Sequence[Message],
    reply: type[R],
    *,
    task: str,
    check: Callable[[R], T] | None = None,
    retries: int = 2,
    params: ChatParams | None = None,
    retry_temperature: float | None = 0.7,
) -> Structured:
    """Ask ``llm`` for JSON following the ``reply`` model, validate it, retry with feedback.

    Args:
        llm: The backend.
        messages: The request; the reply's JSON schema is passed to the backend, and described
            in the prompt by the caller.
        reply: The model of the reply (its JSON schema: :func:`covrag.schema.llm.reply_schema`).
        task: What is being asked (shown in errors and logs).
        check: Task-specific validation and conversion of the validated reply; raises
            ``ValueError`` with a message the model can act on when the value is unusable, and
            returns the converted value.
        retries: Extra attempts after the first (so at most ``retries + 1`` calls).
        params: Sampling parameters (default: the backend's).
        retry_temperature: Temperature of the retries, each with its own fixed seed (a greedy
            model shown its mistake often repeats it); None = the same parameters. Runs stay
            repeatable: the seeds are ``params.seed + attempt``.

    Raises:
        StructuredOutputError: when no attempt gave a valid answer; lists every reply.
    """
    if retries < 0:
        raise ConfigError(f"retries must be >= 0, got {retries}")
    schema = reply_schema(reply)
    conversation = list(messages)
    failures: list[tuple[str, str]] = []
    results: list[ChatResult] = []
    base = params or llm.params
    for attempt in range(retries + 1):
        call = base
        if attempt and retry_temperature is not None:
            call = dataclasses.replace(
                base, temperature=max(base.temperature, retry_temperature), seed=base.seed + attempt
            )
        result = llm.chat(conversation, schema=schema, params=call, provisional=True)
        results.append(result)
        try:
            if result.finish_reason == "length" and not _complete_json(result.text):
                raise ValueError("the reply was cut off at the token limit; answer more briefly")
            value = parse_reply(reply, extract_json(result.text))
            checked: Any = check(value) if check is not None else value
        except ValueError as exc:
            problem = str(exc)
            failures.append((result.text, problem))
            logger.info("%s: attempt %d invalid: %s", task, attempt + 1, problem)
            if attempt < retries:
                llm.usage.add_retry()
                conversation = with_feedback(messages, problem)
            continue
        # Only an accepted reply is cached: for its own request, and for the one that started
        # the exchange, so that a rerun repeats the accepted answer without asking again.
        llm.accept(conversation, result, schema=schema, params=call)
        if attempt:
            llm.accept(messages, result, schema=schema, params=base)
        return Structured(checked, attempt + 1, tuple(results))
    raise StructuredOutputError(task, failures)


def _complete_json(text: str) -> bool:
    """Whether ``text`` is one whole JSON value (possibly padded with whitespace).

    Grammar-constrained decoders may keep emitting whitespace after the closing brace until the
    token limit; such a reply is complete even though the backend reports ``length``.
    """
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
