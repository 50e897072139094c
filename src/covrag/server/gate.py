"""The server's model lock, held under a request's deadline; a busy model is a fast 429.

The process-wide models and caches are not thread-safe, so model work runs under one lock. A
request waits for it at most ``model_wait_s`` (and never past its own deadline); a request that
does not get it is refused with :class:`ModelBusy` (429, ``Retry-After``) instead of queueing
behind work that may outlive its client. The holder runs under its
:func:`~covrag.deadline.deadline_scope`, so it gives the lock back at the first batch boundary
past its deadline.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from covrag.deadline import Deadline, deadline_scope
from covrag.errors import CovragError


class ModelBusy(CovragError):
    """The model lock was held by another request for longer than this one may wait.

    Attributes:
        retry_after_s: Whole seconds until the holder's deadline (at least 1): by then the
            model is free, whatever the holder is doing.
    """

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"the model is busy with another request; retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


class ModelGate:
    """One lock around the models, remembering the deadline of the request that holds it.

    Args:
        lock: The lock itself (shared with the LLM routes, which take it directly).
    """

    def __init__(self, lock: threading.Lock) -> None:
        self.lock = lock
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
        if not self.lock.acquire(timeout=max(0.0, min(wait_s, deadline.remaining()))):
            deadline.check()
            raise ModelBusy(self.retry_after_s())
        self._holder = deadline
        try:
            with deadline_scope(deadline):
                yield
        finally:
            self._holder = None
            self.lock.release()

    def retry_after_s(self) -> int:
        """Whole seconds until the current holder's deadline, at least 1."""
        holder = self._holder
        return 1 if holder is None else max(1, math.ceil(holder.remaining()))

    def busy(self) -> bool:
        """Whether a request holds the lock now."""
        return self.lock.locked()
