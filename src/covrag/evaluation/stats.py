"""Paired significance tests, multiple-comparison correction and bootstrap intervals.

- :func:`paired_randomization_test`: two-sided paired randomization (sign-flip) test of the mean
  per-topic difference (Fisher 1935; for IR, Smucker, Allan and Carterette, CIKM 2007).
- :func:`holm`: Holm-Bonferroni adjusted p-values across comparisons (Holm 1979).
- :func:`bootstrap_ci`: percentile bootstrap confidence interval of a mean (Efron 1979).

All randomness comes from ``numpy.random.default_rng(seed)``: same inputs and seed, same result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from covrag.errors import DataError
from covrag.types import FloatArray

Values = Mapping[str, float] | Sequence[float] | npt.NDArray[np.floating]
"""Per-topic values: query id -> value, or values in a topic order shared by both sides."""

_BATCH_ELEMENTS = 1 << 22


@dataclass(frozen=True)
class RandomizationTest:
    """Result of a paired randomization test.

    Attributes:
        statistic: Observed mean of the per-topic differences a - b.
        p_value: Two-sided p-value: the share of sign assignments whose mean difference is at
            least as far from 0 as the observed one.
        n_resamples: Sign assignments evaluated (2**n when exact).
        exact: Whether all 2**n sign assignments were enumerated.
    """

    statistic: float
    p_value: float
    n_resamples: int
    exact: bool


def paired_randomization_test(
    a: Values, b: Values, *, n_resamples: int = 10_000, seed: int = 0
) -> RandomizationTest:
    """Two-sided paired randomization (sign-flip) test of mean(a - b) = 0.

    Under the null hypothesis each topic's two scores are exchangeable, so the sign of each
    difference d_i = a_i - b_i is a fair coin. The p-value is the share of sign assignments s with
    ``|sum(s * d)| >= |sum(d)|``, up to a rounding tolerance of ``64 eps sum|d|`` so differences
    that tie exactly (as P@10 values often do) count as ties. When ``2**n <= n_resamples`` all
    assignments are enumerated and the p-value is exact (it then equals scipy's
    ``permutation_test(..., permutation_type='samples')``); otherwise ``n_resamples`` random
    assignments are drawn and p = (hits + 1) / (n_resamples + 1), which is never 0 (Phipson and
    Smyth 2010).

    Args:
        a: Per-topic scores of one method.
        b: Per-topic scores of the other, on the same topics.
        n_resamples: Random sign assignments to draw when not enumerating.
        seed: Seed of the random assignments.

    Raises:
        DataError: different topics or lengths, no topics, or NaN values.

    Example:
        >>> paired_randomization_test([0.5, 0.6, 0.7], [0.4, 0.5, 0.5]).p_value
        0.25
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise DataError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    first, second = _paired(a, b)
    diff = first - second
    n = len(diff)
    tolerance = 64 * np.finfo(np.float64).eps * float(np.abs(diff).sum())
    observed = float(_signed_sums(np.ones((1, n), dtype=np.int8), diff)[0])
    threshold = abs(observed) - tolerance
    batch = max(1, _BATCH_ELEMENTS // max(n, 1))
    hits = 0
    if n < 63 and 2**n <= n_resamples:
        total = 2**n
        bits = np.arange(n, dtype=np.int64)
        for start in range(0, total, batch):
            codes = np.arange(start, min(total, start + batch), dtype=np.int64)
            signs = (1 - 2 * ((codes[:, None] >> bits) & 1)).astype(np.int8)
            hits += int((np.abs(_signed_sums(signs, diff)) >= threshold).sum())
        return RandomizationTest(observed / n, hits / total, total, True)
    rng = np.random.default_rng(seed)
    for start in range(0, n_resamples, batch):
        size = min(batch, n_resamples - start)
        signs = (rng.integers(0, 2, size=(size, n), dtype=np.int8) * 2 - 1).astype(np.int8)
        hits += int((np.abs(_signed_sums(signs, diff)) >= threshold).sum())
    return RandomizationTest(observed / n, (hits + 1) / (n_resamples + 1), n_resamples, False)


def _signed_sums(signs: npt.NDArray[np.int8], diff: FloatArray) -> FloatArray:
    # The same row-wise reduction for the observed and the resampled sums, so a sign assignment
    # equal to the observed one gives the same float.
    result: FloatArray = (signs * diff).sum(axis=1)
    return result


def holm(p_values: Sequence[float] | Sequence[RandomizationTest]) -> FloatArray:
    """Holm-Bonferroni adjusted p-values, in the order given.

    With the m p-values sorted ascending, p_(1) <= ... <= p_(m), the adjusted value of p_(i) is
    ``max over j <= i of min(1, (m - j + 1) p_(j))``. Rejecting where the adjusted value is at
    most alpha controls the family-wise error rate at alpha.

    Args:
        p_values: Raw p-values, or randomization test results (their p-values are used).

    Example:
        >>> holm([0.01, 0.04, 0.03]).tolist()
        [0.03, 0.06, 0.06]
    """
    raw = np.array(
        [p.p_value if isinstance(p, RandomizationTest) else float(p) for p in p_values],
        dtype=np.float64,
    )
    if np.isnan(raw).any() or (raw < 0).any() or (raw > 1).any():
        raise DataError(f"p-values must lie in [0, 1], got {raw.tolist()}")
    m = len(raw)
    order = np.argsort(raw, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * raw[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled) if m else scaled
    return adjusted


class ConfidenceInterval(NamedTuple):
    """A two-sided confidence interval (a ``(low, high)`` tuple)."""

    low: float
    high: float


def bootstrap_ci(
    values: Values, *, confidence: float = 0.95, n_resamples: int = 10_000, seed: int = 0
) -> ConfidenceInterval:
    """Percentile bootstrap confidence interval of the mean of per-topic values.

    Draws ``n_resamples`` samples of the n values with replacement, takes each sample's mean,
    and returns the (1 - confidence)/2 and (1 + confidence)/2 percentiles (linear
    interpolation) of those means. With fewer than 2^22 resampled values in all it draws them as
    scipy does, so ``scipy.stats.bootstrap(..., method='percentile', rng=default_rng(seed))``
    gives the same interval.

    Raises:
        DataError: no values, NaN values, or a confidence outside (0, 1).

    Example:
        >>> bootstrap_ci([0.5, 0.5, 0.5])
        ConfidenceInterval(low=0.5, high=0.5)
    """
    if not 0.0 < confidence < 1.0:
        raise DataError(f"confidence must lie in (0, 1), got {confidence!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 1:
        raise DataError(f"n_resamples must be an integer >= 1, got {n_resamples!r}")
    sample = _values(values)
    n = len(sample)
    rng = np.random.default_rng(seed)
    batch = n_resamples if n_resamples * n <= _BATCH_ELEMENTS else max(1, _BATCH_ELEMENTS // n)
    means = np.empty(n_resamples)
    for start in range(0, n_resamples, batch):
        size = min(batch, n_resamples - start)
        means[start : start + size] = sample[rng.integers(0, n, (size, n))].mean(axis=1)
    tail = (1.0 - confidence) / 2.0
    low, high = np.percentile(means, [100.0 * tail, 100.0 * (1.0 - tail)])
    return ConfidenceInterval(float(low), float(high))


def _values(values: Values) -> FloatArray:
    if isinstance(values, Mapping):
        array = np.array(list(values.values()), dtype=np.float64)
    else:
        array = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(array) == 0:
        raise DataError("no values given")
    if np.isnan(array).any():
        raise DataError("values contain NaN")
    return array


def _paired(a: Values, b: Values) -> tuple[FloatArray, FloatArray]:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        if set(a) != set(b):
            missing = sorted(set(a).symmetric_difference(b))[:5]
            raise DataError(f"paired scores cover different topics (e.g. {missing})")
        keys = list(a)
        return _values([a[k] for k in keys]), _values([b[k] for k in keys])
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        raise DataError("give both sides as mappings (query id -> value) or both as sequences")
    first, second = _values(a), _values(b)
    if len(first) != len(second):
        raise DataError(f"paired scores have different lengths: {len(first)} and {len(second)}")
    return first, second
