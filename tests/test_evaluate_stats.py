"""Paired randomization test, Holm correction and bootstrap intervals (checked against scipy)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covrag.errors import DataError
from covrag.evaluation import (
    ConfidenceInterval,
    RandomizationTest,
    bootstrap_ci,
    holm,
    paired_randomization_test,
)

scipy_stats = pytest.importorskip("scipy.stats")


def mean_diff(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
    result: np.ndarray = np.mean(x - y, axis=axis)
    return result


def scipy_paired(a: np.ndarray, b: np.ndarray, n_resamples: int, seed: int = 0) -> float:
    return float(
        scipy_stats.permutation_test(
            (a, b),
            mean_diff,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        ).pvalue
    )


@pytest.mark.parametrize("n", [2, 5, 9, 13])
def test_exact_test_equals_scipy(n: int) -> None:
    rng = np.random.default_rng(n)
    a, b = rng.random(n), rng.random(n)
    ours = paired_randomization_test(a, b, n_resamples=10_000)
    assert ours.exact and ours.n_resamples == 2**n
    assert ours.p_value == pytest.approx(scipy_paired(a, b, 10_000), abs=1e-12)
    assert ours.statistic == pytest.approx(float(np.mean(a - b)))


def test_exact_test_by_hand_with_tied_differences() -> None:
    # d = 0.1, 0.1, 0.1 (as float differences of P@10 values): only the all-plus and all-minus
    # assignments reach |sum| = 0.3, so p = 2/8, whatever the rounding of 0.7 - 0.6.
    result = paired_randomization_test([0.7, 0.3, 0.2], [0.6, 0.2, 0.1])
    assert result == RandomizationTest(pytest.approx(0.1), 0.25, 8, True)  # type: ignore[arg-type]
    # d = 0.1, -0.1, 0.2: |sum| >= 0.2 for 6 of the 8 assignments.
    assert paired_randomization_test([0.2, 0.1, 0.4], [0.1, 0.2, 0.2]).p_value == 0.75
    assert paired_randomization_test([0.5, 0.5], [0.5, 0.5]).p_value == 1.0
    assert paired_randomization_test([0.9], [0.1]).p_value == 1.0  # one topic: +d or -d


def test_random_test_approximates_scipy_and_is_seeded() -> None:
    rng = np.random.default_rng(3)
    a = rng.random(40)
    b = a - rng.normal(0.05, 0.2, 40)
    ours = paired_randomization_test(a, b, n_resamples=20_000, seed=5)
    assert not ours.exact and ours.n_resamples == 20_000
    assert ours.p_value == pytest.approx(scipy_paired(a, b, 20_000), abs=0.02)
    assert paired_randomization_test(a, b, n_resamples=20_000, seed=5) == ours
    far = paired_randomization_test(a + 10, a, n_resamples=999)
    assert far.p_value == 1 / 1000  # never 0


def test_paired_inputs_as_mappings_align_by_query_id() -> None:
    a = {"q1": 0.5, "q2": 0.9, "q3": 0.1}
    b = {"q3": 0.0, "q1": 0.4, "q2": 0.5}
    assert paired_randomization_test(a, b) == paired_randomization_test(
        [0.5, 0.9, 0.1], [0.4, 0.5, 0.0]
    )
    with pytest.raises(DataError, match="different topics"):
        paired_randomization_test(a, {"q1": 0.0})


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([1.0], [1.0, 2.0], {}, "different lengths"),
        ([], [], {}, "no values"),
        ([float("nan")], [1.0], {}, "NaN"),
        ([1.0], [1.0], {"n_resamples": 0}, "n_resamples"),
    ],
)
def test_paired_input_errors(
    a: list[float], b: list[float], kwargs: dict[str, int], message: str
) -> None:
    with pytest.raises(DataError, match=message):
        paired_randomization_test(a, b, **kwargs)


def test_holm_by_hand() -> None:
    # sorted: 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> raised to 0.06 (monotone)
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    # sorted 0.01 x4 = 0.04, 0.2 x3 = 0.6, 0.2 x2 = 0.4 -> 0.6, 0.5 x1 = 0.5 -> 0.6
    np.testing.assert_allclose(holm([0.2, 0.2, 0.01, 0.5]), [0.6, 0.6, 0.04, 0.6])
    # capped at 1: 0.6 x2 = 1.2 -> 1
    np.testing.assert_allclose(holm([0.6, 0.6, 0.01]), [1.0, 1.0, 0.03])
    np.testing.assert_allclose(holm([0.04]), [0.04])
    assert holm([]).tolist() == []
    tests = [RandomizationTest(0.1, 0.02, 8, True), RandomizationTest(0.0, 0.5, 8, True)]
    np.testing.assert_allclose(holm(tests), [0.04, 0.5])
    with pytest.raises(DataError):
        holm([1.5])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), max_size=12))
def test_holm_properties(p: list[float]) -> None:
    adjusted = holm(p)
    raw = np.array(p)
    assert np.all(adjusted >= raw - 1e-15) and np.all(adjusted <= 1)
    order = np.argsort(raw, kind="stable")
    assert np.all(np.diff(adjusted[order]) >= 0)
    assert np.all(adjusted <= np.minimum(1, raw * len(p)) + 1e-15)  # never above Bonferroni


def test_bootstrap_equals_scipy_percentile() -> None:
    values = np.random.default_rng(0).random(57)
    ours = bootstrap_ci(values, n_resamples=3000, seed=11, confidence=0.9)
    theirs = scipy_stats.bootstrap(
        (values,),
        np.mean,
        method="percentile",
        n_resamples=3000,
        confidence_level=0.9,
        rng=np.random.default_rng(11),
        vectorized=True,
    ).confidence_interval
    assert isinstance(ours, ConfidenceInterval)
    assert ours.low == pytest.approx(theirs.low, abs=1e-12)
    assert ours.high == pytest.approx(theirs.high, abs=1e-12)
    low, high = ours  # a plain (low, high) tuple
    assert low < values.mean() < high


def test_bootstrap_is_seeded_and_validates() -> None:
    values = {"q1": 0.2, "q2": 0.4, "q3": 0.9}
    assert bootstrap_ci(values, seed=1) == bootstrap_ci(values, seed=1)
    assert bootstrap_ci([0.5]) == (0.5, 0.5)
    with pytest.raises(DataError, match="confidence"):
        bootstrap_ci([0.5], confidence=1.0)
    with pytest.raises(DataError, match="no values"):
        bootstrap_ci([])
