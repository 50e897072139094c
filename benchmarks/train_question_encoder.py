"""Fine-tune the packaged MiniLM as a question -> passage encoder on document pairs (issue 47).

    nice -n 10 .venv/bin/python benchmarks/train_question_encoder.py PAIRS OUT [--epochs 1]
        [--title]

PAIRS is the coverage JSONL that ``benchmarks/build_doc_pairs.py pairs`` writes (man pages,
stdlib pydoc and READMEs of this machine, none of the answer benchmark's documents): each line
an aspect (an option or function question, or an LLM question that passed the BM25 round trip)
with the passage that answers it and hard negatives. Each step reads 32 (question, passage,
first hard negative) triples and minimises the in-batch softmax loss (multiple negatives
ranking, scale 20) with AdamW at 2e-5, warm-up over the first 10% of steps, linear decay.
``--title`` prefixes each passage with its document's title. The model is saved as a
sentence-transformers folder (``covrag.embed.Encoder(OUT)`` reads it) with ``training.json``
(pairs by kind, steps, seconds, losses): what a model card would state.

Sections 34 and 35 of the experiment log measured what it gives ``ask``'s context (3,179 to
3,748 pairs, one epoch): +0.023 to +0.035, every CI across 0, so covrag ships no such model.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path


def triples(path: Path, title: bool) -> list[tuple[str, str, str]]:
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        record = json.loads(line)
        positive = [p for p in record["passages"] if p.get("aspects")]
        negative = [p for p in record["passages"] if not p.get("aspects")]
        if not positive or not negative:
            raise SystemExit(f"{path}:{number}: a pair needs a positive and a negative passage")

        def text(p: dict[str, str]) -> str:
            return f"{p['title']}: {p['text']}" if title and p.get("title") else p["text"]

        rows.append((record["query"], text(positive[0]), text(negative[0])))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pairs", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--title", action="store_true")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    if args.out.exists():
        raise SystemExit(f"{args.out} exists: give a new folder")

    import torch
    from sentence_transformers import SentenceTransformer

    from covrag.embed import default_model_path

    torch.set_num_threads(2)
    random.seed(0)
    torch.manual_seed(0)
    rows = triples(args.pairs, args.title)
    random.shuffle(rows)
    model = SentenceTransformer(str(default_model_path()), device="cpu", local_files_only=True)
    model.max_seq_length = 256
    size = args.batch_size
    steps = max(1, int(len(rows) * args.epochs) // size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    warm = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps)
    )

    def embed(texts: list[str]) -> torch.Tensor:
        features = model.tokenize(texts)
        return torch.nn.functional.normalize(model(features)["sentence_embedding"], dim=-1)

    model.train()
    losses: list[float] = []
    started = time.perf_counter()
    for step in range(steps):
        start = (step * size) % len(rows)
        batch = rows[start : start + size]
        if len(batch) < 2:
            continue
        questions = embed([b[0] for b in batch])
        passages = embed([b[1] for b in batch] + [b[2] for b in batch])
        loss = torch.nn.functional.cross_entropy(
            questions @ passages.T * 20.0, torch.arange(len(batch))
        )
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 10 == 0:
            losses.append(round(loss.item(), 4))
            print(
                f"step {step}/{steps} loss {loss.item():.3f} {time.perf_counter() - started:.0f} s",
                flush=True,
            )
    model.eval()
    model.save(str(args.out))
    kinds: dict[str, int] = {}
    for line in args.pairs.read_text(encoding="utf-8").splitlines():
        kind = json.loads(line)["query_id"].rsplit("-", 1)[0]  # option-12 -> option
        kinds[kind] = kinds.get(kind, 0) + 1
    record = {
        "pairs": len(rows),
        "pair_kinds": kinds,
        "pairs_file": args.pairs.name,
        "epochs": args.epochs,
        "batch_size": size,
        "steps": steps,
        "learning_rate": 2e-5,
        "max_length": 256,
        "title": args.title,
        "seconds": round(time.perf_counter() - started, 1),
        "losses": losses,
    }
    (args.out / "training.json").write_text(json.dumps(record, indent=2) + "\n")
    print(
        f"saved {args.out}: {len(rows)} pairs, {steps} steps, {time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
