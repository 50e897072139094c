"""Where label-free selection on ArgKP loses against a perfect same-point similarity (issue 36).

On the 28 ArgKP train + dev topics, k = 10, alpha-nDCG@10 (covrag's measures):

- facility location over MiniLM cosine, over a same-point model (each topic scored by the fold
  model trained without it: ``CACHE/argkp-fold<i>/onnx``, as ``cv_same_point.py train`` writes
  them), and over the *gold* same-point similarity (1 when two arguments share a key point);
- the same over the fold models with the arguments that match no key point removed by oracle
  (what a perfect "makes a point" filter would add);
- the share of arguments that match no key point, and the pairwise ROC-AUC of the fold models'
  cosines for "shares a key point" among arguments that match one.

Usage::

    python benchmarks/same_point_headroom.py /tmp/sp10
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from covrag.coverage.onnx_encoder import OnnxEncoder
from covrag.data import load_dataset
from covrag.evaluation import Judgments, evaluate
from covrag.pipeline.prepare import PrepareConfig
from covrag.selectors.base import BudgetTracker
from covrag.selectors.facility import FacilityLocation
from covrag.selectors.optimize import lazy_greedy
from covrag.types import Budget, Topic
from covrag_lab.cv import assign_folds
from covrag_lab.train.calibrate import roc_auc

K, FOLDS, SEED = 10, 5, 0
MEASURE = f"alpha-nDCG@{K}"


def greedy(similarity: np.ndarray, allowed: np.ndarray | None = None) -> list[int]:
    """Facility location's lazy-greedy picks (k of them) over ``similarity``, from ``allowed``."""
    n = len(similarity)
    available = np.ones(n, dtype=bool) if allowed is None else allowed.copy()
    tracker = BudgetTracker(Budget(max_passages=K), np.zeros(n, dtype=np.int64))
    rank = np.arange(n, dtype=np.int64)  # ties: the earlier passage
    picked, _ = lazy_greedy(
        FacilityLocation(similarity.astype(np.float64)), tracker, available, rank
    )
    return picked


def main(cache: Path) -> None:
    topics: list[Topic] = [t for s in ("train", "dev") for t in load_dataset(f"argkp2021:{s}")]
    fold_of = assign_folds([t.query_id for t in topics], FOLDS, SEED)
    minilm = PrepareConfig().resolved_encoder()
    runs: dict[str, dict[str, list[str]]] = {}
    unmatched, aucs = [], []
    for topic in topics:
        texts = [p.text for p in topic.passages]
        ids = list(topic.passage_ids)
        labels = [topic.labels.get(p, frozenset()) for p in ids]
        matched = np.array([bool(a) for a in labels])
        gold = np.array([[1.0 if (a & b) or i == j else 0.0 for j, b in enumerate(labels)]
                         for i, a in enumerate(labels)])  # fmt: skip
        model = OnnxEncoder(cache / f"argkp-fold{fold_of[topic.query_id]}" / "onnx")
        vectors = model.encode(texts)
        same_point = np.maximum(vectors @ vectors.T, 0.0)
        cosine = minilm.encode(texts)
        settings = {
            "facility location, MiniLM cosine": greedy(np.maximum(cosine @ cosine.T, 0.0)),
            "facility location, same-point fold models": greedy(same_point),
            "the same, unmatched arguments removed by oracle": greedy(same_point, matched),
            "facility location, gold same-point similarity": greedy(gold),
        }
        for name, picks in settings.items():
            runs.setdefault(name, {})[topic.query_id] = [ids[i] for i in picks]
        unmatched.append(1.0 - matched.mean())
        upper = np.triu_indices(len(ids), 1)
        both = (matched[:, None] & matched[None, :])[upper]
        aucs.append(roc_auc((gold[upper] > 0)[both], same_point[upper][both]))
    judgments = Judgments.from_topics(topics)
    for name, run in runs.items():
        values = evaluate(judgments, run, [MEASURE])
        print(f"{values.mean(MEASURE):.3f}  {name}")
    print(f"arguments matching no key point: {np.mean(unmatched):.0%} per topic on average")
    print(f"pairwise ROC-AUC of the fold models (shares a key point, matched arguments): "
          f"{np.mean(aucs):.3f}")  # fmt: skip


if __name__ == "__main__":
    main(Path(sys.argv[1]))
