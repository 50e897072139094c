"""Any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp) via the ``openai`` SDK.

The base URL, key and model come from the arguments or the environment (``COVRAG_LLM_BASE_URL``
or ``OPENAI_BASE_URL``, ``COVRAG_LLM_API_KEY`` or ``OPENAI_API_KEY``, ``COVRAG_LLM_MODEL``).
Each request has a timeout; rate limits (429), server errors (5xx), timeouts and connection
errors are retried a bounded number of times with exponential backoff (honouring a server's
``Retry-After`` up to the backoff cap); anything else fails at once with the server's message.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

from covrag.errors import ConfigError, LLMError, MissingExtraError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message, response_format

logger = logging.getLogger(__name__)


def _env(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


class OpenAIChat(LLM):
    """Chat completions from an OpenAI-compatible HTTP endpoint.

    Args:
        model: Model name (default ``$COVRAG_LLM_MODEL``).
        base_url: Endpoint root ending in ``/v1`` (default ``$COVRAG_LLM_BASE_URL`` or
            ``$OPENAI_BASE_URL``; the SDK's default when neither is set).
        api_key: Key (default ``$COVRAG_LLM_API_KEY`` or ``$OPENAI_API_KEY``; local servers
            accept any, so ``"none"`` when unset).
        timeout: Seconds per request.
        max_retries: Retries after the first attempt on 429 / 5xx / timeouts / connection errors.
        backoff: First wait in seconds; doubles each retry.
        max_backoff: Longest wait between attempts.
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
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        json_schema: bool = True,
        params: ChatParams | None = None,
    ) -> None:
        model = model or _env("COVRAG_LLM_MODEL")
        if not model:
            raise ConfigError(
                "the OpenAI-compatible backend needs a model: pass model=... or set "
                "COVRAG_LLM_MODEL"
            )
        if timeout <= 0 or max_retries < 0 or backoff < 0:
            raise ConfigError("timeout must be > 0, max_retries and backoff >= 0")
        super().__init__(model, params)
        try:
            import openai
        except ImportError as exc:
            raise MissingExtraError("openai", "llm") from exc
        self._openai = openai
        self.base_url = base_url or _env("COVRAG_LLM_BASE_URL", "OPENAI_BASE_URL")
        key = api_key or _env("COVRAG_LLM_API_KEY", "OPENAI_API_KEY") or "none"
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.supports_schema = json_schema
        # Retries are ours (bounded, logged, counted), not the SDK's.
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=key, timeout=timeout, max_retries=0
        )

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
        openai = self._openai
        request = self._request(messages, schema, params)
        retryable = (
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APITimeoutError,
            openai.APIConnectionError,
        )
        started = time.perf_counter()
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.chat.completions.create(**request)
                break
            except retryable as exc:
                if attempt == self.max_retries:
                    raise LLMError(
                        f"{self.describe()} at {self.base_url or 'the default endpoint'} still "
                        f"failing after {attempt + 1} attempts: {_describe_error(exc)}"
                    ) from exc
                wait = self._wait(attempt, exc)
                logger.warning(
                    "%s: %s; retry %d of %d in %.1f s",
                    self.describe(),
                    _describe_error(exc),
                    attempt + 1,
                    self.max_retries,
                    wait,
                )
                self.usage.add_retry()
                time.sleep(wait)
            except openai.APIStatusError as exc:
                raise LLMError(
                    f"{self.describe()} refused the request: {_describe_error(exc)}"
                ) from exc
        choice = response.choices[0]
        usage = response.usage
        return ChatResult(
            text=choice.message.content or "",
            model=response.model or self.model,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
            finish_reason=choice.finish_reason or "stop",
            seconds=time.perf_counter() - started,
        )

    def _wait(self, attempt: int, exc: Exception) -> float:
        wait = self.backoff * (2**attempt)
        response = getattr(exc, "response", None)
        header = response.headers.get("retry-after") if response is not None else None
        if header:
            try:
                wait = max(wait, float(header))
            except ValueError:
                pass
        return float(min(wait, self.max_backoff))

    def describe(self) -> str:
        return f"openai:{self.model}"


def _describe_error(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    message = str(exc).strip() or name
    return f"HTTP {status} ({message})" if status else f"{name}: {message}"
