"""Hostile dataset and run files (issue 14): bytes that are not UTF-8, JSON nested 100,000 deep,
absurd and non-finite numbers, ids that a TREC file cannot hold, and an empty dataset. Each is
a DataError (exit 2 in the CLI) naming the file, the line and the field or byte."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from conftest import topic_record
from covrag.cli import main
from covrag.data import read_run, read_topics, write_run, write_topics
from covrag.errors import DataError
from covrag.types import Passage, Topic


def write_lines(path: Path, *lines: bytes) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def test_bytes_that_are_not_utf8_name_the_line_and_offset(tmp_path: Path) -> None:
    good = json.dumps(topic_record()).encode()
    bad = json.dumps(topic_record(query_id="q2")).encode().replace(b"Cars", b"C\xffrs")
    path = write_lines(tmp_path / "d.jsonl", good, bad)
    offset = len(good) + 1 + bad.index(b"\xff")
    with pytest.raises(DataError, match=rf"line 2: not UTF-8: byte 0xff at byte offset {offset}"):
        read_topics(path)
    run = write_lines(tmp_path / "r.trec", b"q1 Q0 p1 1 2 x", b"q1 Q0 p\xe92 2 1 x")
    with pytest.raises(DataError, match=r"line 2: not UTF-8: byte 0xe9 at byte offset 22"):
        read_run(run)


def test_json_nested_too_deeply_is_a_data_error(tmp_path: Path) -> None:
    deep = b'{"query_id": "q", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    path = write_lines(tmp_path / "d.jsonl", deep)
    with pytest.raises(DataError, match="line 1: invalid JSON: nested too deeply"):
        read_topics(path)
    report = write_lines(tmp_path / "run.json", b"[" * 100_000 + b"]" * 100_000)
    assert main(["report", str(report), "-o", str(tmp_path / "r.html")]) == 2


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"tokens": 1e30}, "passages[0].tokens", "at most"),
        ({"score": math.nan}, "passages[0].score", "finite"),
        ({"score": math.inf}, "passages[0].score", "finite"),
        ({"id": "p 1"}, "passages[0].id", "whitespace"),
        ({"id": "p\t1"}, "passages[0].id", "whitespace"),
    ],
)
def test_absurd_numbers_and_bad_ids_in_passages(
    write_jsonl: Any, change: dict[str, Any], field: str, message: str
) -> None:
    record = topic_record()
    record["passages"][0].update(change)
    with pytest.raises(DataError, match=message) as caught:
        read_topics(write_jsonl([record]))
    assert caught.value.field == field and caught.value.line == 1


@pytest.mark.parametrize(
    ("record", "field", "message"),
    [
        (topic_record(query_id="q 1"), "query_id", "whitespace"),
        (topic_record(aspects=[{"id": "a1", "text": "x", "weight": math.nan}]), "weight", "finite"),
        (topic_record(aspects=[{"id": "a1", "text": "x", "weight": math.inf}]), "weight", "finite"),
    ],
)
def test_bad_topic_and_aspect_fields(
    write_jsonl: Any, record: dict[str, Any], field: str, message: str
) -> None:
    record["passages"] = [{"id": "p1", "text": "t"}]
    with pytest.raises(DataError, match=message) as caught:
        read_topics(write_jsonl([record]))
    assert caught.value.field is not None and caught.value.field.endswith(field)


def test_every_run_covrag_writes_it_reads_back(tmp_path: Path) -> None:
    write_run(tmp_path / "ok.trec", {"q1": ("p1", "p2")})
    assert read_run(tmp_path / "ok.trec") == {"q1": ("p1", "p2")}
    for run in ({"q1": ("p 1",)}, {"q 1": ("p1",)}, {"q1": ("",)}):
        with pytest.raises(DataError, match="cannot be written to a TREC file"):
            write_run(tmp_path / "bad.trec", run)
    assert not (tmp_path / "bad.trec").exists()
    # A topic built in code with such an id cannot reach a file that would not read back.
    topic = Topic("q1", "x", passages=(Passage("p 1", "t"),), aspects=())
    write_topics(tmp_path / "d.jsonl", [topic])
    with pytest.raises(DataError, match="whitespace"):
        read_topics(tmp_path / "d.jsonl")


def test_an_empty_dataset_is_no_topics(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    run = tmp_path / "r.trec"
    run.write_text("q1 Q0 p1 1 1 x\n")
    for args in (
        ["eval", "--dataset", str(empty), "--run", str(run)],
        ["bench", "--dataset", str(empty), "--selectors", "topk", "--relevance", "order"],
        ["select", "--dataset", str(empty), "--selector", "topk", "--out", str(tmp_path / "o")],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert "no topics" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()
