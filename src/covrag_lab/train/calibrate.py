"""Choosing a coverage threshold on dev pairs, and the figures that show how well a model ranks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.stats import rankdata

from covrag.coverage.cross_encoder import PairScorer
from covrag.types import FloatArray
from covrag_lab.train.pairs import Pair


def roc_auc(labels: Sequence[int] | np.ndarray, scores: FloatArray) -> float:
    """Area under the ROC curve (the Mann-Whitney U statistic, ties counted half)."""
    y = np.asarray(labels, dtype=bool)
    positives, negatives = int(y.sum()), int((~y).sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = rankdata(scores)
    return float((ranks[y].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def best_f1_threshold(
    labels: Sequence[int] | np.ndarray, scores: FloatArray, grid: FloatArray | None = None
) -> tuple[float, float]:
    """The threshold (on a grid of 0.05 .. 0.95) with the highest F1, and that F1."""
    y = np.asarray(labels, dtype=bool)
    grid = np.round(np.arange(0.05, 0.951, 0.05), 2) if grid is None else grid
    best = (0.5, -1.0)
    for threshold in grid:
        predicted = scores >= threshold
        tp = int((predicted & y).sum())
        denominator = int(predicted.sum()) + int(y.sum())
        f1 = 2 * tp / denominator if denominator else 0.0
        if f1 > best[1]:
            best = (float(threshold), f1)
    return best


def f1_at(labels: Sequence[int] | np.ndarray, scores: FloatArray, threshold: float) -> float:
    y = np.asarray(labels, dtype=bool)
    predicted = scores >= threshold
    denominator = int(predicted.sum()) + int(y.sum())
    return 2 * int((predicted & y).sum()) / denominator if denominator else 0.0


@dataclass(frozen=True)
class Calibration:
    threshold: float
    per_dataset: dict[str, dict[str, float]]


def calibrate_pairs(
    model: str | Path, dev: Mapping[str, Sequence[Pair]], max_length: int = 256
) -> Calibration:
    """Score every dev pair, pick the F1-best threshold over all of them, report per dataset."""
    scorer = PairScorer(str(model), batch_size=64, max_length=max_length, cache_size=1_000_000)
    scored: dict[str, tuple[np.ndarray, FloatArray]] = {}
    for name, pairs in dev.items():
        values, _, _ = scorer.score([(p.passage, p.aspect) for p in pairs])
        scored[name] = (np.array([p.label for p in pairs]), values)
    labels = np.concatenate([s[0] for s in scored.values()]) if scored else np.zeros(0)
    values = np.concatenate([s[1] for s in scored.values()]) if scored else np.zeros(0)
    threshold, _ = best_f1_threshold(labels, values)
    per_dataset = {
        name: {
            "pairs": float(len(y)),
            "positives": float(y.sum()),
            "roc_auc": roc_auc(y, v),
            "f1": f1_at(y, v, threshold),
        }
        for name, (y, v) in scored.items()
    }
    return Calibration(threshold, per_dataset)
