"""Load test of ``covrag serve``: many ``POST /v1/select`` requests from concurrent clients.

Run from the repository root::

    .venv/bin/python benchmarks/bench_server.py [--requests 2000] [--concurrency 8]

Starts ``covrag serve`` in a child process on a free loopback port, waits for ``/healthz``, then
sends ``--requests`` requests from ``--concurrency`` httpx async clients. Each request is a real
Perspectrum dev topic (its claim, up to ``--passages`` passages and its gold perspectives as the
aspects) with greedy coverage at k=5 and the server's default coverage estimator (the shipped
cross-encoder). Each topic is first sent once, sequentially (cold: the model scores every pair;
reported apart), then the timed run rotates over them, so the estimator's pair cache answers and
the figures measure the service itself: HTTP, validation, token counting, selection, JSON.
Prints a markdown table: errors (must be 0), latency percentiles and requests per second.
Exits non-zero when any request failed.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import subprocess
import sys
import time
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


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("covrag serve exited before it was ready")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("covrag serve did not become healthy in time")


async def load(
    url: str, bodies: list[dict[str, Any]], n: int, concurrency: int
) -> tuple[list[float], list[str], float]:
    latencies: list[float] = []
    errors: list[str] = []
    counter = iter(range(n))
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)

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

    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        started = time.perf_counter()
        await asyncio.gather(*(client_loop(client) for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    return latencies, errors, elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--topics", type=int, default=40, help="distinct payloads to rotate")
    parser.add_argument("--passages", type=int, default=30, help="passages per request, at most")
    parser.add_argument("--workers", type=int, default=2, help="the server's compute threads")
    parser.add_argument("--coverage", default="cross-encoder", help="server default estimator")
    args = parser.parse_args()

    bodies = payloads(args.topics, args.passages)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    command = [sys.executable, "-m", "covrag.cli", "serve", "--port", str(port)]
    command += ["--workers", str(args.workers), "--coverage", args.coverage]
    process = subprocess.Popen(command)
    try:
        started = time.perf_counter()
        wait_healthy(url, process)
        startup = time.perf_counter() - started
        cold = []
        for body in bodies:
            started = time.perf_counter()
            response = httpx.post(f"{url}/v1/select", json=body, timeout=300)
            response.raise_for_status()
            cold.append(time.perf_counter() - started)
        latencies, errors, elapsed = asyncio.run(load(url, bodies, args.requests, args.concurrency))
    finally:
        process.terminate()
        process.wait(timeout=30)

    ms = np.array(latencies) * 1000
    sizes = [len(b["passages"]) for b in bodies]
    aspects = [len(b["aspects"]) for b in bodies]
    print(
        f"{args.requests} requests, {args.concurrency} concurrent clients, {len(bodies)} "
        f"rotating Perspectrum dev topics ({min(sizes)}-{max(sizes)} passages, "
        f"{min(aspects)}-{max(aspects)} aspects), greedy-coverage k=5, coverage "
        f"{args.coverage}, {args.workers} server threads; server ready in {startup:.1f} s; "
        f"cold first request per topic: median {1000 * float(np.median(cold)):.0f} ms\n"
    )
    print("| errors | p50 ms | p90 ms | p99 ms | max ms | requests/s |")
    print("|---|---|---|---|---|---|")
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    print(
        f"| {len(errors)} | {p50:.1f} | {p90:.1f} | {p99:.1f} | {ms.max():.1f} | "
        f"{args.requests / elapsed:.1f} |"
    )
    for error in errors[:5]:
        print("error:", error, file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
