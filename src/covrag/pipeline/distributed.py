"""Batch work on a Ray cluster: the one module of covrag that imports ``ray``.

:class:`RayExecutor` runs the two steps of an :class:`~covrag.pipeline.executor.Executor`:

- the *model step* (embedding, coverage scoring) through Ray Data ``map_batches`` on an actor
  pool (``ActorPoolStrategy``): each actor calls the loader once, so a model is loaded once per
  worker and reused for every item it is given;
- the *task step* (a topic's preparation and selection) as one Ray task per item.

Results come back in the items' order, so output files never depend on scheduling. Each actor
uses the driver's count of torch threads: a matrix product summed over another number of threads
rounds differently, and the run would then differ from the serial one in the last bits.

A step that raises surfaces as a :class:`WorkerError` naming the item (the topic id) and the
original error. Ctrl-C (``KeyboardInterrupt``) on the driver cancels the outstanding tasks and
stops the actor pool (its actors are named after the run, to be found) before it propagates.
Example (starts Ray, so not run as a doctest)::

    with RayExecutor.connect("auto") as executor:
        result = run_bench(dataset, topics, methods, budgets, executor=executor)
"""

from __future__ import annotations

import contextlib
import functools
import logging
import signal
import threading
import traceback
import uuid
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from covrag.errors import ConfigError, CovragError, MissingExtraError

logger = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M")
R = TypeVar("R")

#: ``--ray`` with no address: start a Ray instance on this machine for the command.
LOCAL = "local"
_WAIT_SECONDS = 0.5  # how long ray.wait blocks at a time, so Ctrl-C is seen between waits


class WorkerError(CovragError, RuntimeError):
    """A step failed on a Ray worker; names the item (topic) and the original error."""

    def __init__(self, label: str, error: str, details: str = "", what: str = "topic") -> None:
        super().__init__(f"{what} {label!r} failed on a Ray worker: {error}")
        self.label = label
        self.error = error
        self.details = details


@dataclass(frozen=True)
class _Failure:
    """What a worker returns instead of a result when its step raised."""

    error: str
    details: str


def _ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401  (Ray Data comes with ray[data])
    except ImportError as exc:
        raise MissingExtraError("ray[data]", "ray") from exc
    return ray


def _pickle() -> Any:
    """Ray's cloudpickle: it pickles functions and classes by value where needed."""
    from ray import cloudpickle

    return cloudpickle


def _guarded(step: Callable[[T], R], item: T) -> R | _Failure:
    try:
        return step(item)
    except Exception as exc:  # reported to the driver, which raises WorkerError
        return _Failure(f"{type(exc).__name__}: {exc}", traceback.format_exc())


def _torch_threads() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return int(torch.get_num_threads())


def _actor_name(pool: str) -> dict[str, str]:
    """A unique name for an actor of the pool, so that Ctrl-C can find and stop it."""
    return {"name": pool + uuid.uuid4().hex}


@contextlib.contextmanager
def _interrupt_after() -> Iterator[None]:
    """Hold a Ctrl-C that arrives inside the block until the block is done, then raise it.

    Without this, an interrupt landing between Ray's submission of a task and the driver's
    record of its reference leaves that task running, unseen by the cancellation."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach only the main thread
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: received.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received and callable(previous):  # Python's own handler raises KeyboardInterrupt
        previous(signal.SIGINT, None)
    elif received and previous == signal.SIG_DFL:
        raise KeyboardInterrupt


def _unfinished(ray: Any, refs: Iterable[Any]) -> list[Any]:
    """The tasks of ``refs`` not finished yet: the ones to cancel.

    Force-cancelling a task whose reply is arriving can crash the driver inside Ray ("Tried to
    complete task that was not pending", a race between cancellation and the task's reply in Ray's
    core worker); a finished task has nothing to cancel, so it is left out."""
    refs = list(refs)
    if not refs:
        return []
    ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0, fetch_local=False)
    finished = set(ready)
    return [ref for ref in refs if ref not in finished]


def _kill_actors(ray: Any, pool: str) -> None:
    """Stop the pool's actors at once, the item in hand included (Ray Data, interrupted, lets
    them finish it and holds their CPUs while the interrupted run's objects are alive)."""
    for name in ray.util.list_named_actors():
        if name.startswith(pool):
            with contextlib.suppress(ValueError):  # gone already
                ray.kill(ray.get_actor(name))


class _ModelActor:
    """One worker of the model step's actor pool: loads the step once, then maps batches."""

    def __init__(self, loader: bytes, threads: int | None) -> None:
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        self._step = _pickle().loads(loader)()

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        pickle = _pickle()
        results = [pickle.dumps(_guarded(self._step, pickle.loads(blob))) for blob in batch["item"]]
        return {"index": batch["index"], "result": np.array(results, dtype=object)}


def _portable(step: Any) -> bytes:
    """``step`` pickled for the workers, or a ConfigError saying what cannot travel."""
    try:
        blob: bytes = _pickle().dumps(step)
    except (TypeError, AttributeError, ValueError) as exc:
        raise ConfigError(
            f"this work cannot be sent to Ray workers ({exc}): a part of it holds what lives "
            "only in this process, such as an LLM client and its response cache (--aspects "
            "llm or pool); run it without --ray"
        ) from None
    return blob


def _run_task(task: bytes, value: M | _Failure) -> R | _Failure:
    if isinstance(value, _Failure):
        return value
    step: Callable[[M], R] = _pickle().loads(task)
    return _guarded(step, value)


class RayExecutor:
    """Runs per-item work on a Ray cluster (see the module docstring).

    Args:
        workers: Actors in the model step's pool; None for one per CPU of the cluster.

    Use it within :meth:`connect`, or in a process already connected (``ray.init``).
    """

    def __init__(self, *, workers: int | None = None) -> None:
        self.workers = workers

    def __repr__(self) -> str:
        return f"RayExecutor(workers={self.workers!r})"

    @classmethod
    @contextlib.contextmanager
    def connect(cls, address: str = LOCAL, *, workers: int | None = None) -> Iterator[RayExecutor]:
        """An executor on the Ray cluster at ``address`` (``auto``: the cluster this machine
        belongs to; ``local``: a new instance on this machine), disconnected at the end.

        When this process is already connected to Ray, that connection is used and kept.
        """
        ray = _ray()
        started = not ray.is_initialized()
        if started:
            ray.init(
                address=None if address == LOCAL else address,
                include_dashboard=False,
                logging_level=logging.WARNING,
                log_to_driver=False,
            )
        executor = cls(workers=workers)
        try:
            yield executor
        finally:
            if started:
                ray.shutdown()

    def map(
        self,
        items: Sequence[T],
        labels: Sequence[str],
        load: Callable[[], Callable[[T], M]],
        task: Callable[[M], R],
        progress: Callable[[str], None] | None = None,
        what: str = "topic",
    ) -> list[R]:
        """``task(load()(item))`` for every item, on the cluster; results in item order."""
        if len(items) != len(labels):
            raise ValueError(f"{len(items)} items but {len(labels)} labels")
        if not items:
            return []
        ray = _ray()
        pending: dict[Any, int] = {}
        pool = f"covrag-model-{uuid.uuid4().hex[:12]}-"  # the names of this map's actors
        outputs = self._model_outputs(items, load, pool)
        try:
            remote_task = ray.remote(num_cpus=1)(_run_task)
            task_ref = ray.put(_portable(task))
            for index, value in outputs:
                with _interrupt_after():  # a task submitted is a task recorded, to be cancelled
                    pending[remote_task.remote(task_ref, value)] = index
            return self._gather(ray, pending, labels, progress, what)
        except BaseException:
            for ref in _unfinished(ray, pending):
                ray.cancel(ref, force=True)
            _kill_actors(ray, pool)
            raise
        finally:
            outputs.close()  # stops the actor pool now, not when the generator is collected

    def _model_outputs(
        self, items: Sequence[T], load: Callable[[], Callable[[T], M]], pool: str
    ) -> Generator[tuple[int, M | _Failure], None, None]:
        """The model step of every item on an actor pool, as each batch comes back."""
        ray, pickle = _ray(), _pickle()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        size = max(1, min(self.workers or cpus, len(items)))
        rows = [{"index": i, "item": pickle.dumps(item)} for i, item in enumerate(items)]
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False  # progress is the caller's (the CLI's bar)
        context.print_on_execution_start = False
        dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
            _ModelActor,
            fn_constructor_args=(_portable(load), _torch_threads()),
            batch_size=1,
            batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=size),
            num_cpus=1,
            max_restarts=0,  # a lost worker fails the run, naming the topic, instead of retrying
            ray_remote_args_fn=functools.partial(_actor_name, pool),
        )
        batches = iter(dataset.iter_batches(batch_size=None, batch_format="numpy"))
        try:
            for batch in batches:
                for index, blob in zip(batch["index"], batch["result"], strict=True):
                    yield int(index), pickle.loads(blob)
        finally:
            close = getattr(batches, "close", None)
            if close is not None:  # a generator: closing it shuts Ray Data's executor down
                close()

    def _gather(
        self,
        ray: Any,
        pending: dict[Any, int],
        labels: Sequence[str],
        progress: Callable[[str], None] | None,
        what: str,
    ) -> list[R]:
        """Wait for every task; raise the first failure, naming its item."""
        results: dict[int, R] = {}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=_WAIT_SECONDS)
            for ref in ready:
                index = pending.pop(ref)
                try:
                    value = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    raise WorkerError(labels[index], error, what=what) from None
                if isinstance(value, _Failure):
                    raise WorkerError(labels[index], value.error, value.details, what)
                results[index] = value
                if progress is not None:
                    progress(labels[index])
        return [results[i] for i in range(len(results))]
