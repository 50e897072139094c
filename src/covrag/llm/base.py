"""The LLM protocol: chat messages in, text out, with an optional JSON schema and usage counts.

Every backend (an OpenAI-compatible HTTP endpoint, an embedded llama.cpp model, a cache in front
of either) has one verb, ``chat(messages, schema=...)``. Calls are deterministic by default
(temperature 0 and a fixed seed) so that a run repeats exactly, and every backend counts what it
spent in a :class:`Usage`.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from covrag.deadline import check_deadline
from covrag.errors import ConfigError

Role = Literal["system", "user", "assistant"]
ROLES: tuple[Role, ...] = ("system", "user", "assistant")

JsonSchema = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Message:
    """One chat message."""

    role: Role
    content: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ConfigError(f"Message.role must be one of {ROLES}, got {self.role!r}")

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


def system(content: str) -> Message:
    return Message("system", content)


def user(content: str) -> Message:
    return Message("user", content)


def assistant(content: str) -> Message:
    return Message("assistant", content)


@dataclass(frozen=True, slots=True)
class ChatParams:
    """Sampling parameters of one call. The defaults make calls repeatable.

    Attributes:
        temperature: 0 = greedy decoding.
        max_tokens: Most tokens to generate.
        seed: Sampling seed (used by backends that sample).
    """

    temperature: float = 0.0
    max_tokens: int = 512
    seed: int = 0

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ConfigError(f"temperature must be >= 0, got {self.temperature}")
        if self.max_tokens < 1:
            raise ConfigError(f"max_tokens must be >= 1, got {self.max_tokens}")


@dataclass(frozen=True, slots=True)
class ChatResult:
    """What one call returned.

    Attributes:
        text: The assistant's message.
        model: The model that answered.
        prompt_tokens: Tokens read (as the backend counted them).
        completion_tokens: Tokens written.
        reused_prompt_tokens: Prompt tokens the model did not compute because it reused them
            from its prompt (KV) cache, as the backend reports them (0 when it does not).
        finish_reason: ``stop``, ``length``, ... as the backend reported it.
        cached: Whether the answer came from the response cache (no model call).
        seconds: Wall-clock seconds the call took.
    """

    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    cached: bool = False
    seconds: float = 0.0
    reused_prompt_tokens: int = 0


@dataclass
class Usage:
    """Running totals of what a backend spent (thread-safe)."""

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0
    seconds: float = 0.0
    reused_prompt_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, result: ChatResult) -> None:
        with self._lock:
            if result.cached:
                self.cached_calls += 1
                return
            self.calls += 1
            self.prompt_tokens += result.prompt_tokens
            self.completion_tokens += result.completion_tokens
            self.seconds += result.seconds
            self.reused_prompt_tokens += result.reused_prompt_tokens

    def add_retry(self) -> None:
        with self._lock:
            self.retries += 1

    def as_dict(self) -> dict[str, float]:
        return {
            "calls": self.calls,
            "cached_calls": self.cached_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "retries": self.retries,
            "seconds": round(self.seconds, 3),
            "reused_prompt_tokens": self.reused_prompt_tokens,
        }


class LLM(ABC):
    """A chat model. Subclasses implement :meth:`_chat`; :meth:`chat` counts usage.

    Attributes:
        backend: Short backend name (``openai``, ``local``, ...), part of cache keys.
        model: The model name or path the backend talks to.
        endpoint: Where the model answers (an HTTP backend's base URL; empty for a model in
            the process), part of cache keys.
        supports_schema: Whether the backend constrains decoding to a JSON schema.
        params: Default sampling parameters.
    """

    backend: str = "llm"
    endpoint: str = ""
    supports_schema: bool = False

    def __init__(self, model: str, params: ChatParams | None = None) -> None:
        self.model = model
        self.params = params or ChatParams()
        self.usage = Usage()

    def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: JsonSchema | None = None,
        params: ChatParams | None = None,
        provisional: bool = False,
    ) -> ChatResult:
        """The assistant's reply to ``messages``.

        Args:
            messages: The conversation so far.
            schema: A JSON schema the reply must follow; backends that support it constrain
                decoding to it (see :func:`covrag.llm.structured.chat_json` for validation).
            params: Sampling parameters for this call (default: the backend's).
            provisional: The caller checks the reply before using it and calls :meth:`accept`
                when it passes (as :func:`~covrag.llm.structured.chat_json` does). Otherwise
                a complete reply (not cut off at the token limit) is accepted as it comes.
                A response cache keeps only accepted replies.

        Raises:
            DeadlineExceeded: Under a :func:`~covrag.deadline.deadline_scope` whose deadline
                has passed: before the call, or (backends that stream) between its tokens.
        """
        if not messages:
            raise ConfigError("chat needs at least one message")
        check_deadline()  # between calls: a request past its deadline makes no more
        request, params = list(messages), params or self.params
        result = self._chat(request, schema, params)
        self.usage.add(result)
        if not provisional and result.finish_reason != "length":
            self.accept(request, result, schema=schema, params=params)
        return result

    def accept(
        self,
        messages: Sequence[Message],
        result: ChatResult,
        *,
        schema: JsonSchema | None = None,
        params: ChatParams | None = None,
    ) -> None:
        """Mark ``result``, the reply to this request, as accepted by the caller's checks: a
        response cache keeps it for the same request; a model without one keeps nothing."""
        return None

    @abstractmethod
    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        """One call to the model."""

    def recall(self, key: str) -> Any:
        """A result derived from this model's replies and memoised with them by
        :meth:`remember`; None when not kept (a model without a response cache keeps nothing)."""
        return None

    def remember(self, key: str, value: Any) -> None:
        """Keep a JSON-serialisable ``value`` derived from this model's replies under ``key``,
        in the model's response cache; a model without one keeps nothing."""
        return None

    def describe(self) -> str:
        return f"{self.backend}:{self.model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()!r})"


def response_format(schema: JsonSchema, name: str = "answer") -> dict[str, Any]:
    """The OpenAI ``response_format`` that asks for JSON following ``schema``."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": dict(schema), "strict": True},
    }


def canonical(value: Any) -> str:
    """Stable JSON for hashing (sorted keys, no whitespace)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
