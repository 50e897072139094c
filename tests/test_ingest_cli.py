"""A new user's path, end to end on real files: ``covrag index --docs folder --out idx``, then
``covrag ask "..." --index idx`` (and ``--docs``, ``--json``) against a real OpenAI-compatible
HTTP server on loopback that writes a cited answer."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from covrag.cli import main
from covrag.ingest import read_document
from covrag.ingest.unwrap import unwrap
from covrag.report.runfile import parse_run_file
from covrag.schema.ask import AskTopic
from ingest_support import PDF_TITLE, make_folder
from llm_support import chat_server

pytest.importorskip("openai")
pytest.importorskip("semchunk")

QUESTION = "What should I know about caffeine in drinks?"
ASPECTS = ["How much caffeine is in tea?", "Which infusions have no caffeine?"]


@contextlib.contextmanager
def writer_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """A chat-completions server that answers with one sentence per passage it was shown: the
    passage's first sentence, citing that passage's number (as a small writer model does; the
    citation check verifies each by alignment)."""

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        shown = re.findall(r'^\[(\d+)\] (?:\(from "[^"]*"\) )?(.*)$', prompt, re.M)
        firsts = {int(n): re.split(r"(?<=[.!?])\s", text)[0].rstrip(".!?") for n, text in shown}
        return "\n".join(f"{firsts[n]} [{n}]." for n in sorted(firsts))

    with chat_server(reply, model="writer") as served:
        yield served


@pytest.fixture
def llm_args() -> Iterator[list[str]]:
    with writer_server() as (url, _):
        spec = f"openai(model='writer', base_url='{url}', max_retries=0)"
        yield ["--llm", spec, "--no-llm-cache", "--aspects", *ASPECTS, "--passes", "0"]


def _check_passages(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every passage of a run record names its document and where in its text it lies."""
    passages = {p["id"]: p for p in record["passages"]}
    for passage in passages.values():
        document = read_document(Path(passage["source"]))
        assert unwrap(document.text[passage["start"] : passage["end"]]) == passage["text"]
        assert passage["title"] == document.title
        assert passage["id"].startswith(passage["doc_id"] + "#")
        assert passage.get("page") == document.page_at(passage["start"])
    return passages


@pytest.mark.model
def test_index_a_folder_of_documents_then_ask_it(
    tmp_path: Path, llm_args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    folder = make_folder(tmp_path)
    index = tmp_path / "idx"
    assert main(["index", "--docs", str(folder), "--out", str(index)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "from 4 documents (4 read, 0 unchanged, 0 removed, 0 skipped; bm25)" in printed

    out = tmp_path / "ask.json"
    args = ["ask", QUESTION, "--index", str(index), "--k", "3", "--pool", "8", "--out", str(out)]
    # fill k (the floor and gate are tested in test_ask): citations are tested
    args += ["--floor", "0", "--gate", "0"]
    code = main([*args, *llm_args])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    run = json.loads(out.read_text())
    parse_run_file(run, str(out))
    (record,) = run["topics"]
    passages = _check_passages(record)
    assert {p["doc_id"] for p in passages.values()} >= {"tea.txt", "herbal.pdf"}
    selected = [step["passage_id"] for step in record["selection"]["steps"]]
    cited = [pid for s in record["answer"]["sentences"] for pid in s["passage_ids"]]
    # The answer cites the selected passages, each traceable to its file and offsets, and each
    # sentence was verified against its passage, with the span that holds it.
    assert set(cited) == set(selected) and len(selected) == 3
    for sentence in record["answer"]["sentences"]:
        check = sentence["check"]
        start, end = check["span"]
        assert check["verified"] == "aligned" and check["passage_id"] in sentence["passage_ids"]
        held = passages[check["passage_id"]]["text"][start:end]  # exact, line breaks and all
        assert held.strip() and " ".join(held.split()) in sentence["text"]
    titles = {passages[pid]["title"] for pid in cited}
    assert titles <= {"tea", PDF_TITLE, "Coffee and health", "Cocoa farming"}
    assert any(passages[pid]["doc_id"] == "herbal.pdf" for pid in cited)
    # The printed selection names each passage's document.
    assert f"({PDF_TITLE}, herbal.pdf#" in " ".join(captured.out.split())
    # The run file, document fields and all, renders as a report.
    assert main(["report", str(out), "-o", str(tmp_path / "ask.html")]) == 0
    assert cited[0] in (tmp_path / "ask.html").read_text()


@pytest.mark.model
def test_ask_json_prints_the_run_record_alone(
    tmp_path: Path,
    llm_args: list[str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    folder = make_folder(tmp_path)
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    args = ["ask", QUESTION, "--docs", str(folder), "--k", "2", "--pool", "6", "--json"]
    assert main([*args, *llm_args]) == 0
    captured = capsys.readouterr()
    run = json.loads(captured.out)  # stdout is the record and nothing else
    parse_run_file(run, "<stdout>")
    (record,) = run["topics"]
    AskTopic.model_validate(record)
    _check_passages(record)
    assert any("broken.pdf: not a readable PDF" in w for w in record["warnings"])
    assert "broken.pdf" in captured.err and "4 read" in " ".join(captured.err.split())
    assert not (tmp_path / "ask-run.json").exists()

    # Asked again: the cached index is reused, no file is read again.
    assert main([*args, *llm_args]) == 0
    captured = capsys.readouterr()
    assert "0 read, 4 unchanged" in " ".join(captured.err.split())
    assert json.loads(captured.out)["topics"][0]["passages"] == record["passages"]


def test_index_docs_errors_are_one_clear_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    code = main(["index", "--docs", str(tmp_path / "broken.pdf"), "--out", str(tmp_path / "i")])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "no passages from" in err and "not a readable PDF" in err
    assert not (tmp_path / "i").exists()
    # A folder that is not an index is never overwritten (refused before any file is read).
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "keep.txt").write_text("mine")
    (tmp_path / "a.txt").write_text("Tea is good.")
    code = main(["index", "--docs", str(tmp_path / "a.txt"), "--out", str(tmp_path / "notes")])
    assert code == 2 and "not a covrag index" in " ".join(capsys.readouterr().err.split())
    assert (tmp_path / "notes" / "keep.txt").read_text() == "mine"
    # --docs and --corpus name two corpora: refused.
    with pytest.raises(SystemExit):
        main(["index", "--docs", str(tmp_path), "--corpus", "bundled", "--out", str(tmp_path)])


@pytest.mark.slow
def test_index_then_ask_on_the_tiny_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("xllamacpp")
    folder = make_folder(tmp_path)
    index = tmp_path / "idx"
    assert main(["index", "--docs", str(folder), "--out", str(index)]) == 0
    out = tmp_path / "ask.json"
    args = ["ask", QUESTION, "--index", str(index), "--aspects", *ASPECTS, "--passes", "0"]
    args += ["--llm", "local(model='smollm2', n_threads=1)", "--no-llm-cache"]
    code = main([*args, "--k", "3", "--pool", "6", "--out", str(out)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    (record,) = json.loads(out.read_text())["topics"]
    passages = _check_passages(record)
    # Whatever the tiny model cites is a passage of the index, traceable to its file.
    selected = {step["passage_id"] for step in record["selection"]["steps"]}
    for sentence in record["answer"]["sentences"]:
        assert set(sentence["passage_ids"]) <= selected
        assert all(
            passages[pid]["source"].startswith(str(folder)) for pid in sentence["passage_ids"]
        )


@pytest.mark.model
def test_the_ask_verb_reads_a_saved_index_folder(tmp_path: Path) -> None:
    import covrag
    from covrag.ingest import update_index
    from covrag.llm.openai_backend import OpenAIChat
    from covrag.pipeline import AskConfig

    folder = make_folder(tmp_path)
    update_index([folder], tmp_path / "idx")
    with writer_server() as (url, requests):
        llm = OpenAIChat("writer", base_url=url, max_retries=0)
        aspects = [covrag.Aspect(f"sq{i}", text) for i, text in enumerate(ASPECTS, start=1)]
        # fill k (no floor, no gate): citations are tested
        config = AskConfig(answers=0, pool=6, k=2, passes=0, floor=0.0, gate=0.0)
        index = str(tmp_path / "idx")
        result = covrag.ask(QUESTION, index, llm=llm, config=config, aspects=aspects)
    assert len(requests) == 1
    cited = [pid for s in result.generation.answer.sentences for pid in s.passage_ids]
    by_id = {p.id: p for p in result.topic.passages}
    assert len(cited) == 2 and all(by_id[pid].metadata["source"] for pid in cited)
