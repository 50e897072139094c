from __future__ import annotations

import pytest

from covrag.data import read_run, write_run
from covrag.errors import DataError


def test_run_round_trip_keeps_order(tmp_path) -> None:  # type: ignore[no-untyped-def]
    run = {"q1": ("d3", "d1", "d2"), "q2": ("x",)}
    path = tmp_path / "run.trec"
    write_run(path, run, tag="my run")
    assert read_run(path) == run
    assert path.read_text().splitlines()[0] == "q1 Q0 d3 1 3 my_run"


def test_ranking_is_score_then_docid(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "run.trec"
    path.write_text("q Q0 b 1 1.0 t\nq Q0 a 2 1.0 t\nq Q0 c 3 2.5 t\n")
    assert read_run(path) == {"q": ("c", "a", "b")}


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("q Q0 a 1 1.0\n", "line 1: expected 6 columns"),
        ("q Q0 a 1 1.0 t\nq Q0 a 2 0.5 t\n", "line 2, field 'docid'.*twice"),
        ("q Q0 a one 1.0 t\n", "field 'rank'"),
        ("q Q0 a 1 high t\n", "field 'score'"),
    ],
)
def test_malformed_runs(tmp_path, text: str, match: str) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(DataError, match=match):
        read_run(path)
