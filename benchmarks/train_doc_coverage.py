"""Stage 3 of the coverage cross-encoder: continue the shipped model on documents (issue 47).

    python benchmarks/train_doc_coverage.py DOC_PAIRS.jsonl OUT [--debate-pairs N] [--steps-limit]

The shipped model is int8 ONNX only; its float32 weights are read back from it
(:mod:`covrag_lab.train.dequantize`) and training continues on the documents' pairs
(``benchmarks/build_doc_pairs.py``) with a replay of the debate pairs it learned from (ArgKP
train as statements and as questions, Perspectrum train), so that what it knew is not lost.
Documents are split 90/10 by document: the held-out tenth is the documents' dev set (ROC-AUC).
OUT gets the float32 model (``OUT/torch``), its int8 ONNX copy (``OUT/onnx``) and a card that
lists the shipped stages, this one and its settings. Thresholds, power and assignment are kept
from the shipped card (they were chosen by cross-validation on debates; the answer benchmark
decides whether the new model is shipped).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

from covrag.coverage.cross_encoder import CrossEncoderCoverage, passage_input
from covrag.types import Passage
from covrag_lab.train.coverage import TrainConfig
from covrag_lab.train.coverage_run import train_coverage, training_pairs
from covrag_lab.train.dequantize import dequantized_model
from covrag_lab.train.pairs import Pair, shuffled

DEBATES = ("argkp2021:train", "argkp2021:train:questions", "perspectrum:train")
DEBATE_DEV = ("argkp2021:dev", "argkp2021:dev:questions")
#: How the trained model reads a document's passage (its card's ``passage_header``).
HEADER = "title"


def doc_pairs(path: Path, topics: int | None = None) -> tuple[list[Pair], list[Pair]]:
    """Train and dev pairs of the documents' file, split by the positive passage's document;
    ``topics``: only that many, a hash-ordered sample."""
    train: list[Pair] = []
    dev: list[Pair] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    if topics is not None:
        lines = sorted(lines, key=lambda line: hashlib.sha256(line.encode()).hexdigest())[:topics]
    for line in lines:
        topic = json.loads(line)
        aspect = topic["aspects"][0]["text"]
        positive = next(p for p in topic["passages"] if p.get("aspects"))
        document = positive["id"].rsplit("#", 1)[0]
        sink = dev if int(hashlib.sha256(document.encode()).hexdigest(), 16) % 10 == 0 else train
        for p in topic["passages"]:
            label = 1 if p.get("aspects") else 0
            text = passage_input(
                Passage(p["id"], p["text"], metadata={"title": p.get("title")}), HEADER
            )
            sink.append(Pair(text, aspect, label, topic["query_id"]))
    return train, dev


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--debate-pairs", type=int, default=4000)
    parser.add_argument("--doc-topics", type=int, default=None)
    parser.add_argument("--precision", default="bf16", help="fp32 or bf16 (AMX: ~2x faster)")
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--max-length", type=int, default=256)
    args = parser.parse_args()
    started = time.monotonic()
    shipped = Path(CrossEncoderCoverage().model_path())
    base = dequantized_model(shipped, args.out / "dequantized")
    train_docs, dev_docs = doc_pairs(args.pairs, args.doc_topics)
    debates = training_pairs(list(DEBATES), neg_ratio=3, seed=0)
    total = sum(len(v) for v in debates.values())
    replay = {
        name: shuffled(pairs, 0)[: round(args.debate_pairs * len(pairs) / total)]
        for name, pairs in debates.items()
    }
    train = {"documents": train_docs, **replay}
    dev = {"documents:dev": dev_docs, **training_pairs(list(DEBATE_DEV), neg_ratio=4, seed=0)}
    print({k: len(v) for k, v in train.items()}, {k: len(v) for k, v in dev.items()}, flush=True)
    config = TrainConfig(
        base_model=str(base),
        learning_rate=args.lr,
        max_length=args.max_length,
        threads=2,
        precision=args.precision,
    )

    def progress(step: int, total_steps: int, loss: float) -> None:
        if step % 25 == 0 or step == total_steps:
            print(
                f"step {step}/{total_steps} loss {loss:.3f} {time.monotonic() - started:.0f} s",
                flush=True,
            )

    run = train_coverage(
        train, dev, args.out / "torch", config, onnx_out=args.out / "onnx", progress=progress
    )
    print(json.dumps(run.calibration.per_dataset, indent=1))
    print(f"threshold {run.calibration.threshold:.3f}; {time.monotonic() - started:.0f} s")


if __name__ == "__main__":
    main()
