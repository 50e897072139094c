"""The coverage cross-encoder: quality on dev, the selection threshold, and speed levers.

    .venv/bin/python benchmarks/bench_cross_encoder.py --model DIR [--onnx DIR] [--quick]

``--model`` is the trained Hugging Face folder (``covrag-lab train coverage --out``), ``--onnx`` its
int8 ONNX export (default: the model shipped in the package; give several to compare exports of
the same model, e.g. ``--quantize row`` against ``dynamic``: the speed table has rows for each).
Prints markdown tables:

1. ROC-AUC of every (passage, aspect) pair of each dev pool against the labels, for both models.
2. Greedy coverage on each dev set with the cross-encoder over the gold aspect texts, for a grid
   of thresholds and both assignments (independent, as shipped; best, built here: a passage
   covers at most its best-scoring aspect, which lost and left the estimator in issue 33).
3. Speed on the ArgKP dev pairs: a plain ``CrossEncoder.predict`` over the pairs as they come,
   against the levers (length-sorted batches, deduplication, shorter max length, int8 ONNX),
   each scorer warmed up on 256 other pairs first,
   and for each ONNX export how far a pair's score moves with its batch: 200 pairs scored alone
   against the same pairs scored in batches of 64 with the rest of the pool.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

import numpy as np

from covrag.coverage import CoverageEstimator
from covrag.coverage.cross_encoder import CrossEncoderCoverage, PairScorer
from covrag.coverage.cross_encoder import default_model_path as shipped_model
from covrag.data import load_dataset
from covrag.pipeline.bench import Method, run_bench
from covrag.selectors import parse_selector
from covrag.types import Budget, CoverageMatrix, Topic
from covrag_lab.train.calibrate import roc_auc

DEV = {
    "argkp2021:dev": (Budget(max_passages=10), "alpha-nDCG@10", "greedy-coverage"),
    "perspectrum:dev": (Budget(max_passages=10), "alpha-nDCG@10", "greedy-coverage"),
    "perspectrum-evidence:dev": (
        Budget(max_tokens=1024),
        "RVC@1024",
        "greedy-coverage(cost_aware=True)",
    ),
}
THRESHOLDS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
POWERS = (1.0, 2.0, 4.0, 8.0)


@dataclasses.dataclass(frozen=True, repr=False)
class BestAssignment(CoverageEstimator):
    """The cross-encoder's matrix with every pair but each passage's best-scoring one held
    below the threshold: a passage covers at most one aspect."""

    name = "best-assignment"
    inner: CrossEncoderCoverage

    def estimate(self, topic: Topic) -> CoverageMatrix:
        matrix = self.inner.estimate(topic)
        probs = matrix.probs
        if not probs.size:
            return matrix
        limit = matrix.aspect_thresholds or matrix.threshold
        below = np.nextafter(np.asarray(limit, dtype=np.float64), 0.0)
        keep = np.zeros_like(probs, dtype=bool)
        keep[np.arange(len(probs)), probs.argmax(axis=1)] = True
        return dataclasses.replace(matrix, probs=np.where(keep, probs, np.minimum(probs, below)))


def pool_pairs(name: str, limit: int | None) -> tuple[list[tuple[str, str]], np.ndarray]:
    pairs, labels = [], []
    for topic in load_dataset(name)[:limit]:
        matrix = topic.label_matrix()
        for i, passage in enumerate(topic.passages):
            for j, aspect in enumerate(topic.aspects):
                pairs.append((passage.text, aspect.text))
                labels.append(matrix[i, j])
    return pairs, np.array(labels)


def quality(model: str, onnx: str, limit: int | None) -> None:
    """ROC-AUC of the int8 model on every dev pool; the fp32 model on ArgKP too (it is slow)."""
    print("\n### ROC-AUC of all pool pairs against the labels (dev)\n")
    print("| dev set | pairs | positives | int8 ONNX (shipped) | fp32 torch |")
    print("|---|---|---|---|---|")
    int8 = PairScorer(onnx, 64, 256, 2_000_000)
    for name in DEV:
        pairs, labels = pool_pairs(name, limit)
        scores, _, _ = int8.score(pairs)
        fp32 = "-"
        if name == "argkp2021:dev":
            full, _, _ = PairScorer(model, 64, 256, 2_000_000).score(pairs)
            fp32 = f"{roc_auc(labels, full):.3f}"
        print(
            f"| {name} | {len(pairs)} | {int(labels.sum())} | "
            f"{roc_auc(labels, scores):.3f} | {fp32} |"
        )


def fp32_selection(model: str, onnx: str, threshold: float, limit: int | None) -> None:
    """The selection measure on ArgKP dev with the fp32 and the int8 model at one threshold."""
    budget, measure, selector = DEV["argkp2021:dev"]
    methods = [
        Method(parse_selector(selector), CrossEncoderCoverage(model=path, threshold=threshold))
        for path in (model, onnx)
    ]
    result = run_bench(
        "argkp2021:dev",
        load_dataset("argkp2021:dev")[:limit],
        methods,
        [budget],
        exact=False,
        measures=[measure],
        n_resamples=200,
    )
    print(f"\n### fp32 against int8 at threshold {threshold}, ArgKP dev {measure}\n")
    for row, label in zip(result.results, ("fp32 torch", "int8 ONNX"), strict=True):
        print(f"- {label}: {row.means[measure]:.3f}")


def thresholds(model: str, limit: int | None) -> tuple[str, float]:
    print(f"\n### Greedy coverage with the cross-encoder ({model}), by threshold (dev)\n")
    header = "| assignment | threshold | " + " | ".join(f"{n} {m}" for n, (_, m, _) in DEV.items())
    print(header + " | mean |")
    print("|---|---|" + "---|" * (len(DEV) + 1))
    baselines: dict[str, dict[str, float]] = {}
    rows = []
    for assignment in ("independent", "best"):
        for threshold in THRESHOLDS:
            cells = []
            for name, (budget, measure, selector) in DEV.items():
                plain = CrossEncoderCoverage(model=model, threshold=threshold)
                estimator = BestAssignment(plain) if assignment == "best" else plain
                methods = [Method(parse_selector(selector), estimator)]
                if name not in baselines:
                    methods += [Method(parse_selector(s), None) for s in ("random", "topk", "mmr")]
                result = run_bench(
                    name,
                    load_dataset(name)[:limit],
                    methods,
                    [budget],
                    exact=False,
                    measures=[measure],
                    n_resamples=200,
                )
                for row in result.results:
                    if row.method in ("random", "topk", "mmr"):
                        baselines.setdefault(name, {})[row.method] = row.means[measure]
                cells.append(result.results[0].means[measure])
            rows.append((assignment, threshold, cells))
            print(
                f"| {assignment} | {threshold} | "
                + " | ".join(f"{c:.3f}" for c in cells)
                + f" | {np.mean(cells):.3f} |"
            )
    for method in ("random", "topk", "mmr"):
        cells = [baselines[n][method] for n in DEV]
        print(f"| ({method}) | - | " + " | ".join(f"{c:.3f}" for c in cells) + " | - |")
    best = max(rows, key=lambda r: np.mean(r[2]))
    print(f"\nbest mean: assignment={best[0]}, threshold={best[1]}")
    return best[0], best[1]


def powers(model: str, limit: int | None) -> float:
    """Expected coverage on the raw probabilities (independent assignment), by ``power``."""
    print(f"\n### Expected coverage with the cross-encoder ({model}), by power (dev)\n")
    header = "| power | " + " | ".join(f"{n} {m}" for n, (_, m, _) in DEV.items())
    print(header + " | mean |")
    print("|---|" + "---|" * (len(DEV) + 1))
    rows = []
    for power in POWERS:
        cells = []
        for name, (budget, measure, greedy) in DEV.items():
            cost_aware = ", cost_aware=True" if "cost_aware" in greedy else ""
            selector = parse_selector(f"expected-coverage(power={power}{cost_aware})")
            estimator = CrossEncoderCoverage(model=model)
            result = run_bench(
                name,
                load_dataset(name)[:limit],
                [Method(selector, estimator)],
                [budget],
                exact=False,
                measures=[measure],
                n_resamples=200,
            )
            cells.append(result.results[0].means[measure])
        rows.append((power, cells))
        print(
            f"| {power:g} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {np.mean(cells):.3f} |"
        )
    best = max(rows, key=lambda r: np.mean(r[1]))
    print(f"\nbest mean: power={best[0]:g}")
    return best[0]


def speed(model: str, exports: list[str], limit: int | None, repeats: int = 1) -> None:
    from sentence_transformers import CrossEncoder

    pairs, _ = pool_pairs("argkp2021:dev", limit)
    print(f"\n### Speed on the {len(pairs)} ArgKP dev pool pairs (2 CPU threads)\n")
    if repeats > 1:
        print(
            f"Each scorer timed {repeats} times, the rounds interleaved; the median, and in "
            "brackets the fastest and slowest run.\n"
        )
    print("| scorer | max length | pairs scored | seconds | pairs/s | speed-up |")
    print("|---|---|---|---|---|---|")
    # Each scorer first scores other pairs (ArgKP train), so that no row pays for a first call's
    # set-up (thread pool, memory arena); each timed run gets a fresh pair cache.
    warm, _ = pool_pairs("argkp2021:train", 1)
    warm = warm[:256]
    plain = CrossEncoder(model, device="cpu", max_length=256)
    plain.predict(warm, batch_size=32, show_progress_bar=False)
    variants: list[tuple[str, str | None, int]] = [
        ("CrossEncoder.predict (fp32, as given)", None, 256)
    ]
    variants += [("sentence-transformers, length-sorted + dedup", model, n) for n in (256, 128)]
    for onnx in exports:
        variants += [
            (f"int8 ONNX Runtime ({onnx}), length-sorted + dedup", onnx, n) for n in (256, 128)
        ]
    times: list[list[float]] = [[] for _ in variants]
    values: list[np.ndarray] = [np.zeros(0) for _ in variants]
    scored = [len(pairs)] * len(variants)
    for _ in range(repeats):
        for i, (_, path, length) in enumerate(variants):
            if path is None:
                started = time.perf_counter()
                values[i] = np.asarray(plain.predict(pairs, batch_size=32, show_progress_bar=False))
            else:
                scorer = PairScorer(path, 64, length, 2_000_000)
                scorer.score(warm)
                started = time.perf_counter()
                values[i], scored[i], _ = scorer.score(pairs)
            times[i].append(time.perf_counter() - started)
    base = float(np.median(times[0]))
    for i, (label, path, length) in enumerate(variants):
        seconds = float(np.median(times[i]))
        spread = f" [{min(times[i]):.1f}-{max(times[i]):.1f}]" if repeats > 1 else ""
        drift = "" if path is None else f" (max diff {np.abs(values[i] - values[0]).max():.3f})"
        print(
            f"| {label}{drift} | {length} | {scored[i]} | {seconds:.1f}{spread} | "
            f"{len(pairs) / seconds:.0f} | {base / seconds:.1f}x |"
        )
    print("\n### A pair's score alone and in a batch of 64 (200 pairs, max length 256)\n")
    print("| ONNX export | largest change | mean change |")
    print("|---|---|---|")
    sample = [pairs[i] for i in np.random.default_rng(0).permutation(len(pairs))[:200]]
    for onnx in exports:
        alone = PairScorer(onnx, 1, 256, 2_000_000).score(sample)[0]
        batched = PairScorer(onnx, 64, 256, 2_000_000).score(sample + pairs[:1000])[0]
        batched = batched[: len(sample)]
        change = np.abs(alone - batched)
        print(f"| {onnx} | {change.max():.4f} | {change.mean():.4f} |")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="trained Hugging Face model folder")
    parser.add_argument(
        "--onnx", nargs="+", default=[str(shipped_model())], help="int8 ONNX folder(s)"
    )
    parser.add_argument("--quick", action="store_true", help="2 topics per dev set")
    parser.add_argument("--repeats", type=int, default=1, help="time each scorer N times")
    parser.add_argument("--skip", nargs="*", default=[], choices=["quality", "thresholds", "speed"])
    args = parser.parse_args()
    limit = 2 if args.quick else None
    print("command: " + " ".join(["python", *sys.argv]))
    if "thresholds" not in args.skip:
        _, threshold = thresholds(args.onnx[0], limit)
        powers(args.onnx[0], limit)
        fp32_selection(args.model, args.onnx[0], threshold, limit)
    if "quality" not in args.skip:
        quality(args.model, args.onnx[0], limit)
    if "speed" not in args.skip:
        speed(args.model, args.onnx, limit, args.repeats)
    return 0


if __name__ == "__main__":
    sys.exit(main())
