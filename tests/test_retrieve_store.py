from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from covrag.errors import DataError
from covrag.retrieve import BM25Retriever, DenseRetriever, load_index
from covrag.retrieve.versions import resolve_index
from covrag.types import Passage

CORPUS = (Passage("p1", "Cars pollute the air."), Passage("p2", "Bikes are cheap and healthy."))


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    folder = tmp_path / "idx"
    BM25Retriever().index(CORPUS).save(folder)
    return folder


def _entries(folder: Path) -> list[str]:
    """The index folder's entries, versions written ``v-*``."""
    return sorted("v-*" if p.name.startswith("v-") else p.name for p in folder.iterdir())


def test_saved_index_layout_and_no_leftovers(saved: Path) -> None:
    version = resolve_index(saved)
    assert (saved / "CURRENT").read_text() == f"{version.name}\n"
    manifest = json.loads((version / "manifest.json").read_text())
    assert manifest["format"] == "covrag-index" and manifest["kind"] == "bm25"
    assert manifest["count"] == 2
    assert [p.name for p in saved.parent.iterdir()] == ["idx"]  # nothing beside it
    assert _entries(saved) == [".lock", "CURRENT", "v-*"]  # one version, no temporary file


def test_save_replaces_an_existing_index(saved: Path) -> None:
    before = resolve_index(saved)
    BM25Retriever().index(CORPUS[:1]).save(saved)
    assert load_index(saved).passages == CORPUS[:1]
    assert resolve_index(saved) != before and not before.exists()  # the old version is gone
    assert [p.name for p in saved.parent.iterdir()] == ["idx"]
    assert _entries(saved) == [".lock", "CURRENT", "v-*"]


def test_an_index_written_before_versions_loads_and_moves_to_versions(
    saved: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old"
    shutil.copytree(resolve_index(saved), old)  # the files directly in the folder
    assert resolve_index(old) == old and load_index(old).passages == CORPUS
    BM25Retriever().index(CORPUS[:1]).save(old)
    assert _entries(old) == [".lock", "CURRENT", "v-*"]
    assert load_index(old).passages == CORPUS[:1]


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
    passages = resolve_index(saved) / "passages.jsonl"
    lines = passages.read_text().splitlines()
    passages.write_text(lines[0] + "\n")
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
    assert _entries(saved) == [".lock", "CURRENT", "v-*"]


def test_a_pointer_that_names_no_version_is_a_data_error(saved: Path) -> None:
    (saved / "CURRENT").write_text("../../etc\n")
    with pytest.raises(DataError, match="CURRENT names no version"):
        load_index(saved)
    (saved / "CURRENT").write_text("v-0123456789abcdef\n")
    with pytest.raises(DataError, match="names v-0123456789abcdef, which is missing"):
        load_index(saved)
