"""Live progress of LLM calls: tokens written so far and tokens per second, as they stream.

A slow model (the embedded 1.5B model writes ~17 tokens/s on two cores) leaves a user looking at a
stage that seems stuck for a minute. A caller that wants to show progress wraps its work in
:func:`reporting` with a callback; while it is active, backends that can stream (the embedded
llama.cpp model, the transformers backend, OpenAI-compatible endpoints) ask for a streamed reply and
call the callback with a :class:`TokenProgress` (with the piece of text written) as tokens arrive
and once more when the call ends. Without a callback nothing streams and nothing changes. Library
code never prints: the CLI's callback draws the figures (``covrag ask``), and
:class:`covrag.pipeline.EventStream` forwards the pieces as token events; a reply served from the
response cache streams nothing.

The callback is held in a :class:`contextvars.ContextVar`, so it follows the caller's thread and
no object is reconfigured; a backend that works in a thread of its own reads it first, in the
caller's thread (:func:`current`), and hands it over.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class TokenProgress:
    """Where one streaming call stands.

    Attributes:
        model: The model writing.
        tokens: Tokens written so far (streamed pieces until the end; the backend's own count
            of completion tokens in the last report).
        seconds: Seconds since the call started (the prompt's processing included).
        done: Whether the call has ended (the last report of a call).
        text: The piece of the reply just written (empty in the last report): the pieces of a
            call, joined, are its reply.
    """

    model: str
    tokens: int
    seconds: float
    done: bool = False
    text: str = ""

    @property
    def tokens_per_second(self) -> float:
        """Tokens written per second since the call started (0 before the first)."""
        return self.tokens / self.seconds if self.seconds > 0 else 0.0


#: Called with each :class:`TokenProgress` of a streaming call.
ProgressCallback = Callable[[TokenProgress], None]

_CALLBACK: contextvars.ContextVar[ProgressCallback | None] = contextvars.ContextVar(
    "covrag_llm_progress", default=None
)


@contextlib.contextmanager
def reporting(callback: ProgressCallback) -> Iterator[None]:
    """Within the block, streaming backends report each call's tokens to ``callback``.

    Example:
        >>> seen = []
        >>> with reporting(seen.append):
        ...     current() is not None
        True
        >>> current() is None
        True
    """
    token = _CALLBACK.set(callback)
    try:
        yield
    finally:
        _CALLBACK.reset(token)


def current() -> ProgressCallback | None:
    """The callback of the enclosing :func:`reporting` block, or None."""
    return _CALLBACK.get()


class Meter:
    """Counts the pieces of one streaming call and reports them (used by backends)."""

    def __init__(self, model: str, callback: ProgressCallback) -> None:
        self.model = model
        self.callback = callback
        self.tokens = 0
        self.started = time.perf_counter()

    def piece(self, text: str = "") -> None:
        """One more streamed piece of text (a token, for llama.cpp and most servers)."""
        self.tokens += 1
        self.callback(TokenProgress(self.model, self.tokens, self._seconds(), text=text))

    def done(self, tokens: int | None = None) -> None:
        """The call ended; ``tokens`` is the backend's own count when it gave one."""
        final = self.tokens if not tokens else tokens
        self.callback(TokenProgress(self.model, final, self._seconds(), done=True))

    def _seconds(self) -> float:
        return time.perf_counter() - self.started
