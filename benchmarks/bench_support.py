"""How well the citation check's two tests tell support from its absence, on labelled pairs.

    nice .venv/bin/python benchmarks/bench_support.py \\
        --datasets argkp2021:dev perspectrum-evidence:dev --topics 40 --out support.json

The citation check (:mod:`covrag.generate.support`) asks of an (answer sentence, passage) pair
whether the passage supports the sentence: first by alignment
(:func:`covrag.generate.alignment.align`), then by the shipped coverage cross-encoder scoring
(passage, sentence). Labelled pairs of that kind, from the bundled dev splits (which the shipped
model was not trained on):

- ``argkp2021:dev``: (argument, key point), positive when the key point was matched to the
  argument, negative when it was judged not to match (undecided pairs are left out). A key point
  restates the arguments it matches in other words: a paraphrase, never a copy.
- ``perspectrum-evidence:dev``: (evidence paragraph, perspective), positive when the evidence was
  labelled as supporting the perspective, negative for the topic's other perspectives (the
  dataset names positives only).

Reports, per dataset: how often alignment claims support, and its precision there (a
paraphrase is not the aligner's to decide: on negatives it should claim nothing); the judge's
precision, recall and F1 at each threshold; and the recall of alignment on near-copies (a
passage's first sentence with one content word replaced), which it should hold.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from covrag.coverage import CrossEncoderCoverage
from covrag.data import load_dataset
from covrag.generate.alignment import align
from covrag.text import STOPWORDS, split_sentences
from covrag.types import Topic

THRESHOLDS = [round(0.05 * i, 2) for i in range(1, 20)]


def labelled_pairs(topic: Topic) -> list[tuple[int, int, bool]]:
    """(passage index, aspect index, supported) of the topic's judged pairs."""
    column = {a.id: j for j, a in enumerate(topic.aspects)}
    pairs = []
    explicit = any(topic.non_labels.values())
    for i, passage in enumerate(topic.passages):
        positive = topic.labels.get(passage.id, frozenset())
        negative = topic.non_labels.get(passage.id, frozenset())
        for aspect in topic.aspects:
            if aspect.id in positive:
                pairs.append((i, column[aspect.id], True))
            elif aspect.id in negative or not explicit:
                pairs.append((i, column[aspect.id], False))
    return pairs


def near_copy(sentence: str, rng: random.Random) -> str | None:
    """The sentence with one content word replaced (None when it has fewer than five words)."""
    words = sentence.split()
    spots = [i for i, w in enumerate(words) if w.lower().strip(".,;:!?") not in STOPWORDS]
    if len(words) < 5 or not spots:
        return None
    words[rng.choice(spots)] = "something"
    return " ".join(words)


def measure(spec: str, topics_wanted: int | None, seed: int) -> dict[str, object]:
    topics = load_dataset(spec)
    if topics_wanted is not None and topics_wanted < len(topics):
        topics = random.Random(seed).sample(topics, topics_wanted)
    scorer = CrossEncoderCoverage().scorer()  # the pairs as the citation check scores them
    labels, probs, aligned = [], [], []
    copies, copies_held = 0, 0
    rng = random.Random(seed)
    for n, topic in enumerate(topics, start=1):
        pairs = labelled_pairs(topic)
        if not pairs:
            continue
        # only the judged pairs are scored, (passage, sentence) as the checker scores them
        texts = [(topic.passages[i].text, topic.aspects[j].text) for i, j, _ in pairs]
        values, _, _ = scorer.score(texts)
        probs.extend(float(v) for v in values)
        for (_, _, supported), (passage, sentence) in zip(pairs, texts, strict=True):
            labels.append(supported)
            aligned.append(align(sentence, passage) is not None)
        print(f"{spec}: {n}/{len(topics)} topics, {len(labels)} pairs", flush=True)
        for passage in topic.passages:
            changed = near_copy(split_sentences(passage.text)[0], rng)
            if changed is not None:
                copies += 1
                copies_held += align(changed, passage.text) is not None
    y, p, a = np.array(labels), np.array(probs), np.array(aligned)
    rows = []
    for t in THRESHOLDS:
        claimed = p >= t
        tp = int((claimed & y).sum())
        precision = tp / claimed.sum() if claimed.any() else float("nan")
        recall = tp / y.sum() if y.any() else float("nan")
        f1 = 2 * precision * recall / (precision + recall) if tp else 0.0
        rows.append({"threshold": t, "precision": precision, "recall": recall, "f1": f1})
    return {
        "dataset": spec,
        "topics": len(topics),
        "pairs": int(len(y)),
        "positives": int(y.sum()),
        "alignment": {
            "claimed": int(a.sum()),
            "claimed_on_negatives": int((a & ~y).sum()),
            "false_claim_rate": float((a & ~y).sum() / max((~y).sum(), 1)),
            "precision": float((a & y).sum() / a.sum()) if a.any() else float("nan"),
            "near_copies": copies,
            "near_copy_recall": copies_held / copies if copies else float("nan"),
        },
        "judge": rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--datasets", nargs="+", default=["argkp2021:dev", "perspectrum-evidence:dev"]
    )
    parser.add_argument("--topics", type=int, default=None, help="random topics per dataset")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    results = [measure(spec, args.topics, args.seed) for spec in args.datasets]
    for r in results:
        print(f"## {r['dataset']}: {r['topics']} topics, {r['pairs']} pairs, {r['positives']} +")
        print("alignment:", json.dumps(r["alignment"]))
        print("| threshold | precision | recall | F1 |\n|---|---|---|---|")
        for row in r["judge"]:  # type: ignore[attr-defined]
            print(
                f"| {row['threshold']:.2f} | {row['precision']:.3f} | {row['recall']:.3f} "
                f"| {row['f1']:.3f} |"
            )
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
