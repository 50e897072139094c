"""Headroom: how far a method is from the optimum, and how much of a baseline's gap it closes.

With per-topic scores of a method, a baseline and the optimum (e.g. the exact best selection on
the gold labels, LMVU's "headroom"), the headroom is ``optimum - method`` and the share of the gap
closed is ``(method - baseline) / (optimum - baseline)``: 0 at the baseline, 1 at the optimum,
negative below the baseline, above 1 when the method beats the "optimum" (possible when the
optimum maximises a different objective than the measure). The share is NaN, never an error or
a warning, when the optimum equals the baseline: there was no gap to close.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from covrag.errors import DataError
from covrag.types import FloatArray

ORACLE = "exact @ gold"
"""The name of the optimum in a comparison of methods: the exact selection on the gold labels
(a bench's oracle row; the reports draw it dashed)."""

Scores = Mapping[str, float] | Sequence[float] | FloatArray
"""Per-topic scores: query id -> value, or values in a shared topic order."""


def gap_closed(method: float, baseline: float, optimum: float) -> float:
    """Share of the baseline-to-optimum gap a method closes: (method - baseline) / (optimum -
    baseline); NaN when optimum == baseline or any value is NaN.

    Example:
        >>> gap_closed(0.75, 0.5, 1.0)
        0.5
    """
    gap = optimum - baseline
    if gap == 0 or math.isnan(gap) or math.isnan(method):
        return float("nan")
    return (method - baseline) / gap


@dataclass(frozen=True, eq=False)
class Headroom:
    """Per-topic scores of a method, a baseline and the optimum, and the gaps between them.

    Attributes:
        query_ids: Topic order of the arrays.
        method: (topics,) the method's scores.
        baseline: (topics,) the baseline's scores.
        optimum: (topics,) the optimum's scores.
    """

    query_ids: tuple[str, ...]
    method: FloatArray
    baseline: FloatArray
    optimum: FloatArray

    @classmethod
    def from_scores(cls, method: Scores, baseline: Scores, optimum: Scores) -> Headroom:
        """Headroom of a method between a baseline and the optimum, per topic and on means.

        Mappings are aligned by query id (they must hold the same ids); sequences must share one
        topic order and length.

        Raises:
            DataError: the inputs cover different topics or have different lengths.

        Example:
            >>> h = Headroom.from_scores({"q": 0.7}, {"q": 0.5}, {"q": 0.9})
            >>> round(h.mean_gap, 3), round(h.closed_on_means, 3)
            (0.2, 0.5)
        """
        query_ids, arrays = _align(method, baseline, optimum)
        return cls(query_ids, *arrays)

    @property
    def gap(self) -> FloatArray:
        """Per topic, optimum - method."""
        result: FloatArray = self.optimum - self.method
        return result

    @property
    def closed(self) -> FloatArray:
        """Per topic, the share of the baseline-to-optimum gap closed (NaN where no gap)."""
        gap = self.optimum - self.baseline
        with np.errstate(divide="ignore", invalid="ignore"):
            share = (self.method - self.baseline) / gap
        result: FloatArray = np.where(gap != 0, share, np.nan)
        return result

    @property
    def mean_gap(self) -> float:
        """Mean optimum - mean method (NaN without topics)."""
        return _mean(self.optimum) - _mean(self.method)

    @property
    def closed_on_means(self) -> float:
        """The share of the gap closed, computed on the means (the figure to report)."""
        return gap_closed(_mean(self.method), _mean(self.baseline), _mean(self.optimum))


def _align(*series: Scores) -> tuple[tuple[str, ...], list[FloatArray]]:
    if all(isinstance(s, Mapping) for s in series):
        mappings = [s for s in series if isinstance(s, Mapping)]
        query_ids = tuple(mappings[0])
        for other in mappings[1:]:
            if set(other) != set(query_ids):
                missing = sorted(set(query_ids).symmetric_difference(other))[:5]
                raise DataError(f"scores cover different topics (e.g. {missing})")
        arrays = [np.array([m[q] for q in query_ids], dtype=np.float64) for m in mappings]
    elif any(isinstance(s, Mapping) for s in series):
        raise DataError("give all scores as mappings (query id -> value) or all as sequences")
    else:
        arrays = [np.asarray(s, dtype=np.float64).reshape(-1) for s in series]
        if len({len(a) for a in arrays}) != 1:
            raise DataError(f"scores have different lengths: {[len(a) for a in arrays]}")
        query_ids = tuple(str(i) for i in range(len(arrays[0])))
    for array in arrays:
        array.setflags(write=False)
    return query_ids, arrays


def _mean(values: FloatArray) -> float:
    return float(values.mean()) if len(values) else float("nan")
