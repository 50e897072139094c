"""Diversity qrels export: records, the TREC text format, round trips, the optional extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from covrag.errors import DataError, MissingExtraError
from covrag.evaluation import (
    DiversityQrel,
    Judgments,
    binary_qrels,
    diversity_qrels,
    judgments_from_qrels,
    read_qrels,
    write_qrels,
)
from covrag.evaluation.qrels import (
    coverage_qrels,
    format_qrels,
    run_to_ir_measures,
    to_ir_measures,
    topic_qrels,
)
from covrag.types import Aspect, CoverageMatrix, Passage, Topic

JUDGMENTS = Judgments.from_labels(
    {
        "q1": {"d2": ["b", "a"], "d1": ["a"], "d3": []},
        "q2": {"e1": []},
    },
    aspects={"q1": ["b", "a", "c"]},
)


def test_diversity_qrels_lines_and_order() -> None:
    assert diversity_qrels(JUDGMENTS) == [
        DiversityQrel("q1", "d2", 1, "b"),
        DiversityQrel("q1", "d1", 1, "a"),
        DiversityQrel("q1", "d2", 1, "a"),
        DiversityQrel("q1", "d3", 0, "b"),  # judged, no aspect: first aspect, relevance 0
        DiversityQrel("q2", "e1", 0, "0"),  # a topic without aspects
    ]


def test_binary_qrels() -> None:
    assert binary_qrels(JUDGMENTS) == [
        DiversityQrel("q1", "d1", 1, "0"),
        DiversityQrel("q1", "d2", 1, "0"),
        DiversityQrel("q1", "d3", 0, "0"),
        DiversityQrel("q2", "e1", 0, "0"),
    ]


def test_text_format_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "qrels.txt"
    write_qrels(path, diversity_qrels(JUDGMENTS))
    assert path.read_text().splitlines()[:2] == ["q1 b d2 1", "q1 a d1 1"]
    assert read_qrels(path) == diversity_qrels(JUDGMENTS)
    back = judgments_from_qrels(read_qrels(path))
    for query_id in JUDGMENTS:
        assert back[query_id].labels == JUDGMENTS[query_id].labels
        assert back[query_id].actual_aspects == JUDGMENTS[query_id].actual_aspects


def test_format_errors(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="free of whitespace"):
        format_qrels([DiversityQrel("q 1", "d", 1, "a")])
    bad = tmp_path / "bad.txt"
    bad.write_text("q1 a d1 1\nq1 a d2\n")
    with pytest.raises(DataError, match="line 2"):
        read_qrels(bad)
    bad.write_text("q1 a d1 yes\n")
    with pytest.raises(DataError, match="relevance must be an integer"):
        read_qrels(bad)


def test_topic_and_coverage_qrels() -> None:
    topic = Topic(
        "t",
        "q",
        (Passage("p1", "x"), Passage("p2", "y")),
        (Aspect("a", "a"), Aspect("b", "b")),
        labels={"p1": frozenset({"b"}), "p2": frozenset()},
    )
    assert topic_qrels([topic]) == [
        DiversityQrel("t", "p1", 1, "b"),
        DiversityQrel("t", "p2", 0, "a"),
    ]
    matrix = CoverageMatrix(("p1", "p2"), ("a", "b"), np.array([[0.9, 0.2], [0.6, 0.7]]))
    assert coverage_qrels({"t": matrix}) == [
        DiversityQrel("t", "p1", 1, "a"),
        DiversityQrel("t", "p2", 1, "a"),
        DiversityQrel("t", "p2", 1, "b"),
    ]


def test_ir_measures_reads_our_file_and_records(tmp_path: Path) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    assert DiversityQrel._fields == ir_measures.Qrel._fields
    path = tmp_path / "qrels.txt"
    write_qrels(path, diversity_qrels(JUDGMENTS))
    theirs = [tuple(q) for q in ir_measures.read_trec_qrels(str(path))]
    assert theirs == [tuple(q) for q in diversity_qrels(JUDGMENTS)]
    assert [tuple(q) for q in to_ir_measures(diversity_qrels(JUDGMENTS))] == theirs
    scored = run_to_ir_measures({"q1": ["d3", "d1"]})
    assert [(s.doc_id, s.score) for s in scored] == [("d3", 2.0), ("d1", 1.0)]


def test_missing_extra_raises_with_the_extra_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ir_measures", None)  # makes `import ir_measures` fail
    with pytest.raises(MissingExtraError, match=r"covrag\[reference\]"):
        to_ir_measures(diversity_qrels(JUDGMENTS))
    with pytest.raises(MissingExtraError):
        run_to_ir_measures({"q1": ["d1"]})


def test_importing_the_package_does_not_import_ir_measures() -> None:
    code = "import sys, covrag.evaluation; print('ir_measures' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bulk_reading_restores_the_garbage_collector(tmp_path: Path) -> None:
    import gc

    good = tmp_path / "good.qrels"
    good.write_text("q1 a d1 1\nq1 b d1 1\nq1 a d2 0\n", encoding="utf-8")
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 a d1 1\nq1 a d2\n", encoding="utf-8")
    assert gc.isenabled()
    judgments = judgments_from_qrels(read_qrels(good))
    assert dict(judgments["q1"].labels) == {"d1": frozenset({"a", "b"}), "d2": frozenset()}
    assert judgments["q1"].aspects == ("a", "b")
    with pytest.raises(DataError, match="4 columns"):
        read_qrels(bad)
    assert gc.isenabled()  # re-enabled after a success and after an error
    gc.disable()
    try:
        judgments_from_qrels(read_qrels(good))
        assert not gc.isenabled()  # a caller's choice is kept
    finally:
        gc.enable()
