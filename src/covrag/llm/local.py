"""An embedded llama.cpp model through ``xllamacpp``: offline, no server to run.

``xllamacpp.Server`` loads a GGUF file in-process and answers OpenAI-style chat requests,
including ``response_format`` with a JSON schema, which llama.cpp compiles into a grammar so the
reply can only be JSON of that shape. A loaded model is shared by every :class:`LocalChat` of the
process that asks for the same file and settings. The server also listens on a loopback port that
speaks the OpenAI API (:attr:`LocalChat.address`).

Prompt caching: llama.cpp reuses the KV cache of the longest prefix a request shares with the
previous one, and keeps the states of earlier prompts in memory (``prompt_cache_mib``) to restore
the best match, so a rewrite that repeats its draft's system prompt, question and passages only
computes what follows them. With ``lookup`` the model drafts tokens by prompt lookup (llama.cpp's
n-gram speculative decoding) and verifies them in one batch: greedy output is unchanged, and text
copied from the prompt (passages, a previous answer) is generated several tokens per step.

Under a request's deadline (:mod:`covrag.deadline`, the HTTP service) the reply is streamed and
the deadline checked at each token: generation stops at the first token past it.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

from covrag.deadline import Deadline, DeadlineExceeded, current_deadline
from covrag.errors import ConfigError, LLMError, MissingExtraError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message, response_format
from covrag.llm.models import DEFAULT_LOCAL_MODEL, resolve_model
from covrag.llm.progress import Meter, current

logger = logging.getLogger(__name__)

#: Whether prompt lookup decoding is on by default (docs/experiments/18-ask-time.md).
LOOKUP_DEFAULT = False


@dataclass(frozen=True)
class _Settings:
    """What a loaded model is built with (models are shared per file and settings)."""

    path: str
    n_ctx: int
    n_threads: int
    prompt_cache_mib: int
    lookup: bool


class _LoadedModel:
    """One ``xllamacpp.Server`` and a lock: requests go through one at a time."""

    def __init__(self, settings: _Settings) -> None:
        try:
            import xllamacpp
        except ImportError as exc:
            raise MissingExtraError("xllamacpp", "llm") from exc
        params = xllamacpp.CommonParams()
        params.model.path = path = settings.path
        params.n_ctx = settings.n_ctx
        params.n_parallel = 1
        params.cpuparams.n_threads = settings.n_threads
        params.cpuparams_batch.n_threads = settings.n_threads
        params.cache_prompt = True
        params.cache_ram_mib = settings.prompt_cache_mib
        if settings.lookup:
            params.speculative.types = [
                xllamacpp.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_MOD
            ]
        params.verbosity = -1  # llama.cpp's own logging off; covrag logs what matters
        started = time.perf_counter()
        try:
            self.server = xllamacpp.Server(params)
        except RuntimeError as exc:  # llama.cpp says only "Failed to init server"
            raise LLMError(
                f"local model {path!r} did not load ({exc}): a damaged or unsupported GGUF file, "
                "or a context too large for memory"
            ) from exc
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

    def stream(
        self, request: dict[str, Any], meter: Meter | None, deadline: Deadline | None = None
    ) -> dict[str, Any]:
        """Like :meth:`complete`, streamed: each piece goes to ``meter``; the pieces are put
        together into one chat completion (text, finish reason, usage, timings).

        Raises:
            DeadlineExceeded: ``deadline`` passed between two pieces; llama.cpp was told to
                stop there (a callback that returns True ends the stream).
        """
        text: list[str] = []
        final: dict[str, Any] = {"finish_reason": None, "usage": {}, "timings": {}, "error": None}
        stopped = False

        def on_chunk(chunk: dict[str, Any]) -> bool:
            nonlocal stopped
            if "error" in chunk:
                final["error"] = chunk["error"]
            for choice in chunk.get("choices") or ():
                piece = (choice.get("delta") or {}).get("content")
                if piece:
                    text.append(piece)
                    if meter is not None:
                        meter.piece(piece)
                final["finish_reason"] = choice.get("finish_reason") or final["finish_reason"]
            final["usage"] = chunk.get("usage") or final["usage"]
            final["timings"] = chunk.get("timings") or final["timings"]
            stopped = deadline is not None and deadline.expired()
            return stopped

        streamed = {**request, "stream": True, "stream_options": {"include_usage": True}}
        with self.lock:
            try:
                self.server.handle_chat_completions(streamed, on_chunk)
            except (ValueError, RuntimeError) as exc:
                raise LLMError(f"the local model rejected the request: {exc}") from exc
        if stopped and deadline is not None:
            raise DeadlineExceeded(deadline)
        if final["error"] is not None:
            raise LLMError(f"the local model failed: {final['error']}")
        if meter is not None:
            meter.done(int(final["usage"].get("completion_tokens") or 0))
        message = {"role": "assistant", "content": "".join(text)}
        choice = {"message": message, "finish_reason": final["finish_reason"]}
        return {"choices": [choice], "usage": final["usage"], "timings": final["timings"]}


@functools.cache
def _load(settings: _Settings) -> _LoadedModel:
    return _LoadedModel(settings)


class LocalChat(LLM):
    """Chat with a GGUF model embedded in the process (llama.cpp via ``xllamacpp``).

    Args:
        model: ``qwen2.5-coder-1.5b`` (default, assembled from its packages on first use),
            ``smollm2`` (tiny, for tests) or the path of any GGUF file.
        n_ctx: Context window in tokens.
        n_threads: CPU threads for prompt processing and generation.
        prompt_cache_mib: Memory for the states of earlier prompts, whose shared prefixes are
            reused (0: reuse only the previous request's prefix).
        lookup: Draft tokens by prompt lookup (n-gram speculative decoding); the output of
            greedy decoding is the same either way.
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
        prompt_cache_mib: int = 1024,
        lookup: bool = LOOKUP_DEFAULT,
        params: ChatParams | None = None,
    ) -> None:
        if n_ctx < 1 or n_threads < 1 or prompt_cache_mib < 0:
            raise ConfigError("n_ctx and n_threads must be >= 1, prompt_cache_mib >= 0")
        self.path = str(resolve_model(model))
        super().__init__(model, params)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.prompt_cache_mib = prompt_cache_mib
        self.lookup = lookup

    @property
    def loaded(self) -> _LoadedModel:
        return _load(
            _Settings(self.path, self.n_ctx, self.n_threads, self.prompt_cache_mib, self.lookup)
        )

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
        callback = current()
        deadline = current_deadline()
        if callback is not None or deadline is not None:
            # someone shows progress, or the reply must stop at a deadline: stream it
            meter = Meter(self.model, callback) if callback is not None else None
            response = self.loaded.stream(request, meter, deadline)
        else:
            response = self.loaded.complete(request)
        try:
            choice = response["choices"][0]
            usage = response.get("usage", {})
            text = choice["message"].get("content") or ""
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMError(f"the local model returned an unexpected response: {response}") from exc
        timings = response.get("timings") or {}
        logger.debug(
            "local call: %s prompt tokens computed, %s reused from the prompt cache; %s drafted "
            "by lookup, %s accepted",
            timings.get("prompt_n"),
            timings.get("cache_n"),
            timings.get("draft_n", 0),
            timings.get("draft_n_accepted", 0),
        )
        return ChatResult(
            text=text,
            model=self.model,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            finish_reason=choice.get("finish_reason") or "stop",
            seconds=time.perf_counter() - started,
            reused_prompt_tokens=int(timings.get("cache_n") or 0),
        )
