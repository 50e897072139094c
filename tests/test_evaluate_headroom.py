"""Headroom: gap to the optimum and share of the baseline-to-optimum gap closed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from covrag.errors import DataError
from covrag.evaluation import Headroom, gap_closed


def test_gap_closed_by_hand() -> None:
    assert gap_closed(0.75, 0.5, 1.0) == 0.5
    assert gap_closed(1.0, 0.5, 1.0) == 1.0
    assert gap_closed(0.5, 0.5, 1.0) == 0.0
    assert gap_closed(0.25, 0.5, 1.0) == -0.5  # worse than the baseline
    assert gap_closed(1.25, 0.5, 1.0) == 1.5  # beats the "optimum"


def test_gap_closed_is_nan_without_a_gap() -> None:
    assert math.isnan(gap_closed(0.7, 0.6, 0.6))
    assert math.isnan(gap_closed(0.6, 0.6, 0.6))
    assert math.isnan(gap_closed(float("nan"), 0.5, 1.0))
    assert math.isnan(gap_closed(0.5, float("nan"), 1.0))


def test_headroom_per_topic_and_on_means() -> None:
    method = {"q1": 0.6, "q2": 0.9, "q3": 0.5}
    baseline = {"q3": 0.5, "q1": 0.4, "q2": 0.8}
    optimum = {"q2": 1.0, "q1": 0.8, "q3": 0.5}
    h = Headroom.from_scores(method, baseline, optimum)
    assert h.query_ids == ("q1", "q2", "q3")
    np.testing.assert_allclose(h.gap, [0.2, 0.1, 0.0])
    closed = h.closed
    np.testing.assert_allclose(closed[:2], [0.5, 0.5])
    assert math.isnan(closed[2])  # no gap on q3: NaN, no warning
    assert h.mean_gap == pytest.approx(0.1)
    assert h.closed_on_means == pytest.approx((2.0 - 1.7) / (2.3 - 1.7))


def test_headroom_from_sequences() -> None:
    h = Headroom.from_scores([0.5, 1.0], np.array([0.0, 0.0]), (1.0, 1.0))
    assert h.query_ids == ("0", "1")
    assert h.closed.tolist() == [0.5, 1.0]


def test_headroom_input_errors() -> None:
    with pytest.raises(DataError, match="different topics"):
        Headroom.from_scores({"a": 1.0}, {"b": 1.0}, {"a": 1.0})
    with pytest.raises(DataError, match="all as sequences"):
        Headroom.from_scores({"a": 1.0}, [1.0], [1.0])
    with pytest.raises(DataError, match="different lengths"):
        Headroom.from_scores([1.0], [1.0, 2.0], [1.0])


def test_empty_headroom_is_nan() -> None:
    h = Headroom.from_scores({}, {}, {})
    assert math.isnan(h.mean_gap) and math.isnan(h.closed_on_means)
