"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp) via the ``openai`` SDK.

The base URL, key and model come from the arguments or the environment (``COVRAG_LLM_BASE_URL``
or ``OPENAI_BASE_URL``, ``COVRAG_LLM_API_KEY`` or ``OPENAI_API_KEY``, ``COVRAG_LLM_MODEL``).

Retries are the SDK's own: 408, 409, 429, 5xx, timeouts and connection errors are retried
``max_retries`` times with exponential backoff and jitter (0.5 s doubling up to 8 s), honouring a
server's ``Retry-After`` up to two minutes; anything else fails at once. Each attempt has the
SDK's ``timeout``, but a timeout bounds each network operation, not the whole reply (a server
that drips one byte at a time never trips it), so every call also has an overall ``deadline``:
the request runs in a worker thread, and the caller gets an error when the deadline passes.
Whatever goes wrong (the deadline, an error status, a reply that is not a chat completion) ends
as one :class:`~covrag.errors.LLMError` that names the endpoint. Inside a
:func:`covrag.llm.progress.reporting` block the reply is streamed, and its tokens are reported
as they arrive. Under a served request's deadline (:mod:`covrag.deadline`) the caller stops
waiting when it passes (:class:`~covrag.deadline.DeadlineExceeded`), the reply abandoned.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from covrag.deadline import Deadline, DeadlineExceeded, current_deadline
from covrag.errors import ConfigError, LLMError, MissingExtraError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message, response_format
from covrag.llm.progress import Meter, current

logger = logging.getLogger(__name__)

#: Statuses the SDK retries (besides timeouts and connection errors).
RETRIED_STATUSES = (408, 409, 429)


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def check_base_url(url: str, where: str) -> None:
    """Refuse a base URL the HTTP client cannot parse (``http://[::1``, a port out of range, no
    host, a scheme other than http and https), naming ``where`` it came from.

    Raises:
        ConfigError: the URL and what is wrong with it.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (reading it checks the port)
    except ValueError as exc:
        raise ConfigError(f"{where} {url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{where} {url!r} is not a valid URL: expected http://HOST[:PORT]/... or https://..."
        )


class _Abandoned(Exception):
    """Raised inside a worker whose caller stopped waiting: ends the SDK's remaining retries."""


@dataclass
class _Call:
    """One call's worker: its attempts so far, what the last one got, and how it ended."""

    attempts: int = 0
    last: str = "no reply"
    abandoned: threading.Event = field(default_factory=threading.Event)
    done: threading.Event = field(default_factory=threading.Event)
    response: Any = None
    error: BaseException | None = None
    meter: Meter | None = None
    streamed: ChatResult | None = None


class OpenAIChat(LLM):
    """Chat completions from an OpenAI-compatible HTTP endpoint.

    Args:
        model: Model name (default ``$COVRAG_LLM_MODEL``).
        base_url: Endpoint root ending in ``/v1`` (default ``$COVRAG_LLM_BASE_URL`` or
            ``$OPENAI_BASE_URL``; the SDK's default when neither is set).
        api_key: Key (default ``$COVRAG_LLM_API_KEY`` or ``$OPENAI_API_KEY``; local servers
            accept any, so ``"none"`` when unset).
        timeout: Seconds each network operation of an attempt may wait (the SDK's timeout).
        max_retries: Retries after the first attempt on 408 / 409 / 429 / 5xx / timeouts /
            connection errors (the SDK's retries, with its backoff).
        deadline: Seconds a whole call may take, retries and their waits included (default:
            twice ``timeout``).
        json_schema: Send the schema as ``response_format`` (structured outputs); turn off for
            servers that reject it (the reply is then only validated).
        params: Default sampling parameters.
    """

    backend = "openai"

    def __init__(
        self,
        model: str | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        deadline: float | None = None,
        json_schema: bool = True,
        params: ChatParams | None = None,
    ) -> None:
        model = model or _env("COVRAG_LLM_MODEL")
        if not model:
            raise ConfigError(
                "the OpenAI-compatible backend needs a model: pass model=... or set "
                "COVRAG_LLM_MODEL"
            )
        deadline = 2 * timeout if deadline is None else deadline
        if not (timeout > 0 and deadline > 0) or max_retries < 0:
            raise ConfigError("timeout and deadline must be > 0, max_retries >= 0")
        super().__init__(model, params)
        try:
            import openai
        except ImportError as exc:
            raise MissingExtraError("openai", "llm") from exc
        self._openai = openai
        self.base_url = base_url or _env("COVRAG_LLM_BASE_URL", "OPENAI_BASE_URL")
        if self.base_url is not None:
            where = "$COVRAG_LLM_BASE_URL or $OPENAI_BASE_URL" if not base_url else "base_url"
            check_base_url(self.base_url, where)
        key = api_key or _env("COVRAG_LLM_API_KEY", "OPENAI_API_KEY") or "none"
        self.timeout = timeout
        self.max_retries = max_retries
        self.deadline = deadline
        self.supports_schema = json_schema
        self._local = threading.local()
        hooks: dict[str, list[Callable[[Any], None]]] = {
            "request": [self._on_request],
            "response": [self._on_response],
        }
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=key,
            timeout=timeout,
            max_retries=max_retries,
            http_client=openai.DefaultHttpxClient(event_hooks=hooks),
        )
        self.endpoint = str(self._client.base_url).rstrip("/")

    def _request(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [m.to_dict() for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
        }
        if schema is not None and self.supports_schema:
            request["response_format"] = response_format(schema)
        return request

    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        started = time.perf_counter()
        callback = current()  # read here: the worker thread does not see the caller's context
        call = _Call(meter=None if callback is None else Meter(self.model, callback))
        request = self._request(messages, schema, params)
        worker = threading.Thread(
            target=self._work, args=(call, request), name="covrag-openai-call", daemon=True
        )
        worker.start()
        request_deadline = current_deadline()  # a served request's (covrag.deadline)
        try:
            finished = _wait(call.done, self.deadline, request_deadline)
        finally:
            if not call.done.is_set():
                # The worker is left to end on its own; its next attempt, if any, is refused.
                call.abandoned.set()
        if not finished and request_deadline is not None and request_deadline.expired():
            raise DeadlineExceeded(request_deadline)
        if not finished:
            raise LLMError(
                f"{self._where()} gave no complete reply within the {self.deadline:g} s "
                f"deadline ({call.attempts} attempt(s), {self.timeout:g} s timeout each); "
                "raise deadline= or timeout= for a slow server"
            )
        if call.error is not None:
            raise self._failure(call, call.error) from call.error
        if call.streamed is not None:
            return dataclasses.replace(call.streamed, seconds=time.perf_counter() - started)
        return self._result(call.response, started)

    def _work(self, call: _Call, request: dict[str, Any]) -> None:
        """The SDK call (with its retries), run in a worker thread."""
        self._local.call = call
        try:
            if call.meter is not None:
                call.streamed = self._stream(request, call.meter)
            else:
                call.response = self._client.chat.completions.with_raw_response.create(**request)
        except BaseException as exc:  # handed to the caller, who raises it as an LLMError
            call.error = exc
        finally:
            call.done.set()

    def _stream(self, request: dict[str, Any], meter: Meter) -> ChatResult:
        """The reply streamed (when progress is shown): each piece goes to ``meter``."""
        chunks = self._client.chat.completions.create(
            **request, stream=True, stream_options={"include_usage": True}
        )
        text: list[str] = []
        finish, usage, model = None, None, None
        for chunk in chunks:
            model = chunk.model or model
            usage = chunk.usage or usage
            for choice in chunk.choices or ():
                piece = choice.delta.content if choice.delta is not None else None
                if piece:
                    text.append(piece)
                    meter.piece(piece)
                finish = choice.finish_reason or finish
        meter.done(usage.completion_tokens if usage else None)
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        reused = getattr(details, "cached_tokens", None) if details else None
        return ChatResult(
            text="".join(text),
            model=model or self.model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else meter.tokens,
            finish_reason=finish or "stop",
            reused_prompt_tokens=int(reused or 0),
        )

    def _on_request(self, request: Any) -> None:
        call: _Call | None = getattr(self._local, "call", None)
        if call is None:
            return
        if call.abandoned.is_set():
            raise _Abandoned(f"{self._where()}: the caller stopped waiting")
        call.attempts += 1
        if call.attempts > 1:
            self.usage.add_retry()
            logger.warning(
                "%s: %s; retry %d of %d",
                self._where(),
                call.last,
                call.attempts - 1,
                self.max_retries,
            )
        call.last = "no reply (a timeout or a connection error)"

    def _on_response(self, response: Any) -> None:
        call: _Call | None = getattr(self._local, "call", None)
        if call is not None:
            call.last = f"HTTP {response.status_code}"

    def _failure(self, call: _Call, exc: BaseException) -> LLMError:
        """The one error a failed call ends with."""
        openai = self._openai
        retried = isinstance(exc, openai.APIConnectionError) or (
            isinstance(exc, openai.APIStatusError)
            and (exc.status_code in RETRIED_STATUSES or exc.status_code >= 500)
        )
        if retried:
            message = f"still failing after {call.attempts} attempts: {_describe_error(exc)}"
        elif isinstance(exc, openai.APIStatusError):
            message = f"refused the request: {_describe_error(exc)}"
        else:
            message = f"failed: {_describe_error(exc)}"
        return LLMError(f"{self._where()} {message}")

    def _result(self, raw: Any, started: float) -> ChatResult:
        """The chat result in a raw SDK response; an LLMError when it is not a chat completion."""
        content_type = raw.headers.get("content-type", "no content-type")
        try:
            response = raw.parse()
        except Exception as exc:  # the SDK gives a JSONDecodeError, a pydantic error, ...
            raise self._bad_reply(f"a body that is not JSON ({content_type})", raw) from exc
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list):
            raise self._bad_reply(f"a reply that is not a chat completion ({content_type})", raw)
        if not choices:
            raise self._bad_reply("a chat completion without choices", raw)
        choice = choices[0]
        if choice.message is None:
            raise self._bad_reply("a choice without a message", raw)
        usage = response.usage
        details = getattr(usage, "prompt_tokens_details", None) if usage else None
        reused = getattr(details, "cached_tokens", None) if details else None
        return ChatResult(
            text=choice.message.content or "",
            model=response.model or self.model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason or "stop",
            seconds=time.perf_counter() - started,
            reused_prompt_tokens=int(reused or 0),
        )

    def _bad_reply(self, what: str, raw: Any) -> LLMError:
        try:
            body = raw.http_response.text
        except Exception:  # an undecodable body: show nothing of it
            body = ""
        shown = " ".join(body.split())[:200]
        return LLMError(f"{self._where()} answered with {what}: {shown!r}")

    def _where(self) -> str:
        return f"{self.describe()} at {self.endpoint}"

    def describe(self) -> str:
        return f"openai:{self.model}"


def _describe_error(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    message = str(exc).strip() or name
    return f"HTTP {status} ({message})" if status else f"{name}: {message}"


def _wait(done: threading.Event, seconds: float, deadline: Deadline | None) -> bool:
    """Whether ``done`` was set within ``seconds``, looking every 0.1 s at ``deadline`` too
    (which a served request's client cancels by going away); False once it has passed."""
    if deadline is None:
        return done.wait(seconds)
    end = time.monotonic() + seconds
    while not deadline.expired():
        left = min(end - time.monotonic(), deadline.remaining())
        if left <= 0:
            return done.is_set()
        if done.wait(min(0.1, left)):
            return True
    return done.is_set()
