from __future__ import annotations

import numpy as np
import pytest

from covrag.types import Aspect, Budget, CoverageMatrix, Passage, Selection, SelectionStep


def test_coverage_matrix_is_read_only_and_thresholded() -> None:
    probs = np.array([[0.2, 0.7], [0.5, 0.1]])
    matrix = CoverageMatrix(("p1", "p2"), ("a1", "a2"), probs, threshold=0.5)
    probs[0, 0] = 0.9  # the record keeps its own copy
    assert matrix.covered.tolist() == [[False, True], [True, False]]
    assert matrix.aspects_of("p2") == ("a1",)
    assert matrix.with_threshold(0.05).covered.all()
    with pytest.raises(ValueError):
        matrix.probs[0, 0] = 1.0


def test_aspects_may_have_thresholds_of_their_own() -> None:
    probs = np.array([[0.2, 0.7], [0.5, 0.35]])
    matrix = CoverageMatrix(("p1", "p2"), ("a1", "a2"), probs, 0.5, aspect_thresholds=(0.5, 0.3))
    assert matrix.covered.tolist() == [[False, True], [True, True]]
    assert matrix.aspects_of("p2") == ("a1", "a2")
    assert matrix.threshold_text() == "0.5 (0.3 for a2)"
    many = CoverageMatrix(
        ("p",), tuple("abcd"), np.zeros((1, 4)), 0.5, aspect_thresholds=(0.3,) * 4
    )
    assert many.threshold_text() == "0.5 (0.3 for 4 aspects)"
    again = matrix.with_threshold(0.6)  # one threshold for every aspect again
    assert again.aspect_thresholds is None
    assert again.covered.tolist() == [[False, True], [False, False]]
    from covrag.schema.runfile import RunCoverage

    back = RunCoverage.model_validate(RunCoverage.of(matrix).model_dump()).to_matrix()
    assert back.aspect_thresholds == (0.5, 0.3) and back.covered.tolist() == matrix.covered.tolist()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"aspect_thresholds": (0.5,)}, "1 values for 2 aspects"),
        ({"aspect_thresholds": (0.5, 1.5)}, r"aspect_thresholds must lie in \[0, 1\]"),
        ({"probs": np.zeros((2, 3))}, "shape"),
        ({"probs": np.full((2, 2), 1.5)}, r"\[0, 1\]"),
        ({"probs": np.full((2, 2), np.nan)}, "NaN"),
        ({"threshold": 2.0}, "threshold"),
        ({"passage_ids": ("p", "p")}, "duplicates"),
    ],
)
def test_coverage_matrix_validation(kwargs: dict[str, object], match: str) -> None:
    args: dict[str, object] = {
        "passage_ids": ("p1", "p2"),
        "aspect_ids": ("a1", "a2"),
        "probs": np.zeros((2, 2)),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        CoverageMatrix(**args)  # type: ignore[arg-type]


def test_records_validate() -> None:
    with pytest.raises(ValueError):
        Budget(max_passages=0)
    with pytest.raises(ValueError):
        Budget(max_tokens=-5)
    with pytest.raises(ValueError):
        Aspect("a", "x", polarity="sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Passage("", "x")
    assert str(Budget(10, 512)) == "k=10,tokens=512"
    assert Budget().unlimited


def test_selection_summaries() -> None:
    steps = (
        SelectionStep("p1", 2.0, ("a1", "a2"), 10),
        SelectionStep("p2", 1.0, (), 5),
        SelectionStep("p3", 1.0, ("a3",), 7),
    )
    selection = Selection("q", "greedy-coverage", Budget(3), steps)
    assert selection.passage_ids == ("p1", "p2", "p3")
    assert selection.tokens_used == 22
    assert selection.covered == ("a1", "a2", "a3")
    assert len(selection) == 3


def test_aspect_answers_are_kept_as_a_tuple_of_statements() -> None:
    from covrag.types import Aspect

    aspect = Aspect("a", "Why?", answers=["Because it rains."])  # type: ignore[arg-type]
    assert aspect.answers == ("Because it rains.",)
    assert aspect != Aspect("a", "Why?")  # the sketches change what the aspect is scored as
    for bad in ("Because.", ("",), (3,)):
        with pytest.raises(ValueError, match="Aspect.answers"):
            Aspect("a", "Why?", answers=bad)  # type: ignore[arg-type]
