"""An answer as it is made: stage events, the writer's tokens, then the answer, as an iterator.

:class:`EventStream` runs a pipeline (``ask``, or the HTTP service's ``/v1/answer``) in a worker
thread and hands out what it reports, in order: :class:`PlannedEvent` (the aspects),
:class:`RetrievedEvent` (the candidate passages), :class:`SelectedEvent` (the context), one
:class:`TokenEvent` per piece of text the LLM writes while generating, and last
:class:`AnswerEvent` with the pipeline's own result. A failure is raised where it would have
been without the stream, at the point of the iteration where it happened.

The work runs under a :class:`~covrag.deadline.Deadline`; closing the stream (leaving a ``for``
loop early, ``close()``, the end of a ``with`` block) cancels it, so the work stops at its next
check (an LLM token, a scoring batch) and gives its locks back. Tokens come from the streaming
backends through :func:`covrag.llm.progress.reporting`: the embedded model, the transformers
backend and OpenAI-compatible endpoints stream; a reply served from the response cache is
written as no tokens, and the answer event still has it.

Example:
    >>> stream = EventStream(lambda sink: sink.emit(SelectedEvent(("p1",))) or "done")
    >>> [type(e).__name__ for e in stream]
    ['SelectedEvent', 'AnswerEvent']
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import Executor
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Generic, TypeVar

from covrag.deadline import Deadline, deadline_scope
from covrag.llm.progress import TokenProgress, reporting
from covrag.types import Aspect

R = TypeVar("R")


@dataclass(frozen=True)
class PlannedEvent:
    """The aspects the answer is to cover (planned, or the request's own)."""

    aspects: tuple[Aspect, ...]
    name: ClassVar[str] = "planned"

    def as_dict(self) -> dict[str, Any]:
        return {
            "aspects": [{"id": a.id, "text": a.text, "polarity": a.polarity} for a in self.aspects]
        }


@dataclass(frozen=True)
class RetrievedEvent:
    """The candidate passages (the pool searched for, or the request's passages) and the
    queries that found them (none when the passages were given)."""

    passage_ids: tuple[str, ...]
    queries: tuple[str, ...] = ()
    name: ClassVar[str] = "retrieved"

    def as_dict(self) -> dict[str, Any]:
        return {"passage_ids": list(self.passage_ids), "queries": list(self.queries)}


@dataclass(frozen=True)
class SelectedEvent:
    """The context the writer gets, in prompt order; ``refusal`` says why it is empty."""

    passage_ids: tuple[str, ...]
    refusal: str = ""
    name: ClassVar[str] = "selected"

    def as_dict(self) -> dict[str, Any]:
        return {"passage_ids": list(self.passage_ids), "refusal": self.refusal}


@dataclass(frozen=True)
class TokenEvent:
    """A piece of text the LLM wrote; ``step`` is the generation step writing it: ``write``
    (the first draft), ``critique 1``, ``rewrite 1``, ... (a rewrite's tokens replace the
    draft's; a critique's are its JSON)."""

    text: str
    step: str = "write"
    name: ClassVar[str] = "token"

    def as_dict(self) -> dict[str, Any]:
        return {"text": self.text, "step": self.step}


@dataclass(frozen=True)
class AnswerEvent(Generic[R]):
    """The pipeline's result (``AskResult`` for ``ask``), always the last event."""

    result: R
    name: ClassVar[str] = "answer"


Event = PlannedEvent | RetrievedEvent | SelectedEvent | TokenEvent
"""What a pipeline reports while it runs (:meth:`EventSink.emit`)."""


def next_step(done: str) -> str:
    """The generation step after ``done`` (``CritiqueRewriteGenerator`` reports each step once
    it is done): write -> critique 1 -> rewrite 1 -> critique 2 -> ..."""
    kind, _, number = done.partition(" ")
    if kind == "critique":
        return f"rewrite {number}"
    return f"critique {int(number or 0) + 1}"


class EventSink:
    """What a running pipeline reports to: :meth:`emit` its stage events, and :meth:`stage`
    (a ``StageCallback``) where it is, so the LLM's tokens are forwarded while it generates."""

    def __init__(self, put: Callable[[object], None]) -> None:
        self._put = put
        self._step: str | None = None

    def emit(self, event: Event) -> None:
        self._put(event)

    def stage(self, name: str) -> None:
        """``generate`` starts forwarding tokens (the step ``write``); each generation step
        reported done moves to the next."""
        if name == "generate":
            self._step = "write"
        elif self._step is not None:
            self._step = next_step(name)

    def token(self, progress: TokenProgress) -> None:
        """A :func:`~covrag.llm.progress.reporting` callback: pieces written while
        generating become :class:`TokenEvent`."""
        if progress.text and self._step is not None:
            self._put(TokenEvent(progress.text, self._step))


@dataclass(frozen=True)
class _Failed:
    error: BaseException


class EventStream(Generic[R]):
    """The events of ``run(sink)`` as it runs in a worker thread, then its result.

    Args:
        run: The pipeline; it reports to the :class:`EventSink` it is given and returns the
            result that the last event carries.
        deadline: The work's deadline (cancelled on :meth:`close`); none: one that never
            passes.

    Iterate it once (``for event in stream``) or, in async code, ``async for``; each starts
    the work when it is not started (:meth:`start`, to run it on an executor of your own). The
    work runs in a copy of the caller's context (its context variables: a progress callback,
    logging context).
    """

    def __init__(self, run: Callable[[EventSink], R], deadline: Deadline | None = None) -> None:
        self.run = run
        self.deadline = deadline or Deadline.after(math.inf)
        self._queue: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._wake: Callable[[], None] | None = None
        self._started = False

    @classmethod
    def of(cls, run: Callable[..., R], /, *args: Any, **kwargs: Any) -> EventStream[R]:
        """The events of ``run(*args, **kwargs)``, a pipeline that reports through its
        ``on_stage`` and ``on_event`` callbacks (``ask``): they are the stream's sink's."""

        def reported(sink: EventSink) -> R:
            return run(*args, on_stage=sink.stage, on_event=sink.emit, **kwargs)

        return cls(reported)

    def start(self, executor: Executor | None = None) -> EventStream[R]:
        """Start the work on ``executor`` (none: a thread of its own); starting twice does
        nothing."""
        if not self._started:
            self._started = True
            context = contextvars.copy_context()
            if executor is None:
                name = "covrag-stream"
                threading.Thread(
                    target=context.run, args=(self._work,), name=name, daemon=True
                ).start()
            else:
                executor.submit(context.run, self._work)
        return self

    def close(self) -> None:
        """Cancel the work: it stops at its next deadline check. Returns at once."""
        self.deadline.cancel()

    def _put(self, item: object) -> None:
        self._queue.put(item)
        wake = self._wake
        if wake is not None:
            wake()

    def _work(self) -> None:
        sink = EventSink(self._put)
        try:
            with deadline_scope(self.deadline), reporting(sink.token):
                result = self.run(sink)
        except BaseException as exc:  # handed to the reader, who raises it
            self._put(_Failed(exc))
        else:
            self._put(AnswerEvent(result))

    def __iter__(self) -> Iterator[Event | AnswerEvent[R]]:
        self.start()
        try:
            while True:
                item = self._queue.get()
                if isinstance(item, _Failed):
                    raise item.error
                yield item  # type: ignore[misc]
                if isinstance(item, AnswerEvent):
                    return
        finally:
            self.close()

    async def __aiter__(self) -> AsyncIterator[Event | AnswerEvent[R]]:
        loop = asyncio.get_running_loop()
        ready = asyncio.Event()

        def wake() -> None:
            if not loop.is_closed():
                loop.call_soon_threadsafe(ready.set)

        self._wake = wake
        self.start()
        try:
            while True:
                ready.clear()
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    await ready.wait()
                    continue
                if isinstance(item, _Failed):
                    raise item.error
                yield item  # type: ignore[misc]
                if isinstance(item, AnswerEvent):
                    return
        finally:
            self._wake = None
            self.close()

    def __enter__(self) -> EventStream[R]:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
