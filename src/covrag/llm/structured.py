"""Structured output: ask for JSON that follows a schema, and get it or a clear error.

Backends that support it decode under the schema (llama.cpp turns it into a grammar; OpenAI's
structured outputs). Whatever the backend, the reply is then parsed, validated against the schema
(the subset of JSON Schema covrag's prompts use) and against a task-specific check (exact counts,
no overlap, ...). An invalid reply is shown back to the model with what was wrong, a bounded
number of times (sampling retries at a higher temperature with fixed seeds); after that a
:class:`~covrag.errors.StructuredOutputError` lists every attempt.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from covrag.errors import ConfigError, StructuredOutputError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message

logger = logging.getLogger(__name__)

T = TypeVar("T")

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


def validate(value: Any, schema: JsonSchema, path: str = "$") -> None:
    """Check ``value`` against ``schema`` (type, properties, required, items, min/maxItems,
    enum, minLength, pattern, minimum/maximum, additionalProperties=false).

    Raises:
        ValueError: naming the first place that does not match.
    """
    kind = schema.get("type")
    if kind is not None and not _is_type(value, kind):
        raise ValueError(f"{path} should be {kind}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise ValueError(f"{path} should be one of {list(schema['enum'])}, got {value!r}")
    if isinstance(value, str):
        if len(value.strip()) < int(schema.get("minLength", 0)):
            raise ValueError(f"{path} is too short")
        pattern = schema.get("pattern")
        if pattern and not re.search(pattern, value):
            raise ValueError(f"{path} = {value!r} does not match {pattern}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise ValueError(f"{path} should be >= {schema['minimum']}, got {value}")
        if "maximum" in schema and value > schema["maximum"]:
            raise ValueError(f"{path} should be <= {schema['maximum']}, got {value}")
    if isinstance(value, list):
        low, high = schema.get("minItems"), schema.get("maxItems")
        if low is not None and len(value) < low or high is not None and len(value) > high:
            wanted = f"exactly {low}" if low == high else f"between {low} and {high}"
            raise ValueError(f"{path} should have {wanted} items, got {len(value)}")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        properties: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                raise ValueError(f"{path} is missing {name!r}")
        if schema.get("additionalProperties") is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                raise ValueError(f"{path} has unexpected keys {extra}")
        for name, sub in properties.items():
            if name in value:
                validate(value[name], sub, f"{path}.{name}")


def _is_type(value: Any, kind: str | Sequence[str]) -> bool:
    if not isinstance(kind, str):
        return any(_is_type(value, k) for k in kind)
    checks: dict[str, Callable[[Any], bool]] = {
        "object": lambda v: isinstance(v, dict),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
        "boolean": lambda v: isinstance(v, bool),
        "null": lambda v: v is None,
    }
    if kind not in checks:
        raise ConfigError(f"unsupported JSON schema type {kind!r}")
    return checks[kind](value)


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
        value: The parsed value after the task's check.
        attempts: How many calls were made (1 = first reply was valid).
        results: The raw results of every call, in order.
    """

    value: Any
    attempts: int
    results: tuple[ChatResult, ...]


def chat_json(
    llm: LLM,
    messages: Sequence[Message],
    schema: JsonSchema,
    *,
    task: str,
    check: Callable[[Any], T] | None = None,
    retries: int = 2,
    params: ChatParams | None = None,
    retry_temperature: float | None = 0.7,
) -> Structured:
    """Ask ``llm`` for JSON following ``schema``, validate it, retry with feedback.

    Args:
        llm: The backend.
        messages: The request; the schema is passed to the backend, and described in the
            prompt by the caller.
        schema: JSON schema of the reply.
        task: What is being asked (shown in errors and logs).
        check: Task-specific validation and conversion of the parsed value; raises
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
        result = llm.chat(conversation, schema=schema, params=call)
        results.append(result)
        try:
            if result.finish_reason == "length" and not _complete_json(result.text):
                raise ValueError("the reply was cut off at the token limit; answer more briefly")
            value = extract_json(result.text)
            validate(value, schema)
            checked: Any = check(value) if check is not None else value
        except ValueError as exc:
            problem = str(exc)
            failures.append((result.text, problem))
            logger.info("%s: attempt %d invalid: %s", task, attempt + 1, problem)
            if attempt < retries:
                llm.usage.add_retry()
                conversation = with_feedback(messages, problem)
            continue
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
