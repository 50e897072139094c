"""Scale: serial vs Ray on the bundled data, and indexes over synthetic corpora up to 1M passages.

Three parts, each printed as a markdown table; asserts nothing but the identity of the runs.

1. ``--ray-bench``: ``covrag bench`` on a bundled dev split, serial and on a local Ray instance
   (``--ray``): wall seconds, Ray's start-up, and whether the run files and figures are identical;
   then the memory of one Ray worker with the shipped cross-encoder and MiniLM loaded.
2. ``--sizes``: per corpus size, in a child process per (kind, size) so that each peak RSS is its
   own (``resource.getrusage`` in the child, after the build and at the end): index build
   seconds, peak RSS, and search latency p50/p95 over ``--queries`` queries. BM25 (bm25s)
   indexes synthetic text (Zipf-distributed words); the dense FAISS index (``IndexFlatIP``,
   exact) holds synthetic unit vectors, because embedding 1M passages with MiniLM on two shared
   cores takes hours. The queries are embedded by MiniLM before the clock starts (the encoder
   caches them), so dense latency is the search alone, on one FAISS thread; ``--embed`` gives
   the encoder's speed.
3. ``--embed``: MiniLM embedding throughput (passages/s) on bundled passages, measured apart.

    nice -n 5 python benchmarks/bench_scale.py --ray-bench --sizes 10000 100000 1000000 --embed

Needs ``covrag[ray,faiss]``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

VOCABULARY = 50_000
WORDS_PER_PASSAGE = 40
DIMENSION = 384


def synthetic_texts(n: int, seed: int) -> list[str]:
    """``n`` passages of Zipf-distributed words (``w123``), a few seconds per million."""
    rng = np.random.default_rng(seed)
    ranks = np.minimum(rng.zipf(1.1, size=(n, WORDS_PER_PASSAGE)), VOCABULARY)
    words = np.array([f"w{i}" for i in range(VOCABULARY + 1)])
    return [" ".join(row) for row in words[ranks]]


def unit_vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIMENSION), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors


def _child(kind: str, size: int, queries: int) -> dict[str, Any]:
    """Build one index and time its searches (runs in its own process)."""
    from covrag.retrieve import BM25Retriever, DenseRetriever
    from covrag.types import Passage

    texts = synthetic_texts(size, seed=size)
    passages = [Passage(f"p{i}", t) for i, t in enumerate(texts)]
    del texts
    started = time.perf_counter()
    if kind == "bm25":
        retriever: Any = BM25Retriever().index(passages)
    else:
        retriever = DenseRetriever(faiss=True).index_embedded(passages, unit_vectors(size, 0))
    build = time.perf_counter() - started
    build_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    asked = synthetic_texts(queries, seed=1)
    texts = [" ".join(q.split()[:5]) for q in asked]
    if kind == "dense":
        import faiss

        # One search thread: OpenMP threads on shared cores spin against each other and the
        # other processes (p50 106 ms instead of 0.6 ms at 10k passages on the 2-core machine).
        faiss.omp_set_num_threads(1)
        retriever.encoder.encode(texts)  # cached: the clock below times the search alone
    latencies = []
    for text in texts:
        started = time.perf_counter()
        retriever.search(text, 10)
        latencies.append(1000 * (time.perf_counter() - started))
    return {
        "build_s": build,
        "build_rss_mb": build_rss,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "p50_ms": float(np.percentile(latencies, 50)),
        "p95_ms": float(np.percentile(latencies, 95)),
    }


def scale_row(kind: str, size: int, queries: int) -> dict[str, Any]:
    """Run :func:`_child` in a new process: its figures, and its peak RSS as it read it."""
    command = [sys.executable, __file__, "--child", kind, str(size), str(queries)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{kind} at {size}: {done.stderr[-2000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {"kind": kind, "size": size, **row}


def print_scale(sizes: list[int], queries: int, kinds: list[str]) -> None:
    print(
        "\n| index | passages | build s | peak RSS after build, MB | peak RSS with searches, MB "
        "| search p50 ms | p95 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for kind in kinds:
        for size in sizes:
            row = scale_row(kind, size, queries)
            print(
                f"| {kind} | {size:,} | {row['build_s']:.1f} | {row['build_rss_mb']:,.0f} | "
                f"{row['peak_rss_mb']:,.0f} | {row['p50_ms']:.1f} | {row['p95_ms']:.1f} |",
                flush=True,
            )


def embed_throughput(count: int) -> None:
    from covrag.data import load_dataset
    from covrag.embed import Encoder

    texts = [p.text for t in load_dataset("perspectrum-evidence:dev") for p in t.passages]
    texts = list(dict.fromkeys(texts))[:count]
    encoder = Encoder()
    encoder.encode(texts[:8])  # warm-up
    started = time.perf_counter()
    encoder.encode(texts[8:])
    seconds = time.perf_counter() - started
    print(
        f"\nMiniLM embedding: {len(texts) - 8} bundled passages in {seconds:.1f} s = "
        f"{(len(texts) - 8) / seconds:.0f} passages/s (torch threads: default)"
    )


def _bench_args(dataset: str, out: Path) -> list[str]:
    return [
        "bench",
        "--dataset",
        dataset,
        "--selectors",
        "topk",
        "greedy-coverage",
        "--coverage",
        "gold",
        "embedding",
        "--n-resamples",
        "1000",
        "--out",
        str(out),
    ]


def _runs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((folder / "runs").iterdir())}


def _figures(folder: Path) -> Any:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if "seconds" not in k}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads((folder / "summary.json").read_text()))


def ray_bench(dataset: str) -> None:
    """Serial vs --ray, each a fresh ``covrag`` process (model loading included in both)."""
    with tempfile.TemporaryDirectory() as tmp:
        seconds = {}
        for name, extra in (("serial", []), ("ray", ["--ray"])):
            command = [sys.executable, "-m", "covrag.cli", *_bench_args(dataset, Path(tmp, name))]
            started = time.perf_counter()
            subprocess.run(command + extra, check=True, capture_output=True)
            seconds[name] = time.perf_counter() - started
        same_runs = _runs(Path(tmp, "serial")) == _runs(Path(tmp, "ray"))
        same_figures = _figures(Path(tmp, "serial")) == _figures(Path(tmp, "ray"))
    import ray

    started = time.perf_counter()
    ray.init(include_dashboard=False, logging_level="WARNING", log_to_driver=False)
    startup = time.perf_counter() - started
    worker = ray.get(ray.remote(num_cpus=1)(_worker_memory).remote())
    cpus = ray.cluster_resources().get("CPU")
    ray.shutdown()
    print(f"\n`covrag bench` on {dataset} (local Ray instance, {cpus:.0f} CPUs)\n")
    print("| run | wall s | run files identical | figures identical |")
    print("|---|---:|---|---|")
    print(f"| serial | {seconds['serial']:.1f} | | |")
    print(f"| --ray | {seconds['ray']:.1f} | {same_runs} | {same_figures} |")
    print(f"\nray.init() of a local instance alone: {startup:.1f} s")
    print(
        "One Ray worker, RSS in MB: "
        + ", ".join(f"{name} {value:.0f}" for name, value in worker.items())
    )


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _worker_memory() -> dict[str, float]:
    """RSS of a Ray worker: idle, with MiniLM, and with the cross-encoder too (one topic each)."""
    from covrag.coverage import parse_estimator
    from covrag.data import load_dataset
    from covrag.embed import default_encoder

    figures = {"idle worker": _rss_mb()}
    topic = load_dataset("argkp2021:dev")[0]
    default_encoder().encode([p.text for p in topic.passages])
    figures["+ MiniLM (one topic embedded)"] = _rss_mb()
    parse_estimator("cross-encoder").estimate(topic)
    figures["+ cross-encoder (one topic scored)"] = _rss_mb()
    figures["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        kind, size, queries = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(json.dumps(_child(kind, size, queries)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ray-bench", action="store_true", help="serial vs --ray on bundled data")
    parser.add_argument("--dataset", default="argkp2021:dev")
    parser.add_argument("--sizes", nargs="*", type=int, default=[], help="corpus sizes")
    parser.add_argument("--queries", type=int, default=200, help="searches per index")
    parser.add_argument("--kinds", nargs="+", default=["bm25", "dense"], help="index kinds")
    parser.add_argument("--embed", type=int, nargs="?", const=2000, default=0, help="passages")
    args = parser.parse_args()
    print(f"$ {shlex.join(['python', 'benchmarks/bench_scale.py', *sys.argv[1:]])}")
    print(f"nproc {os.cpu_count()}, load average {os.getloadavg()[0]:.1f}")
    if args.ray_bench:
        ray_bench(args.dataset)
    if args.sizes:
        print_scale(sorted(args.sizes), args.queries, args.kinds)
    if args.embed:
        embed_throughput(args.embed)


if __name__ == "__main__":
    main()
