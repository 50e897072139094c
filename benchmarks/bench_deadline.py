"""What one heavy request costs the others, and the pairs/s behind ``covrag serve --max-pairs``.

Run from the repository root::

    .venv/bin/python benchmarks/bench_deadline.py [--pairs 1000] [--timeout 6]

1. Scores ``--pairs`` Perspectrum dev (passage, perspective) pairs with the shipped cross-encoder
   (after a warm-up on other pairs) and prints pairs/s: the default ``--max-pairs`` (10,000) is
   about what it scores in the default 30 s timeout on 2 CPU cores.
2. Starts a real server (``serve_in_background``, loopback) with ``--timeout``, sends a
   300-passage x 40-aspect cross-encoder request (12,000 new pairs), then a 2-passage one, and
   prints each one's status and seconds: the heavy one should end with a 504 at about the
   timeout, and the small one get its 200 at once.
"""

from __future__ import annotations

import argparse
import time

import httpx

from covrag.coverage import CrossEncoderCoverage
from covrag.data import load_dataset
from covrag.server import ServerConfig
from covrag.server.run import probe_request, serve_in_background


def dev_pairs(n: int) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for topic in load_dataset("perspectrum:dev"):
        pairs += [(p.text, a.text) for p in topic.passages for a in topic.aspects]
        if len(pairs) >= n + 256:
            break
    return pairs[: n + 256]


def pairs_per_second(n: int) -> float:
    scorer = CrossEncoderCoverage().scorer()
    pairs = dev_pairs(n)
    scorer.score(pairs[n:])  # warm-up on other pairs
    started = time.perf_counter()
    _, scored, _ = scorer.score(pairs[:n])
    seconds = time.perf_counter() - started
    tokens = scorer.lengths(pairs[:n]).mean()
    print(
        f"shipped cross-encoder: {scored} pairs in {seconds:.2f} s = {scored / seconds:.0f} "
        f"pairs/s (mean {tokens:.0f} tokens a pair)"
    )
    return scored / seconds


def heavy_then_small(timeout: float) -> None:
    config = ServerConfig(default_coverage="cross-encoder", timeout_s=timeout, max_pairs=10**6)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=600) as http:
        for name, body in (("300 x 40", probe_request(300, 40)), ("2 x 1", probe_request(2, 1))):
            started = time.perf_counter()
            status = http.post("/v1/select", json=body).status_code
            print(f"{name}: {status} in {time.perf_counter() - started:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=6.0)
    args = parser.parse_args()
    pairs_per_second(args.pairs)
    heavy_then_small(args.timeout)


if __name__ == "__main__":
    main()
