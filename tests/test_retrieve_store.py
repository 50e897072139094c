from __future__ import annotations

import json
from pathlib import Path

import pytest

from covrag.errors import DataError
from covrag.retrieve import BM25Retriever, DenseRetriever, load_index
from covrag.types import Passage

CORPUS = (Passage("p1", "Cars pollute the air."), Passage("p2", "Bikes are cheap and healthy."))


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    folder = tmp_path / "idx"
    BM25Retriever().index(CORPUS).save(folder)
    return folder


def test_saved_index_layout_and_no_leftovers(saved: Path) -> None:
    manifest = json.loads((saved / "manifest.json").read_text())
    assert manifest["format"] == "covrag-index" and manifest["kind"] == "bm25"
    assert manifest["count"] == 2
    assert [p.name for p in saved.parent.iterdir()] == ["idx"]  # temporary folders removed


def test_save_replaces_an_existing_index(saved: Path) -> None:
    BM25Retriever().index(CORPUS[:1]).save(saved)
    assert load_index(saved).passages == CORPUS[:1]
    assert [p.name for p in saved.parent.iterdir()] == ["idx"]


def test_save_refuses_to_overwrite_a_folder_that_is_not_an_index(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    with pytest.raises(DataError, match="not a covrag index; refusing"):
        BM25Retriever().index(CORPUS).save(folder)
    assert (folder / "notes.txt").read_text() == "keep me"


def test_loading_a_folder_that_is_not_an_index(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="not a covrag index"):
        load_index(tmp_path)
    (tmp_path / "manifest.json").write_text('{"format": "something-else"}')
    with pytest.raises(DataError, match="not a covrag index manifest"):
        load_index(tmp_path)


def test_loading_the_wrong_kind_or_a_damaged_index(saved: Path) -> None:
    with pytest.raises(DataError, match="this is a bm25 index, not a dense index"):
        DenseRetriever.load(saved)
    lines = (saved / "passages.jsonl").read_text().splitlines()
    (saved / "passages.jsonl").write_text(lines[0] + "\n")
    with pytest.raises(DataError, match="1 passages, manifest says 2"):
        load_index(saved)


def test_dense_index_built_with_another_model_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "dense"
    folder.mkdir()
    manifest = {"format": "covrag-index", "version": 1, "kind": "dense", "count": 2}
    manifest |= {"model": "some/other-model", "params": {"dimension": 768}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match="built with model 'some/other-model'") as info:
        load_index(folder)  # refused before any model is loaded
    assert info.value.field == "model"


def test_a_failed_save_leaves_the_old_index_intact(saved: Path) -> None:
    odd = Passage("p9", "Odd metadata.", metadata={"when": object()})
    with pytest.raises(DataError, match="cannot be saved as JSON"):
        BM25Retriever().index([odd]).save(saved)
    assert load_index(saved).passages == CORPUS
    assert [p.name for p in saved.parent.iterdir()] == ["idx"]
