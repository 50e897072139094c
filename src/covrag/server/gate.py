"""The server's model lock, held under a request's deadline; a busy model is a fast 429.

The process-wide models and caches are not thread-safe, so model work runs under one lock. A
request waits for it at most ``model_wait_s`` (and never past its own deadline); a request that
does not get it is refused with :class:`ModelBusy` (429, ``Retry-After``) instead of queueing
behind work that may outlive its client. The holder runs under its
:func:`~covrag.deadline.deadline_scope`, so it gives the lock back at the first batch boundary
(or LLM token) past its deadline.

Two gates: the models (encoders, cross-encoder), which ``/v1/select`` and the scoring steps of
the LLM routes take, and the LLM, which ``/v1/plan`` and ``/v1/answer`` take for their whole run
(one LLM request at a time; the embedded model runs one at a time anyway). :func:`run_gated`
runs a request's work on the thread pool under its deadline.
"""

from __future__ import annotations

import asyncio
import functools
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Executor
from contextlib import contextmanager
from typing import TypeVar

from covrag.deadline import Deadline, DeadlineExceeded, current_deadline, deadline_scope
from covrag.errors import CovragError
from covrag.server.metrics import metrics

T = TypeVar("T")

#: Seconds past a request's deadline at which the event loop answers 504 even though the work
#: has not reached a batch boundary (selection, tokenising); the model work itself stops at its
#: first batch past the deadline and answers first.
BACKSTOP_S = 2.0

#: Seconds between two looks at whether a client waiting for model work is still connected.
POLL_S = 0.25


class ModelBusy(CovragError):
    """The model lock was held by another request for longer than this one may wait.

    Attributes:
        retry_after_s: Whole seconds until the holder's deadline (at least 1): by then the
            model is free, whatever the holder is doing.
    """

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"the model is busy with another request; retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


class ClientGone(CovragError):
    """The client closed the connection before its answer; its work was stopped."""

    def __init__(self) -> None:
        super().__init__("the client went away before its answer; its work was stopped")


class ModelGate:
    """One lock around the models, remembering the deadline of the request that holds it.

    Args:
        lock: The lock itself.
        name: The gate's ``lock`` label in the metrics (``model``, ``llm``).
    """

    def __init__(self, lock: threading.Lock, name: str = "model") -> None:
        self.lock = lock
        self.name = name
        self._holder: Deadline | None = None

    @contextmanager
    def hold(self, deadline: Deadline, wait_s: float) -> Iterator[None]:
        """Hold the lock and run the block under ``deadline``.

        Raises:
            DeadlineExceeded: ``deadline`` has passed (before the lock was taken, or at a batch
                boundary of the work inside).
            ModelBusy: The lock was not free within ``wait_s`` seconds (or before the deadline).
        """
        deadline.check()  # queued past its deadline: do no work at all
        if not self._acquire(max(0.0, min(wait_s, deadline.remaining(), threading.TIMEOUT_MAX))):
            deadline.check()
            raise ModelBusy(self.retry_after_s())
        self._holder = deadline
        try:
            with deadline_scope(deadline):
                yield
        finally:
            self._holder = None
            self.lock.release()

    def _acquire(self, timeout: float) -> bool:
        """The lock within ``timeout`` seconds, counted in the queue-depth gauge and the wait
        histogram while waiting."""
        if self.lock.acquire(blocking=False):
            metrics().lock_wait.labels(self.name).observe(0.0)
            return True
        waiting = metrics().waiting.labels(self.name)
        started = time.perf_counter()
        waiting.inc()
        try:
            return self.lock.acquire(timeout=timeout)
        finally:
            waiting.dec()
            metrics().lock_wait.labels(self.name).observe(time.perf_counter() - started)

    @contextmanager
    def step(self) -> Iterator[None]:
        """Hold the lock for one step of a request that is already running (under its
        deadline): waited for until that deadline, not ``model_wait_s``, since the request has
        been admitted; a holder gives the lock back by its own deadline."""
        deadline = current_deadline() or Deadline.after(threading.TIMEOUT_MAX)
        with self.hold(deadline, deadline.remaining()):
            yield

    def retry_after_s(self) -> int:
        """Whole seconds until the current holder's deadline, at least 1."""
        holder = self._holder
        return 1 if holder is None else max(1, math.ceil(holder.remaining()))

    def busy(self) -> bool:
        """Whether a request holds the lock now."""
        return self.lock.locked()


async def run_gated(
    executor: Executor,
    work: Callable[[Deadline], T],
    timeout_s: float,
    disconnected: Callable[[], Awaitable[bool]] | None = None,
) -> T:
    """``work(deadline)`` on ``executor``, under a deadline ``timeout_s`` from now.

    The deadline starts now, so time queued for a thread counts; the work raises
    DeadlineExceeded at its first batch boundary past it (having given its locks back), and the
    event loop raises it by itself ``BACKSTOP_S`` later if the work has not. With
    ``disconnected`` (the request's ``is_disconnected``), the client is looked at every
    ``POLL_S`` seconds; once it has gone, the deadline is cancelled, so the work stops at its
    next check (an LLM token, a scoring batch) and gives its locks back.

    Raises:
        DeadlineExceeded: The deadline passed (the app answers 504).
        ModelBusy: A lock was not free within the wait (429).
        ClientGone: The client went away; the work was stopped (499, which nobody reads).
    """
    deadline = Deadline.after(timeout_s)
    future = asyncio.get_running_loop().run_in_executor(executor, functools.partial(work, deadline))
    limit = time.monotonic() + timeout_s + BACKSTOP_S
    try:
        while disconnected is not None:
            done, _ = await asyncio.wait(
                {future}, timeout=max(0.0, min(POLL_S, limit - time.monotonic()))
            )
            if done:
                return future.result()
            if await disconnected():
                deadline.cancel()
                stopped, _ = await asyncio.wait({future}, timeout=BACKSTOP_S)
                if stopped:
                    future.exception()  # retrieved: the work's own end (DeadlineExceeded) is moot
                raise ClientGone()
            if time.monotonic() >= limit:
                raise TimeoutError
        return await asyncio.wait_for(future, timeout_s + BACKSTOP_S)
    except TimeoutError:
        raise DeadlineExceeded(deadline) from None
