"""Column-wise reading of TREC files (the numpy fast path): the same results as the line-by-line
readers on every file it takes, and every other file left to them."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covrag.data import read_run
from covrag.data._columns import Columns, factorize, parse_floats, parse_ints, read_columns
from covrag.data.trec import _read_run, _read_run_columns
from covrag.errors import DataError

PLAIN_RUNS = {
    "sorted": "q1 Q0 d1 1 3 t\nq1 Q0 d2 2 2 t\nq2 Q0 d1 1 5 t\n",
    "unsorted": "q2 Q0 b 1 0.5 t\nq1 Q0 z 1 0.25 t\nq2 Q0 a 2 0.75 t\nq1 Q0 y 2 0.5 t\n",
    "ties by doc id": "q Q0 d3 1 1.0 t\nq Q0 d1 2 1.0 t\nq Q0 d2 3 1 t\nq Q0 d10 4 1 t\n",
    "signed zero, exponents": (
        "q Q0 a 1 -0.0 t\nq Q0 b 2 0.0 t\nq Q0 c 3 -1e-3 t\nq Q0 d 4 2.5E+2 t\n"
    ),
    "long ids": (
        "topic-number-one Q0 clueweb09-en0000-00-00001 1 9.75 run\n"
        "topic-number-one Q0 clueweb09-en0000-00-00000 2 9.75 run\n"
        "topic-number-two Q0 clueweb09-en0000-00-00001 1 -3 run\n"
    ),
    "crlf, tabs, spaces, blank lines": "\r\nq\tQ0  a 1 2 t\r\n\r\nq Q0 b\t2 1 t   \r\n\n",
    "no final newline": "q Q0 a 1 2 t\nq Q0 b 2 1 t",
    "negative ranks": "q Q0 a -1 2 t\nq Q0 b 007 1 t\n",
}


@pytest.mark.parametrize("text", PLAIN_RUNS.values(), ids=PLAIN_RUNS.keys())
def test_plain_runs_read_column_wise_as_line_by_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    columns = read_columns(path, 6)
    assert columns is not None
    fast = _read_run_columns(columns)
    assert fast is not None  # the fast path took the file
    careful = _read_run(path)
    assert fast == careful and list(fast) == list(careful)
    assert read_run(path) == careful


@pytest.mark.parametrize(
    "text",
    [
        "q Q0 a 1 inf t\nq Q0 b 2 1 t\n",  # inf: not a plain number, the careful reader decides
        "q Q0 á 1 2 t\n",  # not ASCII
        "q Q0 a 1 2 t\rq Q0 b 2 1 t\n",  # a lone carriage return
        "q Q0 a 1 2 t\x0cq Q0 b 2 1 t\n",  # a form feed
        "q Q0 a 1 1e999 t\n",  # overflows to inf, as float() does
        "q Q0 a 1 +1 t\n",
    ],
)
def test_unusual_runs_read_as_line_by_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "run.trec"
    path.write_bytes(text.encode())
    assert _outcome(read_run, path) == _outcome(_read_run, path)


def _outcome(reader: Callable[[Path], object], path: Path) -> object:
    try:
        return reader(path)
    except DataError as error:
        return str(error)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("q Q0 a 1 1.0 t\nq Q0 b 2 0.5 t\nq Q0 a 3 0.1 t\n", "line 3, field 'docid'.*twice"),
        ("q Q0 a 1 1.0 t\nq Q0 b 2 0.5\n", "line 2: expected 6 columns"),
        ("q Q0 a 1 1.0 t\nq Q0 b 2 nan t\n", "line 2, field 'score'.*NaN"),
        ("q Q0 a 1 1.0 t\nq Q0 b 2.5 0.5 t\n", "line 2, field 'rank'"),
    ],
)
def test_errors_name_the_line(tmp_path: Path, text: str, match: str) -> None:
    path = tmp_path / "run.trec"
    path.write_text(text)
    with pytest.raises(DataError, match=match):
        read_run(path)


def test_an_empty_or_blank_file_is_an_empty_run(tmp_path: Path) -> None:
    for text in ("", "\n\n  \n"):
        path = tmp_path / "run.trec"
        path.write_text(text)
        assert read_run(path) == {}


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"-?[0-9]{1,17}(\.[0-9]{0,12})?([eE][+-]?[0-9]{1,3})?", fullmatch=True))
def test_floats_parse_as_python_does(text: str) -> None:
    columns = _columns_of(f"{text} x\n")
    values = parse_floats(columns, 0)
    assert values is not None and values[0] == float(text)
    assert np.signbit(values[0]) == np.signbit(float(text))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.from_regex(r"-?[0-9]{1,7}", fullmatch=True), min_size=1, max_size=8))
def test_ints_parse_as_python_does(texts: list[str]) -> None:
    values = parse_ints(_columns_of("".join(f"{t} x\n" for t in texts)), 0)
    assert values is not None and values.tolist() == [int(t) for t in texts]


ids = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=20)


@settings(max_examples=100, deadline=None)
@given(st.lists(ids, min_size=1, max_size=30))
def test_factorize_numbers_ids_in_string_order(texts: list[str]) -> None:
    columns = _columns_of("".join(f"{t} x\n" for t in texts))
    result = factorize(columns, 0)
    assert result is not None
    codes, first = result
    distinct = sorted(set(texts))
    assert [distinct[c] for c in codes] == texts
    assert first.tolist() == [texts.index(t) for t in distinct]


def _columns_of(text: str) -> Columns:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "columns.txt"
        path.write_text(text)
        columns = read_columns(path, 2)
    assert columns is not None
    return columns
