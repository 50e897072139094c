"""Training speed of the coverage cross-encoder in fp32 and under bf16 autocast, side by side.

    .venv/bin/python benchmarks/bench_train_precision.py [--base-model mpnet] [--steps 12]

Runs ``train_cross_encoder`` itself (the code path of ``covrag-lab train coverage``) for ``--steps``
optimiser steps of 32 pairs on the labelled pairs of each dataset, alternating fp32 and bf16
``--repeats`` times so that both meet the same machine load, and prints the seconds per step of
each run (model loading excluded: the training card times the steps only). Short pairs (ArgKP:
argument and key point) and long ones (Perspectrum evidence paragraphs) are timed apart, since
the share of time in matrix products grows with length. Nothing is written outside a temporary
folder.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from covrag.data import load_dataset
from covrag_lab.train.coverage import PRECISIONS, TrainConfig, train_cross_encoder
from covrag_lab.train.pairs import Pair, dataset_pairs, shuffled


def _pairs(name: str, n: int) -> list[Pair]:
    return shuffled(dataset_pairs(load_dataset(name), max_negatives_per_positive=3), 0)[:n]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base-model", default=None, help="default: the packaged MiniLM")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument(
        "--datasets", nargs="+", default=["argkp2021:dev", "perspectrum-evidence:dev"]
    )
    args = parser.parse_args()
    batch = 32
    print(f"base model: {args.base_model or 'packaged MiniLM'}; {args.steps} steps of {batch}")
    print("\n| pairs | precision | seconds per step, each run | mean |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.datasets:
            pairs = _pairs(name, args.steps * batch)
            seconds: dict[str, list[float]] = {p: [] for p in PRECISIONS}
            for repeat in range(args.repeats):
                for precision in PRECISIONS:
                    config = TrainConfig(
                        base_model=args.base_model,
                        batch_size=batch,
                        precision=precision,
                        checkpoint_every=0,
                    )
                    out = Path(tmp) / f"{precision}-{repeat}"
                    card = train_cross_encoder({name: pairs}, out, config)
                    seconds[precision].append(card.seconds / card.steps)
            for precision in PRECISIONS:
                runs = ", ".join(f"{s:.2f}" for s in seconds[precision])
                mean = statistics.mean(seconds[precision])
                print(f"| {name} | {precision} | {runs} | {mean:.2f} |")
            ratio = statistics.mean(seconds["fp32"]) / statistics.mean(seconds["bf16"])
            print(f"| {name} | fp32 / bf16 | | **{ratio:.2f}x** |")


if __name__ == "__main__":
    main()
