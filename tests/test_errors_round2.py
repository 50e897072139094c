"""Bad input that used to end in a traceback (issue 35, item 5): each is now one line naming the
file, line, field or option, exit code 2, and nothing written or changed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from conftest import topic_record
from covrag.cli import main

LONG = "1" * 5000  # past Python's 4,300-digit limit on reading integers from text


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line the last command printed (and nothing else on stderr)."""
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    assert err.startswith("error:"), err
    return err


def _dataset(tmp_path: Path, text: str, name: str = "data.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(text + "\n", encoding="utf-8")
    return path


def _select(tmp_path: Path, dataset: Path, *more: str) -> int:
    out = tmp_path / "run.trec"
    args = ["select", "--dataset", str(dataset), "--selector", "topk", "--out", str(out)]
    code = main([*args, *more])
    assert code == 2 and not out.exists()
    return code


@pytest.mark.parametrize(
    ("anchor", "field", "field_name"),
    [
        ('"text": "Cars pollute the air.",', "tokens", "passages[0].tokens"),
        ('"text": "Cars pollute the air.",', "score", "passages[0].score"),
        ('"text": "pollution",', "weight", "aspects[0].weight"),
    ],
)
def test_a_dataset_integer_too_long_to_read_names_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], anchor: str, field: str, field_name: str
) -> None:
    line = json.dumps(topic_record()).replace(anchor, f'{anchor} "{field}": {LONG},')
    dataset = _dataset(tmp_path, line)
    _select(tmp_path, dataset)
    err = _error(capsys)
    assert f"{dataset}, line 1, field '{field_name}'" in err and "5,000 digits" in err


def test_a_dataset_integer_too_large_for_a_float_names_its_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    anchor = '"text": "Cars pollute the air.",'
    line = json.dumps(topic_record()).replace(anchor, f'{anchor} "score": {"9" * 400},')
    _select(tmp_path, _dataset(tmp_path, line))
    assert "field 'passages[0].score': must be a finite number" in _error(capsys)


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [('"p1"', '"p\\ud800"', "passages[0].id"), ('"q1"', '"q\\udfff"', "query_id")],
)
def test_a_lone_surrogate_in_an_id_is_refused_before_any_run_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, field: str
) -> None:
    dataset = _dataset(tmp_path, json.dumps(topic_record()).replace(old, new))
    run_json = tmp_path / "run.json"
    _select(tmp_path, dataset, "--run-json", str(run_json))
    err = _error(capsys)
    assert f"line 1, field '{field}'" in err and "lone surrogate" in err
    assert not run_json.exists()


def test_a_surrogate_pair_is_text_and_reads(tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, json.dumps(topic_record(query="Cars \ud83d\ude97?")))
    assert "\\ud83d" in dataset.read_text()
    out = tmp_path / "run.trec"
    assert main(["select", "--dataset", str(dataset), "--selector", "topk", "--out", str(out)]) == 0


def _run_json(tmp_path: Path) -> Path:
    dataset = _dataset(tmp_path, json.dumps(topic_record()))
    run_json = tmp_path / "run.json"
    args = ["select", "--dataset", str(dataset), "--selector", "topk"]
    assert main([*args, "--out", str(tmp_path / "r.trec"), "--run-json", str(run_json)]) == 0
    return run_json


def test_report_names_the_field_of_an_integer_too_long_to_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_json = _run_json(tmp_path)
    text = run_json.read_text().replace('"tokens_used": ', f'"tokens_used": {LONG}, "was": ', 1)
    run_json.write_text(text)
    capsys.readouterr()
    out = tmp_path / "report.html"
    assert main(["report", str(run_json), "-o", str(out)]) == 2
    assert f"{run_json}, field 'topics[0].selection.tokens_used'" in _error(capsys)
    assert not out.exists()


def test_a_measure_cutoff_too_long_to_read_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = _dataset(tmp_path, json.dumps(topic_record()))
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 p1 1 1.0 r\n")
    args = ["eval", "--dataset", str(dataset), "--run", str(run), "--measures", f"P@{LONG}"]
    assert main(args) == 2
    assert "the cutoff after '@' has 5,000 digits" in _error(capsys)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--selector", "random(seed=-1)"], "selector 'random': seed must be an integer >= 0"),
    ],
)  # fmt: skip
def test_negative_seeds_are_refused_in_select(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], named: str
) -> None:
    dataset = _dataset(tmp_path, json.dumps(topic_record()))
    out = tmp_path / "run.trec"
    assert main(["select", "--dataset", str(dataset), *args, "--out", str(out)]) == 2
    assert named in _error(capsys) and not out.exists()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--seed", "-1"], "--seed must be an integer >= 0"),
        (["--n-resamples", "1000000000000"], "--n-resamples must lie in [1, 1,000,000]"),
        (["--n-resamples", "0"], "--n-resamples must lie in [1, 1,000,000]"),
    ],
)
def test_bench_refuses_negative_seeds_and_unbounded_resamples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], named: str
) -> None:
    dataset = _dataset(tmp_path, json.dumps(topic_record()))
    out = tmp_path / "bench"
    code = main(
        ["bench", "--dataset", str(dataset), "--selectors", "topk", "random", "--out", str(out)]
        + args
    )
    assert code == 2 and named in _error(capsys) and not out.exists()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"not json\n", "line 1: invalid JSON: Expecting value at column 1"),
        (b"", "the file is empty"),
        (b'{"topics": "\xff"}', "line 1: not UTF-8: byte 0xff at byte offset 12"),
        (b"[" * 100_000 + b"]" * 100_000, "invalid JSON: nested too deeply"),
    ],
)
def test_eval_answers_names_a_file_that_is_not_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, says: str
) -> None:
    path = tmp_path / "answers.json"
    path.write_bytes(content)
    assert main(["eval-answers", str(path), "--no-llm"]) == 2
    assert f"{path}" in (err := _error(capsys)) and says in err


def test_search_refuses_a_k_below_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = _dataset(tmp_path, json.dumps(topic_record()))
    index = tmp_path / "index"
    assert main(["index", "--corpus", str(dataset), "--kind", "bm25", "--out", str(index)]) == 0
    capsys.readouterr()
    for k in ("-1", "0"):
        assert main(["search", "--index", str(index), "cars", "--k", k]) == 2
        assert f"k must be a positive integer, got {k}" in _error(capsys)


@pytest.mark.parametrize("kind", ["missing", "file", "not-a-model"])
def test_a_cross_encoder_model_that_is_not_one_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    pytest.importorskip("sentence_transformers")
    model = tmp_path / "model"
    if kind == "file":
        model.write_text("weights?\n")
    elif kind == "not-a-model":
        model.mkdir()
        (model / "README.md").write_text("not a model\n")
    dataset = _dataset(tmp_path, json.dumps(topic_record()))
    _select(tmp_path, dataset, "--coverage", f"cross-encoder(model='{model}')")
    err = _error(capsys)
    assert f"cross-encoder model '{model}'" in err and "None" not in err
    expected = {"missing": "no such folder", "file": "is a file", "not-a-model": "did not load"}
    assert expected[kind] in err


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("openai(base_url='http://[::1', model='m')", "base_url 'http://[::1' is not a valid URL"),
        ("openai(base_url='http://h:99999/v1', model='m')", "Port out of range"),
        ("local(model='{passwd}')", "is not a GGUF file"),
    ],
)
def test_an_llm_that_cannot_be_reached_or_loaded_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, says: str
) -> None:
    pytest.importorskip("openai")
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n")
    spec = spec.format(passwd=passwd)
    code = main(["plan", "Should cities ban cars?", "--llm", spec])
    assert code == 2 and says in _error(capsys)


@pytest.mark.parametrize("how", ["plan", "stats", "clear"])
def test_a_corrupt_response_cache_is_named_and_left_as_it_is(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    how: str,
) -> None:
    folder = tmp_path / "cache"
    folder.mkdir()
    cache = folder / "llm-cache.sqlite"
    content = b"this is not an SQLite database, but someone's notes\n" * 40
    cache.write_bytes(content)
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(folder))
    if how == "plan":
        llm = "openai(base_url='http://127.0.0.1:9/v1', model='m', max_retries=0)"
        code = main(["plan", "Should cities ban cars?", "--llm", llm])
    else:
        code = main(["cache", how, "--cache", str(cache)])
    assert code == 2
    err = _error(capsys)
    assert f"{cache}: not a readable response cache" in err and "move it aside" in err
    assert cache.read_bytes() == content and sorted(folder.iterdir()) == [cache]
    with pytest.raises(sqlite3.DatabaseError):
        sqlite3.connect(cache).execute("SELECT 1 FROM sqlite_master").fetchall()


@pytest.mark.parametrize(
    ("line", "says"),
    [
        (b'{"id": "p1", "text": "ok", "n": ' + LONG.encode() + b"}", "field 'n': an integer of"),
        (b'{"id": "p1", "text": "ok\xff"}', "line 1: not UTF-8: byte 0xff"),
        (b'{"id": "p\\ud800", "text": "ok"}', "field 'id': a lone surrogate"),
    ],
)
def test_index_names_the_corpus_line_at_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: bytes, says: str
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_bytes(line + b"\n")
    index = tmp_path / "index"
    assert main(["index", "--corpus", str(corpus), "--kind", "bm25", "--out", str(index)]) == 2
    assert f"{corpus}, line 1" in (err := _error(capsys)) and says in err
    assert not index.exists()
