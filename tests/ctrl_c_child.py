"""The driver of the Ctrl-C tests in ``test_pipeline_distributed.py``, run as a process of its own.

The tests interrupt a Ray map by sending SIGINT from a worker to the driver. Sent to pytest's own
process, a signal that lands at the wrong moment could end the whole test run without a word;
sent to this process, the worst it can do is end this process, which the test then reports.

    python tests/ctrl_c_child.py RAY_ADDRESS FOLDER actors|tasks ITEMS

``actors``: the model step (on the actor pool) sends the interrupt; ``tasks``: the task step
does. The first item to start sends it, once; every item leaves a mark in FOLDER; the others
would run for ten minutes. Prints one JSON line: whether the map raised ``KeyboardInterrupt``,
the cluster's free CPUs once they are back (waiting at most two minutes) and how many items
started.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path


def interrupt_the_driver(item: tuple[int, str, str]) -> str:
    driver, folder, label = item
    Path(folder, label).touch()
    try:
        os.close(os.open(Path(folder, "interrupted"), os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        time.sleep(600)
        return label
    os.kill(driver, signal.SIGINT)
    return label


def main(argv: list[str]) -> int:
    # A process started with SIGINT ignored (a background job of a non-interactive shell, as CI
    # runs) keeps it ignored, and Python then installs no handler: install Python's own.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    address, folder, mode, items = argv
    import ray

    from covrag.pipeline.distributed import RayExecutor
    from covrag.pipeline.executor import identity, preloaded

    ray.init(address=address, log_to_driver=False, logging_level="WARNING")
    work = [(os.getpid(), folder, f"q{i}") for i in range(int(items))]
    if mode == "actors":
        load, task = preloaded(interrupt_the_driver), identity
    else:
        load, task = preloaded(identity), interrupt_the_driver
    interrupted = False
    try:
        RayExecutor(workers=2).map(work, [w[2] for w in work], load, task)
    except KeyboardInterrupt:
        interrupted = True
    deadline = time.monotonic() + 120
    while ray.available_resources().get("CPU", 0) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    started = len([p for p in Path(folder).iterdir() if p.name.startswith("q")])
    cpus = ray.available_resources().get("CPU", 0)
    print(json.dumps({"interrupted": interrupted, "cpus": cpus, "started": started}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
