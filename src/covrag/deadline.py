"""Cooperative deadlines for long model work: checked between batches, never by killing a thread.

A caller that must bound how long model work may run (the HTTP service, for one request) opens a
:func:`deadline_scope`; the batched loops of the models (the cross-encoder's pair batches, the
bi-encoder's text chunks) call :func:`check_deadline` between batches, which raises
:class:`DeadlineExceeded` once the deadline has passed. The exception unwinds through the caller's
``with`` blocks, so a lock held around the work is released at the next batch boundary instead of
when the work would have finished. Outside a scope :func:`check_deadline` does nothing, so library
results and speed are unchanged.

Example:
    >>> with deadline_scope(Deadline.after(30.0)):
    ...     check_deadline()  # well within 30 s: returns
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from covrag.errors import CovragError


class DeadlineExceeded(CovragError):
    """Model work was stopped at a batch boundary because its deadline had passed."""

    def __init__(self, deadline: Deadline) -> None:
        super().__init__(f"stopped at the {deadline.seconds:g} s deadline")
        self.deadline = deadline


@dataclass
class Deadline:
    """A point on the monotonic clock after which work should stop.

    Attributes:
        expires_at: ``time.monotonic()`` value of the deadline.
        seconds: The length it was set with (for messages).
    """

    expires_at: float
    seconds: float

    def cancel(self) -> None:
        """Stop the work at its next batch boundary, as if the deadline had passed."""
        self.expires_at = -math.inf

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        """The deadline ``seconds`` from now."""
        return cls(time.monotonic() + seconds, seconds)

    def remaining(self) -> float:
        """Seconds left (negative once passed)."""
        return self.expires_at - time.monotonic()

    def expired(self) -> bool:
        return self.remaining() <= 0.0

    def check(self) -> None:
        """Raise :class:`DeadlineExceeded` once the deadline has passed."""
        if self.expired():
            raise DeadlineExceeded(self)


_CURRENT: ContextVar[Deadline | None] = ContextVar("covrag_deadline", default=None)
_WATCHERS: list[Callable[[Deadline], None]] = []


def current_deadline() -> Deadline | None:
    """The deadline of the innermost :func:`deadline_scope` (None outside any)."""
    return _CURRENT.get()


@contextmanager
def deadline_scope(deadline: Deadline) -> Iterator[Deadline]:
    """Run the block under ``deadline``: model loops inside it stop once it has passed.

    The scope is a context variable, so it holds for the thread (or task) that opened it and
    nothing else; the HTTP service opens one per request inside the worker thread.
    """
    token = _CURRENT.set(deadline)
    try:
        yield deadline
    finally:
        _CURRENT.reset(token)


def check_deadline() -> None:
    """A batch boundary: raise :class:`DeadlineExceeded` when the current deadline has passed.

    Does nothing outside a :func:`deadline_scope`. Each watcher (:func:`watch_checks`) is called
    first, with the current deadline.
    """
    deadline = _CURRENT.get()
    if deadline is None:
        return
    for watcher in tuple(_WATCHERS):
        watcher(deadline)
    deadline.check()


@contextmanager
def watch_checks(watcher: Callable[[Deadline], None]) -> Iterator[None]:
    """Call ``watcher(deadline)`` at every batch boundary under a deadline, in any thread.

    For tests and progress reporting: a test can learn that a request is inside the model work
    (and hold it there) without sleeping.
    """
    _WATCHERS.append(watcher)
    try:
        yield
    finally:
        _WATCHERS.remove(watcher)
