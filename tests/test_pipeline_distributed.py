"""``--ray``: the same runs, figures and indexes as the serial commands, on a real local Ray
instance (2 CPUs, started once for the module); failures name the topic; Ctrl-C cancels."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import ray
from ray import cloudpickle

from covrag.cli import main
from covrag.embed import default_encoder
from covrag.errors import ConfigError
from covrag.pipeline.distributed import RayExecutor, WorkerError, _unfinished
from covrag.pipeline.executor import SerialExecutor, identity, preloaded
from covrag.retrieve.dense import embedding_chunks, gather_embeddings
from covrag.retrieve.versions import resolve_index

# The steps below are defined here: Ray's workers get them by value, not by module name.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

DATASET = "argkp2021:dev"


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="WARNING")
    try:
        yield
    finally:
        ray.shutdown()


@pytest.fixture(autouse=True)
def fresh_encoder() -> None:
    """Each test starts from a new MiniLM encoder, as a command does: the encoder caches
    vectors by text, and a vector cached by an earlier test came from another batch."""
    default_encoder.cache_clear()


def _without_seconds(value: Any) -> Any:
    """A bench summary without its wall-clock figures (they differ from run to run)."""
    if isinstance(value, dict):
        return {k: _without_seconds(v) for k, v in value.items() if "seconds" not in k}
    if isinstance(value, list):
        return [_without_seconds(v) for v in value]
    return value


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*.trec")}


def _bench_twice(tmp_path: Path, options: list[str], runs: int) -> None:
    common = ["bench", "--dataset", DATASET, "--n-resamples", "200", "--json", *options]
    assert main([*common, "--out", str(tmp_path / "serial")]) == 0
    default_encoder.cache_clear()
    assert main([*common, "--out", str(tmp_path / "ray"), "--ray"]) == 0
    serial, distributed = _files(tmp_path / "serial"), _files(tmp_path / "ray")
    assert len(serial) == runs and serial == distributed
    summaries = [json.loads((tmp_path / f / "summary.json").read_text()) for f in ("serial", "ray")]
    assert _without_seconds(summaries[0]) == _without_seconds(summaries[1])


def test_bench_on_ray_writes_the_same_runs_and_figures(cluster: None, tmp_path: Path) -> None:
    # MiniLM embeds every pool for the dense relevance, on the workers as here.
    options = ["--selectors", "topk", "greedy-coverage", "--coverage", "gold", "--no-exact"]
    _bench_twice(tmp_path, options, runs=2)


@pytest.mark.slow
def test_bench_with_estimated_coverage_on_ray_is_the_same(cluster: None, tmp_path: Path) -> None:
    options = ["--selectors", "topk", "greedy-coverage", "mmr(lam=0.5)"]
    options += ["--coverage", "gold", "embedding", "cross-encoder"]
    _bench_twice(tmp_path, options, runs=6)  # 5 methods and the exact optimum


@pytest.mark.slow
def test_select_on_ray_writes_the_same_run_trace_and_run_file(
    cluster: None, tmp_path: Path
) -> None:
    outputs = {}
    for name, extra in (("serial", []), ("ray", ["--ray", "auto"])):
        default_encoder.cache_clear()
        folder = tmp_path / name
        folder.mkdir()
        args = ["select", "--dataset", DATASET, "--selector", "mmr(lam=0.5)", "--k", "5"]
        args += ["--coverage", "gold", "--out", str(folder / "run.trec")]
        args += ["--run-json", str(folder / "run.json")]
        assert main(args + extra) == 0
        outputs[name] = (
            (folder / "run.trec").read_bytes(),
            _without_seconds(json.loads((folder / "run.json").read_text())),
        )
    assert outputs["serial"] == outputs["ray"]


@pytest.mark.slow
def test_dense_index_on_ray_holds_the_same_embeddings(cluster: None, tmp_path: Path) -> None:
    for name, extra in (("serial", []), ("ray", ["--ray"])):
        default_encoder.cache_clear()
        args = ["index", "--corpus", DATASET, "--kind", "hybrid", "--out", str(tmp_path / name)]
        assert main(args + extra) == 0
    for part in ("passages.jsonl", "dense/embeddings.npy"):
        serial_index, ray_index = (resolve_index(tmp_path / name) for name in ("serial", "ray"))
        matches = sorted(serial_index.rglob(Path(part).name))
        assert matches, part
        for serial in matches:
            ray_file = ray_index / serial.relative_to(serial_index)
            assert serial.read_bytes() == ray_file.read_bytes(), serial


def test_embedding_chunks_put_each_vector_back_on_its_text() -> None:
    texts = ["bb", "a", "ccc", "a", "dddd"]
    chunks = embedding_chunks(texts, size=2)
    assert chunks == [["dddd", "ccc"], ["bb", "a"]]  # distinct, longest first
    vectors = [np.array([[float(len(t))] for t in chunk]) for chunk in chunks]
    assert gather_embeddings(texts, chunks, vectors)[:, 0].tolist() == [2, 1, 3, 1, 4]


def _fails_on_q2(item: str) -> str:
    if item == "q2":
        raise ValueError("no aspects in this topic")
    return item.upper()


def _rejects_q3(item: str) -> str:
    if item == "q3":
        raise KeyError("budget")
    return item


@pytest.mark.parametrize(
    ("load", "task", "error"),
    [
        pytest.param(
            preloaded(_fails_on_q2), identity, "ValueError: no aspects in this topic", id="model"
        ),
        pytest.param(
            preloaded(identity), _rejects_q3, "KeyError", id="task", marks=pytest.mark.slow
        ),
    ],
)
def test_a_failing_step_names_the_topic(
    cluster: None, load: Callable[[], Callable[[str], str]], task: Callable[[str], str], error: str
) -> None:
    items = ["q1", "q2", "q3"]
    topic = "q2" if task is identity else "q3"
    with pytest.raises(WorkerError, match=f"topic '{topic}' failed on a Ray worker: {error}"):
        RayExecutor().map(items, items, load, task)


@pytest.mark.slow
def test_ray_and_serial_executors_keep_the_order_of_the_items(cluster: None) -> None:
    items = [f"q{i}" for i in range(7)]
    done: list[str] = []
    results = RayExecutor(workers=2).map(items, items, preloaded(str.upper), identity, done.append)
    assert (
        results
        == [i.upper() for i in items]
        == SerialExecutor().map(items, items, preloaded(str.upper), identity)
    )
    assert sorted(done) == items


def _upper(item: str) -> str:
    return item.upper()


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def test_ctrl_c_cancels_only_the_tasks_not_finished(cluster: None) -> None:
    # Force-cancelling a task whose reply is arriving can crash the driver inside Ray; a finished
    # task is left alone.
    done = ray.remote(num_cpus=1)(_upper).remote("q1")
    running = ray.remote(num_cpus=1)(_sleep).remote(600)
    assert ray.get(done) == "Q1"
    assert _unfinished(ray, [done, running]) == [running]
    ray.cancel(running, force=True)
    assert _unfinished(ray, []) == []


def _interrupt(tmp_path: Path, items: int, mode: str) -> int:
    """Interrupt a map over ``items`` items in a driver process of its own, connected to the
    module's cluster (``tests/ctrl_c_child.py``); the number of items that started.

    The map must raise ``KeyboardInterrupt`` and the cluster must get its CPUs back (an event,
    waited for at most two minutes, not a time). A driver that dies of a signal instead (seen
    twice in many runs, cause unknown) or of a failed check inside Ray (seen once: "Tried to
    complete task that was not pending", Ray's race between a cancel and a task's reply) is
    reported as a warning and run once more, after the cluster has shown it reclaims a dead
    driver's work."""
    child = Path(__file__).with_name("ctrl_c_child.py")
    address = ray.get_runtime_context().gcs_address
    for attempt in range(2):
        folder = tmp_path / f"attempt{attempt}"
        folder.mkdir()
        run = subprocess.run(
            [sys.executable, str(child), address, str(folder), mode, str(items)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        ray_bug = run.returncode != 0 and "An unexpected system state has occurred" in run.stderr
        if (run.returncode >= 0 and not ray_bug) or attempt == 1:
            break
        deadline = time.monotonic() + 120
        while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert ray.available_resources().get("CPU", 0) == 2
        warnings.warn(
            f"the interrupted driver ended with {run.returncode}; "
            f"its output: {run.stderr[-1000:]!r}",
            stacklevel=2,
        )
    assert run.returncode == 0, f"the driver exited with {run.returncode}: {run.stderr[-3000:]}"
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["interrupted"], "the map did not raise KeyboardInterrupt"
    assert result["cpus"] == 2
    return int(result["started"])


def test_ctrl_c_stops_the_actor_pool(cluster: None, tmp_path: Path) -> None:
    # The workers are stopped in the middle of their items; the queued items never start (an
    # actor may have taken a second item in flight before the interrupt lands: at most 2 each).
    assert _interrupt(tmp_path, 8, "actors") <= 4


@pytest.mark.slow
def test_ctrl_c_cancels_the_running_tasks(cluster: None, tmp_path: Path) -> None:
    # The tasks would run for ten minutes: cancelled, they give their CPUs back at once.
    assert _interrupt(tmp_path, 4, "tasks") >= 1


def test_a_step_that_cannot_travel_fails_before_any_work(cluster: None) -> None:
    lock = threading.Lock()  # as an LLM client's response cache holds

    def step(item: str) -> str:
        with lock:
            return item

    with pytest.raises(ConfigError, match="cannot be sent to Ray workers.*without --ray"):
        RayExecutor().map(["q1"], ["q1"], preloaded(step), identity)
