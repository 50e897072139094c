"""Fuzzing the readers of untrusted files (issue 14, item 10): whatever a dataset line, a TREC run
or a run file holds, reading it gives records or a DataError, never another exception; the
column-wise fast paths of the TREC readers (issue 16) give what the line readers give; whatever a
folder of documents holds (symlinks in and out, loops, FIFOs, devices), the walker finds only
regular files inside it and reads them within the size cap (issue 35). Issue 35 also adds
integers too long to read, lone surrogates, the answer runs ``eval-answers`` reads and the whole
of ``covrag report`` (reading and rendering)."""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import topic_record
from covrag.data import read_run, read_topics
from covrag.data.trec import _read_run
from covrag.errors import DataError
from covrag.evaluation import judgments_from_qrels, read_judgments, read_qrels
from covrag.evaluation.answers_io import AnswerCase, load_variants
from covrag.report import load_report_input, parse_run_file, write_report
from covrag.types import Topic

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

#: Written as an integer of 5,000 digits (past Python's limit on reading integers from text).
LONG_INT = "__long_int__"
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=8)
    | st.sampled_from([LONG_INT, "p\ud800", "\udfff", 10**400, -(10**400)])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(record: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON record."""
    found = [prefix]
    if isinstance(record, dict):
        for key, value in record.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(record, list):
        for i, value in enumerate(record):
            found += _paths(value, (*prefix, i))
    return found


@st.composite
def mutated(draw: st.DrawFn, base: Callable[[], Any]) -> Any:
    """A valid record with one to three values replaced (or removed) anywhere inside it."""
    record = base()
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(_paths(record)))
        if not path:
            return draw(json_values)
        parent = record
        for key in path[:-1]:
            parent = parent[key]
        if draw(st.booleans()) and isinstance(parent, dict):
            parent.pop(path[-1], None)
        else:
            parent[path[-1]] = draw(json_values)
    return record


def _line(value: Any) -> bytes:
    """One JSON text; lone surrogates as ``\\ud800`` escapes (what a JSON writer gives), the
    :data:`LONG_INT` marker as an integer of 5,000 digits."""
    text = json.dumps(value, ensure_ascii=False)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text.replace(f'"{LONG_INT}"', "1" * 5000).encode("utf-8")


dataset_lines = st.lists(
    mutated(topic_record).map(_line)
    | st.just(_line(topic_record()))
    | json_values.map(_line)
    | st.binary(max_size=40),
    min_size=1,
    max_size=3,
)


def _read(data: bytes, reader: Callable[[Path], Any]) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input"
        path.write_bytes(data)
        try:
            return reader(path)
        except DataError:
            return None


@FUZZ
@given(dataset_lines)
def test_dataset_reader_gives_topics_or_a_data_error(lines: list[bytes]) -> None:
    topics = _read(b"\n".join(lines) + b"\n", read_topics)
    assert topics is None or all(isinstance(t, Topic) for t in topics)


run_tokens = st.text(max_size=6) | st.sampled_from(["Q0", "1", "-2", "nan", "inf", "1e999", "x"])
run_lines = st.lists(st.lists(run_tokens, min_size=0, max_size=7).map(" ".join), max_size=5)


@FUZZ
@given(run_lines, st.binary(max_size=20))
def test_trec_run_reader_gives_a_run_or_a_data_error(lines: list[str], tail: bytes) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + tail
    run = _read(data, read_run)
    assert run is None or all(isinstance(docs, tuple) for docs in run.values())


@FUZZ
@given(run_lines, st.binary(max_size=20))
def test_trec_run_fast_path_reads_as_the_line_reader(lines: list[str], tail: bytes) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + tail
    assert _outcome(data, read_run) == _outcome(data, _read_run)


qrels_tokens = st.text(max_size=4) | st.sampled_from(["q1", "a", "d1", "0", "1", "-2", "1.5", "x"])
qrels_lines = st.lists(st.lists(qrels_tokens, min_size=0, max_size=5).map(" ".join), max_size=6)


@FUZZ
@given(qrels_lines, st.binary(max_size=10))
def test_qrels_reader_gives_the_line_readers_judgments_or_its_error(
    lines: list[str], tail: bytes
) -> None:
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + tail

    def careful(path: Path) -> Any:
        return judgments_from_qrels(read_qrels(path)).topics

    def fast(path: Path) -> Any:
        return read_judgments(path).topics

    assert _outcome(data, fast) == _outcome(data, careful)


def _outcome(data: bytes, reader: Callable[[Path], Any]) -> Any:
    """What a reader gives, or the message of its DataError (any other exception fails)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input"
        path.write_bytes(data)
        try:
            return reader(path)
        except DataError as error:
            return str(error).replace(str(path), "PATH")


def _run_file() -> dict[str, Any]:
    steps = [{"passage_id": "p1", "score": 1.0, "newly_covered": ["a1"], "tokens": 4}]
    return {
        "covrag_run": 1,
        "dataset": "d",
        "selector": "greedy-coverage",
        "coverage": "gold",
        "budget": "k=2",
        "topics": [
            {
                "query_id": "q1",
                "query": "q?",
                "aspects": [{"id": "a1", "text": "pollution"}],
                "passages": [{"id": "p1", "text": "Cars pollute.", "tokens": 4, "score": 1.0}],
                "coverage": {
                    "passage_ids": ["p1"],
                    "aspect_ids": ["a1"],
                    "probs": [[1.0]],
                    "threshold": 0.5,
                    "source": "gold",
                },
                "selection": {
                    "selector": "greedy-coverage",
                    "budget": "k=2",
                    "tokens_used": 4,
                    "seconds": 0.0,
                    "steps": steps,
                },
                "answer": {"sentences": [{"text": "Cars pollute.", "passage_ids": ["p1"]}]},
            }
        ],
    }


def _load_run_file(path: Path) -> Any:
    data, where = load_report_input(path)
    return parse_run_file(data, where)


@FUZZ
@given(mutated(_run_file).map(_line) | st.binary(max_size=60))
def test_run_file_reader_gives_a_run_or_a_data_error(data: bytes) -> None:
    _read(data, _load_run_file)


def test_the_unmutated_run_file_reads() -> None:
    run = _read(_line(_run_file()), _load_run_file)
    assert run is not None and len(run.topics) == 1


# --- the document-folder walker (issue 35) ------------------------------------------------------

_NAMES = ["a", "b.txt", "c.md", ".h.txt", "d"]
_TARGETS = [".", "..", "a", "b.txt", "d/b.txt", "../outside/secret.txt", "/dev/zero", "self"]
tree_entries = st.lists(
    st.tuples(
        st.lists(st.sampled_from(_NAMES), min_size=1, max_size=3),
        st.sampled_from(["file", "dir", "link", "fifo"]),
        st.sampled_from(_TARGETS),
        st.binary(max_size=90),
    ),
    max_size=10,
)


def _build(root: Path, entries: list[tuple[list[str], str, str, bytes]]) -> None:
    """Make what can be made of ``entries`` under ``root`` (a clash is left out)."""
    for parts, kind, target, data in entries:
        path = root.joinpath(*parts)
        inside = os.path.realpath(path.parent).startswith(os.path.realpath(root))
        if os.path.lexists(path) or not inside:
            continue  # (a FIFO made before would wait for a reader; links lead anywhere)
        try:
            if kind == "file":
                path.write_bytes(data)
            elif kind == "dir":
                path.mkdir()
            elif kind == "fifo":
                os.mkfifo(path)
            else:
                path.symlink_to(path.name if target == "self" else target)
        except OSError:
            pass


@FUZZ
@given(tree_entries, st.booleans(), st.sampled_from(["folder", "glob"]))
def test_the_folder_walker_finds_only_regular_files_inside_and_reads_them_within_the_cap(
    entries: list[tuple[list[str], str, str, bytes]], follow: bool, spec: str
) -> None:
    from covrag.ingest import find_files
    from covrag.ingest.walk import SkipError, read_file

    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "outside").mkdir()
        (base / "outside" / "secret.txt").write_text("secret")
        root = base / "root"
        root.mkdir()
        _build(root, entries)
        named = str(root) if spec == "folder" else str(root / "**" / "*.txt")
        found, skipped = find_files([named], follow_symlinks=follow)
        real_root = os.path.realpath(root)
        for path, name in found.items():
            assert stat.S_ISREG(os.stat(path).st_mode)
            assert follow or os.path.commonpath([str(path), real_root]) == real_root
            assert not any(part.startswith(".") for part in name.split("/"))
            try:
                assert len(read_file(path, 64)) <= 64
            except SkipError as error:
                assert error.kind == "too-large"
        assert all(s.kind and s.reason for s in skipped)


@FUZZ
@given(mutated(_run_file).map(_line) | st.binary(max_size=60))
def test_report_renders_a_run_or_gives_a_data_error(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source, out = Path(folder) / "run.json", Path(folder) / "report.html"
        source.write_bytes(data)
        try:
            write_report(source, out)
        except DataError:
            assert not out.exists()
        else:
            assert out.read_text(encoding="utf-8").startswith("<!")


def _answer_run() -> dict[str, Any]:
    """A run file as ``covrag ask`` writes it: an answer and the drafts that led to it."""
    record = _run_file()
    draft = {"sentences": [{"text": "Cars pollute.", "passage_ids": ["p1"]}]}
    record["topics"][0]["generation"] = {"drafts": [draft, draft]}
    return record


def _load_answers(path: Path) -> Any:
    return load_variants([path]), load_variants([path], all_passes=True)


@FUZZ
@given(mutated(_answer_run).map(_line) | st.binary(max_size=60))
def test_answer_run_reader_gives_answers_or_a_data_error(data: bytes) -> None:
    read = _read(data, _load_answers)
    assert read is None or all(
        isinstance(case, AnswerCase)
        for variants in read
        for cases in variants.values()
        for case in cases
    )


def test_the_unmutated_answer_run_reads() -> None:
    read = _read(_line(_answer_run()), _load_answers)
    assert read is not None
    single, passes = read
    assert list(single) == ["input"] and sorted(passes) == ["input#0", "input#1"]
