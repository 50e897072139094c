"""An embedded llama.cpp model through ``xllamacpp``: offline, no server to run.

``xllamacpp.Server`` loads a GGUF file in-process and answers OpenAI-style chat requests,
including ``response_format`` with a JSON schema, which llama.cpp compiles into a grammar so the
reply can only be JSON of that shape. A loaded model is shared by every :class:`LocalChat` of the
process that asks for the same file and settings. The server also listens on a loopback port that
speaks the OpenAI API (:attr:`LocalChat.address`).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import Any

from covrag.errors import LLMError, MissingExtraError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message, response_format
from covrag.llm.models import DEFAULT_LOCAL_MODEL, resolve_model

logger = logging.getLogger(__name__)


class _LoadedModel:
    """One ``xllamacpp.Server`` and a lock: requests go through one at a time."""

    def __init__(self, path: str, n_ctx: int, n_threads: int) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise MissingExtraError("xllamacpp", "llm") from exc
        params = xllamacpp.CommonParams()
        params.model.path = path
        params.n_ctx = n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = n_threads
        params.cpuparams_batch.n_threads = n_threads
        params.verbosity = -1  # llama.cpp's own logging off; covrag logs what matters
        started = time.perf_counter()
        self.server = xllamacpp.Server(params)
        self.load_seconds = time.perf_counter() - started
        self.lock = threading.Lock()
        logger.info("loaded %s in %.1f s", path, self.load_seconds)

    def complete(self, request: dict[str, Any]) -> dict[str, Any]:
        with self.lock:
            try:
                response: dict[str, Any] = self.server.handle_chat_completions(request)
            except (ValueError, RuntimeError) as exc:
                raise LLMError(f"the local model rejected the request: {exc}") from exc
        if "error" in response:
            raise LLMError(f"the local model failed: {response['error']}")
        return response


@functools.cache
def _load(path: str, n_ctx: int, n_threads: int) -> _LoadedModel:
    return _LoadedModel(path, n_ctx, n_threads)


class LocalChat(LLM):
    """Chat with a GGUF model embedded in the process (llama.cpp via ``xllamacpp``).

    Args:
        model: ``qwen2.5-coder-1.5b`` (default, assembled from its packages on first use),
            ``smollm2`` (tiny, for tests) or the path of any GGUF file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads for prompt processing and generation.
        params: Default sampling parameters.

    Example:
        >>> llm = LocalChat("smollm2")  # doctest: +SKIP
        >>> llm.chat([user("Say hi")]).text  # doctest: +SKIP
    """

    backend = "local"
    supports_schema = True

    def __init__(
        self,
        model: str = DEFAULT_LOCAL_MODEL,
        *,
        n_ctx: int = 4096,
        n_threads: int = 2,
        params: ChatParams | None = None,
    ) -> None:
        self.path = str(resolve_model(model))
        super().__init__(model, params)
        self.n_ctx = n_ctx
        self.n_threads = n_threads

    @property
    def loaded(self) -> _LoadedModel:
        return _load(self.path, self.n_ctx, self.n_threads)

    @property
    def address(self) -> str:
        """The loopback URL where the embedded server speaks the OpenAI API."""
        return str(self.loaded.server.listening_address)

    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        request: dict[str, Any] = {
            "messages": [m.to_dict() for m in messages],
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
        }
        if schema is not None:
            request["response_format"] = response_format(schema)
        started = time.perf_counter()
        response = self.loaded.complete(request)
        try:
            choice = response["choices"][0]
            usage = response.get("usage", {})
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"the local model returned an unexpected response: {response}") from exc
        return ChatResult(
            text=text,
            model=self.model,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason") or "stop",
            seconds=time.perf_counter() - started,
        )
