from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.selectors import Candidates
from covrag.selectors.exclusion import apply_exclusion, check_exclusion
from covrag.types import CoverageMatrix, Passage

COVERED = np.array([[1, 1, 0], [1, 0, 0], [0, 1, 1]], dtype=bool)


def pool(excluded: list[bool] | None) -> Candidates:
    ids = ("p0", "p1", "p2")
    return Candidates(
        "q",
        "q",
        tuple(Passage(id=i, text="t") for i in ids),
        coverage=CoverageMatrix(ids, ("a", "x", "y"), COVERED.astype(float)),
        aspect_weights=np.array([1.0, 2.0, 3.0]),
        excluded=None if excluded is None else np.array(excluded),
    )


def test_ignore_and_no_flags_change_nothing() -> None:
    for candidates, mode in ((pool([False, True, True]), "ignore"), (pool(None), "forbid")):
        effect = apply_exclusion(candidates, COVERED, mode, 1.0)
        assert effect.allowed.all() and not effect.penalty.any()
        assert effect.weights.tolist() == [1.0, 2.0, 3.0]


def test_forbid_and_penalize() -> None:
    candidates = pool([False, True, True])
    forbid = apply_exclusion(candidates, COVERED, "forbid", 1.0)
    assert forbid.allowed.tolist() == [False, True, False]
    assert forbid.weights.tolist() == [1.0, 0.0, 0.0]
    penalize = apply_exclusion(candidates, COVERED, "penalize", 0.5)
    assert penalize.allowed.all()
    assert penalize.penalty.tolist() == [0.5, 0.0, 1.0]
    assert candidates.weights().tolist() == [1.0, 2.0, 3.0]  # the pool is not modified


def test_check_exclusion() -> None:
    check_exclusion("penalize", 0.0)
    with pytest.raises(ConfigError):
        check_exclusion("avoid", 1.0)
    with pytest.raises(ConfigError):
        check_exclusion("penalize", float("nan"))
