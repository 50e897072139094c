"""Where per-topic work runs: in this process, or on a Ray cluster (:mod:`.distributed`).

Batch commands split each topic's work in two steps: the *model* step (embedding, coverage
scoring, aspect sources: whatever loads a model) and the *task* step (assembling the selector's
input and selecting, pure numpy). An :class:`Executor` runs both steps over a list of items and
returns the results in the items' order, whatever order they finished in.

The model step is given as a *loader*: a picklable function that loads what the step needs and
returns the function applied to each item. :class:`SerialExecutor` calls it once; the Ray executor
calls it once per worker of an actor pool, so a model is loaded once per worker, not per item.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

T = TypeVar("T")
M = TypeVar("M")
R = TypeVar("R")


class Executor(Protocol):
    """Runs the model step and then the task step of every item; results in item order."""

    def map(
        self,
        items: Sequence[T],
        labels: Sequence[str],
        load: Callable[[], Callable[[T], M]],
        task: Callable[[M], R],
        progress: Callable[[str], None] | None = None,
        what: str = "topic",
    ) -> list[R]:
        """``task(load()(item))`` for every item, in the order of ``items``.

        Args:
            items: What to work on (topics, chunks of texts); picklable for a cluster.
            labels: One name per item for progress and errors (the topic id).
            load: Returns the model step, once per process or worker.
            task: The task step, applied to each model output.
            progress: Called with an item's label once its task is done.
            what: What an item is, for error messages (``topic 'q1' failed ...``).
        """
        ...


class SerialExecutor:
    """Everything in this process, one item after the other (the default)."""

    def __repr__(self) -> str:
        return "SerialExecutor()"

    def map(
        self,
        items: Sequence[T],
        labels: Sequence[str],
        load: Callable[[], Callable[[T], M]],
        task: Callable[[M], R],
        progress: Callable[[str], None] | None = None,
        what: str = "topic",
    ) -> list[R]:
        step = load()
        results = []
        for item, label in zip(items, labels, strict=True):
            results.append(task(step(item)))
            if progress is not None:
                progress(label)
        return results


def identity(value: R) -> R:
    """A task step that keeps the model step's output as it is."""
    return value


def preloaded(step: Callable[[T], M]) -> Callable[[], Callable[[T], M]]:
    """A loader for a step that loads its models itself, on first use (picklable)."""
    return functools.partial(identity, step)
