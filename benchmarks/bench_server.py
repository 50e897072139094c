"""Load test of ``covrag serve``: many ``POST /v1/select`` requests from concurrent clients.

Run from the repository root::

    .venv/bin/python benchmarks/bench_server.py [--requests 2000] [--concurrency 8] \
        [--processes 1 2]

For each count of ``--processes`` (``$COVRAG_SERVE_PROCESSES``: replicas on one port), starts
``covrag serve`` in a child process on a free loopback port, waits until every process has
started, then sends ``--requests`` requests from ``--concurrency`` httpx async clients (one
keep-alive connection each; the kernel gives each connection to one process). Each request is a
real Perspectrum dev topic (its claim, up to ``--passages`` passages and its gold perspectives as
the aspects) with greedy coverage at k=5 and the server's default coverage estimator (the shipped
cross-encoder). Each topic is first sent once, sequentially (cold: the model scores every pair;
reported apart), then every topic three times per process from the concurrent clients, each on a
new connection (untimed, so each process's pair cache holds the topics; the server waits up to
60 s for its model rather than answer 429), then the timed run rotates over them, so the
estimator's pair cache answers and the figures measure the service itself: HTTP, validation,
token counting, selection, JSON. Prints the load average and a markdown table per run: errors
(must be 0), latency percentiles, requests per second, the resident memory of each serving
process after the run and how many requests each served. Client and server share the machine.
Exits non-zero when any request failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from covrag.data import load_dataset


def payloads(n_topics: int, max_passages: int) -> list[dict[str, Any]]:
    topics = [t for t in load_dataset("perspectrum:dev") if len(t.passages) >= 5][:n_topics]
    return [
        {
            "query_id": t.query_id,
            "query": t.query,
            "passages": [{"id": p.id, "text": p.text} for p in t.passages[:max_passages]],
            "aspects": [{"id": a.id, "text": a.text} for a in t.aspects],
            "selector": "greedy-coverage",
            "k": 5,
        }
        for t in topics
    ]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``covrag serve`` with ``processes`` processes; its log is read on a thread."""

    def __init__(self, port: int, processes: int, workers: int, coverage: str) -> None:
        command = [sys.executable, "-m", "covrag.cli", "serve", "--port", str(port)]
        command += ["--workers", str(workers), "--coverage", coverage, "--model-wait", "60"]
        env = {**os.environ, "COVRAG_SERVE_PROCESSES": str(processes)}
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.started = threading.Semaphore(0)
        self.pids: Counter[int] = Counter()  # requests each process served (access log)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("{"):
                record = json.loads(line)
                if record["route"] == "/v1/select":
                    self.pids[record["pid"]] += 1
            elif "Application startup complete" in line:
                self.started.release()
            elif "ERROR" in line or "Traceback" in line:
                print(line, end="", file=sys.stderr)

    def wait_started(self, processes: int, timeout: float = 300.0) -> None:
        for _ in range(processes):
            if not self.started.acquire(timeout=timeout):
                raise SystemExit("covrag serve did not start in time")

    def serving_pids(self) -> list[int]:
        """The process itself, or with several, the supervisor's children that serve (not
        multiprocessing's resource tracker)."""
        children = Path(f"/proc/{self.process.pid}/task/{self.process.pid}/children")
        found = [int(p) for p in children.read_text().split()] if children.exists() else []
        served = [p for p in found if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
        return served or [self.process.pid]

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def rss_mb(pid: int) -> float:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().strip()


async def load(
    url: str, bodies: list[dict[str, Any]], n: int, concurrency: int, close: bool = False
) -> tuple[list[float], list[str], float]:
    """``n`` requests from ``concurrency`` clients. Each client keeps one connection, opened
    one after another before the clock starts (each goes to the process that accepts it
    first); with ``close``, every request opens a new one (``Connection: close``)."""
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(n))
    headers = {"Connection": "close"} if close else None
    clients = [
        httpx.AsyncClient(base_url=url, timeout=300, headers=headers) for _ in range(concurrency)
    ]

    async def client_loop(client: httpx.AsyncClient) -> None:
        for i in counter:
            started = time.perf_counter()
            try:
                response = await client.post("/v1/select", json=bodies[i % len(bodies)])
                if response.status_code != 200 or len(response.json()["passage_ids"]) != 5:
                    errors.append(f"{response.status_code}: {response.text[:200]}")
            except httpx.HTTPError as exc:
                errors.append(repr(exc))
            latencies.append(time.perf_counter() - started)

    try:
        if not close:
            for client in clients:
                (await client.get("/healthz")).raise_for_status()
                await asyncio.sleep(0.05)
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for client in clients))
        elapsed = time.perf_counter() - started
    finally:
        for client in clients:
            await client.aclose()
    return latencies, errors, elapsed


def run_once(
    args: argparse.Namespace, bodies: list[dict[str, Any]], processes: int
) -> tuple[str, int]:
    """One server with ``processes`` processes: cold pass, warm-up, timed run; prints what
    the run saw and returns its table row and its errors."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    started = time.perf_counter()
    server = Server(port, processes, args.workers, args.coverage)
    try:
        server.wait_started(processes)
        startup = time.perf_counter() - started
        cold = []
        for body in bodies:
            started = time.perf_counter()
            response = httpx.post(f"{url}/v1/select", json=body, timeout=300)
            response.raise_for_status()
            cold.append(time.perf_counter() - started)
        warm = 3 * processes * len(bodies)  # on new connections, to reach every process
        asyncio.run(load(url, bodies, warm, args.concurrency, close=True))
        served_before = Counter(server.pids)
        before = loadavg()
        latencies, errors, elapsed = asyncio.run(load(url, bodies, args.requests, args.concurrency))
        after = loadavg()
        time.sleep(0.5)  # the last access-log lines
        memory = {pid: rss_mb(pid) for pid in server.serving_pids()}
        served = server.pids - served_before
    finally:
        server.stop()
    ms = np.array(latencies) * 1000
    p50, p95, p99 = np.percentile(ms, [50, 95, 99])
    print(
        f"{processes} process(es): ready in {startup:.1f} s; cold first request per topic: "
        f"median {1000 * float(np.median(cold)):.0f} ms; loadavg before the timed run: "
        f"{before}; after: {after}"
    )
    rss = " / ".join(f"{mb:.0f}" for mb in memory.values())
    split = " / ".join(str(served[pid]) for pid in memory)
    for error in errors[:5]:
        print("error:", error, file=sys.stderr)
    row = (
        f"| {processes} | {len(errors)} | {p50:.1f} | {p95:.1f} | {p99:.1f} | {ms.max():.1f} | "
        f"{args.requests / elapsed:.1f} | {rss} | {split} |"
    )
    return row, len(errors)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--topics", type=int, default=40, help="distinct payloads to rotate")
    parser.add_argument("--passages", type=int, default=30, help="passages per request, at most")
    parser.add_argument("--workers", type=int, default=2, help="each process's compute threads")
    parser.add_argument("--coverage", default="cross-encoder", help="server default estimator")
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1, 2], help="server processes, one run each"
    )
    args = parser.parse_args()

    bodies = payloads(args.topics, args.passages)
    sizes = [len(b["passages"]) for b in bodies]
    aspects = [len(b["aspects"]) for b in bodies]
    print(
        f"{args.requests} requests, {args.concurrency} concurrent clients, {len(bodies)} "
        f"rotating Perspectrum dev topics ({min(sizes)}-{max(sizes)} passages, "
        f"{min(aspects)}-{max(aspects)} aspects), greedy-coverage k=5, coverage "
        f"{args.coverage}, {args.workers} threads per process, {os.cpu_count()} CPUs; "
        f"loadavg at the start: {loadavg()}\n"
    )
    runs = [run_once(args, bodies, n) for n in args.processes]
    print(
        "\n| processes | errors | p50 ms | p95 ms | p99 ms | max ms | requests/s "
        "| RSS per process, MB | requests per process |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row, _ in runs:
        print(row)
    return 1 if any(errors for _, errors in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
