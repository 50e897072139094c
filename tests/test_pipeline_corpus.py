"""The ``open_corpus`` use case: every kind of corpus an entry point can name becomes a retriever
(a folder of documents, a saved index, passages, a passage file), as ``covrag ask --docs`` and
``covrag.ask(question, "folder/")`` read it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from covrag.pipeline.usecases import open_corpus
from covrag.types import Passage


def _ids(retriever: object, query: str) -> list[str]:
    return [p.id for p in retriever.search(query, 3)]  # type: ignore[attr-defined]


def test_a_folder_of_documents_is_indexed_once_and_searched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tar.txt").write_text("Use tar --exclude PATTERN to leave files out of an archive.\n")
    (docs / "ssh.txt").write_text("Set ServerAliveInterval in ssh_config to keep a link alive.\n")
    reports = []
    retriever = open_corpus(str(docs), on_indexed=reports.append)
    found = retriever.search("ServerAliveInterval keep alive", 2)
    assert found and "ServerAliveInterval" in found[0].text
    assert len(reports) == 1 and (tmp_path / "cache").is_dir()  # indexed into the cache
    # the same folder again reads the cached index (nothing changed, nothing is read again)
    again = open_corpus(str(docs), on_indexed=reports.append)
    assert [p.id for p in again.search("tar exclude", 1)] == [
        p.id for p in retriever.search("tar exclude", 1)
    ]


def test_passages_an_index_folder_and_a_passage_file(tmp_path: Path) -> None:
    passages = [Passage("a", "green tea leaves"), Passage("b", "black coffee beans")]
    from_passages = open_corpus(passages)
    assert _ids(from_passages, "coffee")[0] == "b"
    index = tmp_path / "idx"
    from_passages.save(index)  # type: ignore[attr-defined]
    assert _ids(open_corpus(str(index)), "tea")[0] == "a"
    jsonl = tmp_path / "corpus.jsonl"
    jsonl.write_text("".join(json.dumps({"id": p.id, "text": p.text}) + "\n" for p in passages))
    assert _ids(open_corpus(str(jsonl)), "beans")[0] == "b"
    # a retriever is used as it is
    assert open_corpus(from_passages) is from_passages
