"""The on-disk layout of a saved index, written atomically and checked on load.

An index is a folder::

    manifest.json    {"format": "covrag-index", "version": 1, "kind": "bm25", "count": N,
                      "model": ..., "params": {...}, "covrag": "0.1.0"}
    passages.jsonl   the indexed passages in index order (a valid passage corpus file)
    ...              the kind's own files (bm25s arrays, embeddings.npy, components/)

:func:`atomic_dir` writes into a hidden temporary folder beside the target and renames it into
place, so a reader sees the old index or the new one, never half of one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from covrag.errors import DataError
from covrag.files import temporary_path
from covrag.retrieve.corpus import passage_record, read_corpus
from covrag.schema._base import read_model
from covrag.schema._json import read_json_file
from covrag.schema.index import INDEX_FORMAT, INDEX_VERSION, IndexManifest
from covrag.types import Passage, as_mapping
from covrag.version import __version__

FORMAT = INDEX_FORMAT
VERSION = INDEX_VERSION
MANIFEST = "manifest.json"
PASSAGES = "passages.jsonl"


@dataclass(frozen=True)
class Manifest:
    """What a saved index holds.

    Attributes:
        kind: ``bm25``, ``dense`` or ``hybrid``: which class loads it.
        count: Number of indexed passages.
        model: The embedding model for dense indexes (None otherwise).
        params: The retriever's parameters, as given to its constructor.
    """

    kind: str
    count: int
    model: str | None = None
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_record(self) -> IndexManifest:
        """The ``manifest.json`` record (:class:`~covrag.schema.index.IndexManifest`),
        validated: a manifest this covrag would refuse to read is never written."""
        return read_model(
            IndexManifest,
            {
                "format": FORMAT,
                "version": VERSION,
                "kind": self.kind,
                "count": self.count,
                "model": self.model,
                "params": dict(self.params),
                "covrag": __version__,
            },
            path=MANIFEST,
        )

    def to_json(self) -> str:
        return json.dumps(self.to_record().model_dump(), indent=2) + "\n"

    def param(self, name: str) -> Any:
        """A parameter recorded at build time (DataError when it is missing)."""
        if name not in self.params:
            raise DataError("index manifest lacks a parameter", field=f"params.{name}")
        return self.params[name]

    def write(self, folder: Path) -> None:
        """Write ``manifest.json`` into ``folder``."""
        (folder / MANIFEST).write_text(self.to_json(), encoding="utf-8")


def read_manifest(folder: str | os.PathLike[str], kind: str | None = None) -> Manifest:
    """The manifest of an index folder, checked.

    Raises:
        DataError: when ``folder`` holds no covrag index, a manifest that is not JSON or breaks
            :class:`~covrag.schema.index.IndexManifest` (naming the field), one of another
            format version, or (with ``kind``) an index of another kind.
    """
    path = Path(folder) / MANIFEST
    if not path.is_file():
        raise DataError(
            f"not a covrag index (no {MANIFEST}); build one with `covrag index`",
            path=str(folder),
        )
    record = read_model(IndexManifest, read_json_file(path), path=str(path))
    if kind is not None and record.kind != kind:
        raise DataError(
            f"this is a {record.kind} index, not a {kind} index", path=str(path), field="kind"
        )
    return Manifest(record.kind, record.count, record.model, as_mapping(record.params))


def write_passages(folder: Path, passages: Sequence[Passage]) -> None:
    """Write the passages as ``passages.jsonl`` in ``folder``."""
    lines = []
    for passage in passages:
        try:
            lines.append(json.dumps(passage_record(passage), ensure_ascii=False) + "\n")
        except TypeError as exc:
            raise DataError(
                f"metadata of passage {passage.id!r} cannot be saved as JSON: {exc}"
            ) from None
    (folder / PASSAGES).write_text("".join(lines), encoding="utf-8")


def read_passages(folder: Path, manifest: Manifest) -> tuple[Passage, ...]:
    """The passages of an index folder, checked against the manifest's count."""
    path = folder / PASSAGES
    if not path.is_file():
        raise DataError(f"index is incomplete: {PASSAGES} is missing", path=str(folder))
    passages = read_corpus(path)
    if len(passages) != manifest.count:
        raise DataError(
            f"index is inconsistent: {len(passages)} passages, manifest says {manifest.count}",
            path=str(path),
        )
    return passages


def read_index_passages(folder: str | os.PathLike[str]) -> tuple[Passage, ...]:
    """The passages of a saved index of any kind, without loading it (no model, no arrays): its
    ``passages.jsonl``, or for a fused index its first component's."""
    root = Path(folder)
    manifest = read_manifest(root)
    if not (root / PASSAGES).is_file() and "components" in manifest.params:
        kinds = manifest.param("components")
        if isinstance(kinds, list) and kinds:
            return read_index_passages(root / "components" / f"0-{kinds[0]}")
    return read_passages(root, manifest)


def check_rows(path: Path, rows: int, manifest: Manifest) -> None:
    """Raise a DataError when an index array's row count disagrees with the manifest."""
    if rows != manifest.count:
        raise DataError(
            f"index is inconsistent: {rows} rows, manifest says {manifest.count} passages",
            path=str(path),
        )


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary folder that replaces ``target`` when the block ends without error.

    An existing index at ``target`` is replaced; an existing non-empty folder that is not an
    index is left alone (DataError), so a typo in ``--out`` cannot wipe a folder.
    """
    final = Path(target)
    if final.exists() and not (final / MANIFEST).is_file():
        if not final.is_dir() or any(final.iterdir()):
            raise DataError(
                "exists and is not a covrag index; refusing to overwrite it", path=str(final)
            )
    final.parent.mkdir(parents=True, exist_ok=True)
    # os.mkdir honours the umask (mkdtemp would make the index private to its owner).
    tmp = temporary_path(final, "tmp")  # fits beside a name near the 255-byte limit
    os.mkdir(tmp)
    try:
        yield tmp
        if final.exists():
            old = temporary_path(final, "old")
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
