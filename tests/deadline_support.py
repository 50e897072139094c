"""Helpers for tests of model work that checks its deadline between batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

from covrag.deadline import Deadline, DeadlineExceeded, deadline_scope, watch_checks

T = TypeVar("T")


def checks_made(run: Callable[[], T]) -> tuple[T, int]:
    """``run()``'s result and how many deadline checks it made under a far deadline."""
    seen: list[Deadline] = []
    with deadline_scope(Deadline.after(600.0)), watch_checks(seen.append):
        result = run()
    return result, len(seen)


def assert_stops_at_a_check(run: Callable[[], object]) -> None:
    """``run()`` raises DeadlineExceeded when its deadline is cancelled at its first check."""
    with (
        deadline_scope(Deadline.after(600.0)) as deadline,
        watch_checks(lambda _: deadline.cancel()),
        pytest.raises(DeadlineExceeded),
    ):
        run()
