"""Load test of ``covrag serve``: many ``POST /v1/select`` requests from concurrent clients, then
the time to the first token of streamed ``POST /v1/answer`` requests.

Run from the repository root::

    .venv/bin/python benchmarks/bench_server.py [--requests 2000] [--concurrency 8] \
        [--processes 1 2] [--stream 5] [--llm "local(model='smollm2')"]

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
``--requests 0`` leaves the load test out.

Streamed answers (``--stream N``, 0 leaves them out): one ``covrag serve --llm SPEC`` process
(``--llm``: the tiny SmolLM2 by default, ``local`` for the embedded default model) answers
``N`` ``/v1/answer`` requests with ``"stream": true``, one after another, each a different
Perspectrum dev topic (its claim as the question, its first ``--answer-passages`` passages),
the extractive writer, no rewrite pass. The server's response cache is a fresh file (its
``$COVRAG_CACHE_DIR`` is a temporary folder that links the models folder), so each reply is
written by the model. A first request on another topic (the LLM and the support judge load)
is timed apart. For each request: the time from sending it to its ``event: selected`` (the
work before the LLM), to the first ``event: token`` (TTFT) and to the ``event: answer`` that
ends the stream (total), and the tokens streamed; then p50 /
p95 of both and the load average before and after. Exits non-zero when a stream failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from covrag.data import load_dataset
from covrag.llm.cache import default_cache_dir


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

    def __init__(
        self,
        port: int,
        processes: int,
        workers: int,
        coverage: str,
        options: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        command = [sys.executable, "-m", "covrag.cli", "serve", "--port", str(port)]
        command += ["--workers", str(workers), "--coverage", coverage, "--model-wait", "60"]
        command += options
        env = {**os.environ, **(env or {}), "COVRAG_SERVE_PROCESSES": str(processes)}
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


def answer_payloads(n_topics: int, n_passages: int) -> list[dict[str, Any]]:
    """Streamed ``/v1/answer`` bodies: a Perspectrum dev claim and its first passages each."""
    topics = [t for t in load_dataset("perspectrum:dev") if len(t.passages) >= n_passages]
    return [
        {
            "question": t.query,
            "passages": [{"id": p.id, "text": p.text} for p in t.passages[:n_passages]],
            "writer": "extractive",
            "passes": 0,
            "stream": True,
        }
        for t in topics[:n_topics]
    ]


def streamed_answer(client: httpx.Client, body: dict[str, Any]) -> tuple[float, float, float, int]:
    """Seconds from sending one streamed ``/v1/answer`` to its ``selected`` event (the work
    before the LLM), to its first ``token`` event (nan when none came) and to the end of its
    ``answer`` event, and how many tokens it streamed."""
    started = time.perf_counter()
    selected, first, tokens, name = float("nan"), float("nan"), 0, ""
    with client.stream("POST", "/v1/answer", json=body) as response:
        if response.status_code != 200:
            raise RuntimeError(f"{response.status_code}: {response.read()[:300]!r}")
        for line in response.iter_lines():
            if line.startswith("event:"):
                name = line.removeprefix("event:").strip()
                if name == "selected":
                    selected = time.perf_counter() - started
                elif name == "token":
                    tokens += 1
                    if tokens == 1:
                        first = time.perf_counter() - started
            elif line.startswith("data:") and name == "answer":
                return selected, first, time.perf_counter() - started, tokens
            elif line.startswith("data:") and name == "error":
                raise RuntimeError(f"error event: {line[:300]}")
    raise RuntimeError("the stream ended without an answer event")


def run_stream(args: argparse.Namespace) -> int:
    """``args.stream`` streamed answers, one after another, from one ``covrag serve --llm``
    process with an empty response cache; prints each and the percentiles, returns the
    errors."""
    bodies = answer_payloads(args.stream + 1, args.answer_passages)
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="covrag-bench-cache-") as cache:
        models = default_cache_dir() / "models"  # the assembled default model, if any
        if models.is_dir():
            (Path(cache) / "models").symlink_to(models)
        started = time.perf_counter()
        options = ("--llm", args.llm, "--llm-timeout", "600")
        server = Server(port, 1, args.workers, args.coverage, options, {"COVRAG_CACHE_DIR": cache})
        rows, errors = [], 0
        try:
            server.wait_started(1)
            startup = time.perf_counter() - started
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=700) as client:
                cold = streamed_answer(client, bodies[0])
                before = loadavg()
                for body in bodies[1:]:
                    try:
                        rows.append((body["question"], *streamed_answer(client, body)))
                    except (RuntimeError, httpx.HTTPError) as exc:
                        errors += 1
                        print("error:", exc, file=sys.stderr)
                after = loadavg()
        finally:
            server.stop()
    print(
        f"\nStreamed /v1/answer, --llm {args.llm}, {args.answer_passages} passages, extractive "
        f"writer, no rewrite pass, one request at a time; server ready in {startup:.1f} s; "
        f"cold first request: TTFT {cold[1]:.2f} s, total {cold[2]:.2f} s, {cold[3]} tokens; "
        f"loadavg before the timed requests: {before}; after: {after}\n"
    )
    print("| question | selected s | TTFT s | total s | tokens streamed |\n|---|---|---|---|---|")
    for question, selected, first, total, tokens in rows:
        print(f"| {question[:60]} | {selected:.2f} | {first:.2f} | {total:.2f} | {tokens} |")
    if rows:
        ttft = np.array([r[2] for r in rows])
        total = np.array([r[3] for r in rows])
        print(
            f"\n{len(rows)} requests: TTFT p50 {np.percentile(ttft, 50):.2f} s, p95 "
            f"{np.percentile(ttft, 95):.2f} s; total p50 {np.percentile(total, 50):.2f} s, "
            f"p95 {np.percentile(total, 95):.2f} s"
        )
        errors += int(np.isnan(ttft).sum())  # a stream without tokens measures nothing
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--requests", type=int, default=2000, help="0: no load test")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--topics", type=int, default=40, help="distinct payloads to rotate")
    parser.add_argument("--passages", type=int, default=30, help="passages per request, at most")
    parser.add_argument("--workers", type=int, default=2, help="each process's compute threads")
    parser.add_argument("--coverage", default="cross-encoder", help="server default estimator")
    parser.add_argument(
        "--processes", type=int, nargs="+", default=[1, 2], help="server processes, one run each"
    )
    parser.add_argument(
        "--stream", type=int, default=5, help="streamed /v1/answer requests to time (0: none)"
    )
    parser.add_argument(
        "--llm",
        default="local(model='smollm2')",
        help="the server's LLM for the streamed answers (local: the embedded default model)",
    )
    parser.add_argument("--answer-passages", type=int, default=5, help="passages per answer")
    args = parser.parse_args()

    failed = 0
    if args.requests > 0:
        failed += run_load(args)
    if args.stream > 0:
        failed += run_stream(args)
    return 1 if failed else 0


def run_load(args: argparse.Namespace) -> int:
    """The ``/v1/select`` load test with each count of processes; returns the errors."""
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
    return sum(errors for _, errors in runs)


if __name__ == "__main__":
    sys.exit(main())
