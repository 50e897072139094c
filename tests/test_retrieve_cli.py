from __future__ import annotations

import json
from pathlib import Path

import pytest

from covrag.cli import main
from covrag.retrieve.versions import resolve_index


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    rows = [
        {"id": "d1", "text": "Nuclear power has low carbon emissions."},
        {"id": "d2", "text": "Wind turbines need a lot of land.", "source": "blog"},
        {"id": "d3", "text": "Nuclear waste stays radioactive for millennia."},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_index_then_search_end_to_end(corpus: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    out = tmp_path / "index"
    assert main(["index", "--corpus", str(corpus), "--kind", "bm25", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "indexed 3 passages" in printed and " s " in printed
    assert (resolve_index(out) / "manifest.json").is_file()

    assert main(["search", "--index", str(out), "nuclear waste", "--k", "2"]) == 0
    table = capsys.readouterr().out
    assert table.index("d3") < table.index("d1")  # d3 matches both terms
    assert "d2" not in table


def test_cli_errors_are_clear(corpus: Path, tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["search", "--index", str(tmp_path), "anything"]) == 2
    assert "not a covrag index" in _unwrapped(capsys.readouterr().err)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "text": "ok"}\n{"id": "x", "text": "again"}\n')
    assert main(["index", "--corpus", str(bad), "--out", str(tmp_path / "i")]) == 2
    err = _unwrapped(capsys.readouterr().err)
    assert "line 2" in err and "field 'id'" in err
    assert not (tmp_path / "i").exists()


def _unwrapped(text: str) -> str:
    """The console wraps long lines: compare with whitespace collapsed."""
    return " ".join(text.split())


def test_search_shows_brackets_in_passages_as_written(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "manual.jsonl"
    text = "SYNOPSIS grep [OPTION...] PATTERNS [FILE...] [/x]"  # rich markup, were it read so
    path.write_text(json.dumps({"id": "g1", "text": text}) + "\n")
    out = tmp_path / "index"
    assert main(["index", "--corpus", str(path), "--kind", "bm25", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["search", "--index", str(out), "grep [FILE...] PATTERNS"]) == 0
    printed = capsys.readouterr().out
    assert "[OPTION...]" in printed and "[/x]" in printed and "[FILE...] PATTERNS" in printed
