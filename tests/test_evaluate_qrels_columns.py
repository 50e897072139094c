"""Judgments read column-wise from qrels files (``read_judgments``): the same record and the same
measure values as ``judgments_from_qrels(read_qrels(path))``, topics made on demand."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from covrag.data._columns import read_columns
from covrag.errors import DataError
from covrag.evaluation import (
    Judgments,
    TopicJudgments,
    diversity_qrels,
    evaluate,
    judgments_from_qrels,
    read_judgments,
    read_qrels,
    write_qrels,
)
from covrag.evaluation._qrels_columns import judgments_from_columns

MEASURES = ["alpha-nDCG@5", "alpha-nDCG(alpha=0.7)@3", "StRecall@5", "P@5", "nDCG@5", "Excl@5"]


def _labels(
    seed: int, topics: int, aspects: int, prefix: str = ""
) -> dict[str, dict[str, list[str]]]:
    rng = np.random.default_rng(seed)
    docs = [f"{prefix}d{i}" for i in range(12)]
    return {
        f"{prefix}q{q}": {
            doc: [f"a{j}" for j in np.flatnonzero(rng.random(aspects) < 0.3)]
            for doc in rng.choice(docs, size=int(rng.integers(1, 12)), replace=False).tolist()
        }
        for q in range(topics)
    }


def _check_same(path: Path, fast: bool = True) -> Judgments:
    """read_judgments equals the line-by-line record, topic for topic and measure for measure."""
    columns = read_columns(path, 4)
    if fast:  # the file takes the column-wise path (not the fallback)
        assert columns is not None and judgments_from_columns(columns) is not None
    ours = read_judgments(path)
    reference = judgments_from_qrels(read_qrels(path))
    assert list(ours) == list(reference) and ours.query_ids == reference.query_ids
    assert ours.topics == reference.topics
    rng = random.Random(0)
    run = {
        q: rng.sample(sorted(t.labels) + ["unjudged"], k=len(t.labels))
        for q, t in reference.items()
    }
    ours_values = evaluate(ours, run, MEASURES).values
    assert np.array_equal(ours_values, evaluate(reference, run, MEASURES).values)
    return ours


@pytest.mark.parametrize(
    ("seed", "topics", "aspects", "prefix"),
    [
        (0, 6, 4, ""),
        (1, 8, 12, "long-identifier-"),  # ids over 8 and 16 bytes
        (2, 5, 20, ""),  # more aspects than the bitmask table holds
    ],
)
def test_written_qrels_read_as_line_by_line(
    tmp_path: Path, seed: int, topics: int, aspects: int, prefix: str
) -> None:
    path = tmp_path / "x.qrels"
    write_qrels(
        path, diversity_qrels(Judgments.from_labels(_labels(seed, topics, aspects, prefix)))
    )
    _check_same(path)


def test_shuffled_lines_duplicates_and_grades(tmp_path: Path) -> None:
    path = tmp_path / "x.qrels"
    write_qrels(path, diversity_qrels(Judgments.from_labels(_labels(3, 7, 6))))
    lines = path.read_text().splitlines()
    lines += lines[:5]  # duplicate judgments
    random.Random(1).shuffle(lines)  # topics interleaved, aspects in a new first-seen order
    lines += ["q0 a9 dX -1", "q0 a8 dY 0", "q1 a7 dZ 12", "q9 a1 d1 0"]
    path.write_text("\n".join(lines) + "\n")
    _check_same(path)


def test_separators_line_ends_and_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "x.qrels"
    path.write_bytes(b"\r\n q1\ta\t d1  1 \r\nq1 b d2 1\r\n\r\nq2 a d1 0\n\nq1 a d2 2")
    _check_same(path)


def test_more_aspects_than_bits_fall_back(tmp_path: Path) -> None:
    path = tmp_path / "x.qrels"
    path.write_text("".join(f"q1 a{j} d{j % 3} 1\n" for j in range(70)))
    columns = read_columns(path, 4)
    assert columns is not None and judgments_from_columns(columns) is None
    assert len(_check_same(path, fast=False)["q1"].aspects) == 70


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("q1 a d1 1\nq1 a d2\n", "line 2: expected 4 columns"),
        ("q1 a d1 1\nq1 a d2 yes\n", "line 2, field 'relevance'"),
        ("q1 a d1 1\nq1 a d2 1.5\n", "line 2, field 'relevance'"),
    ],
)
def test_errors_name_the_file_and_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "x.qrels"
    path.write_text(text)
    with pytest.raises(DataError, match=match) as error:
        read_judgments(path)
    assert str(path) in str(error.value)


def test_non_ascii_ids_take_the_careful_reader(tmp_path: Path) -> None:
    path = tmp_path / "x.qrels"
    path.write_text("q1 ä d1 1\nq1 b dé 1\n", encoding="utf-8")
    assert read_columns(path, 4) is None
    assert _check_same(path, fast=False)["q1"].labels == {"d1": {"ä"}, "dé": {"b"}}


def test_topics_are_made_on_demand_and_read_only(tmp_path: Path) -> None:
    path = tmp_path / "x.qrels"
    path.write_text("q2 b d1 1\nq2 a d1 1\nq2 a d3 0\nq1 a d2 1\n")
    judgments = read_judgments(path)
    assert len(judgments) == 2 and judgments.query_ids == ("q2", "q1")
    assert "q1" in judgments and "q3" not in judgments
    assert judgments["q2"] == TopicJudgments(
        "q2", {"d1": frozenset({"a", "b"}), "d3": frozenset()}, ("b", "a")
    )
    assert judgments["q2"] is judgments["q2"]  # made once
    with pytest.raises(KeyError):
        judgments["q3"]
    with pytest.raises(AttributeError):
        judgments.topics = ()  # type: ignore[misc]
    assert repr(judgments) == "Judgments(2 topics)"


def test_a_file_with_nothing_relevant_reads_like_the_line_reader(tmp_path: Path) -> None:
    # Found by the fuzz test: the array path assumed at least one relevant line.
    path = tmp_path / "q.txt"
    path.write_text("0 0 0 0\nq1 a d1 0\n")
    assert read_judgments(path).topics == judgments_from_qrels(read_qrels(path)).topics
