"""The on-disk layout of a saved index, written atomically and checked on load.

An index is a version (:mod:`covrag.retrieve.versions`): a folder named by the index folder's
``CURRENT`` file (an index written before versions holds these files itself)::

    manifest.json    {"format": "covrag-index", "version": 1, "kind": "bm25", "count": N,
                      "model": ..., "params": {...}, "covrag": "0.1.0"}
    passages.jsonl   the indexed passages in index order (a valid passage corpus file)
    ...              the kind's own files (bm25s arrays, embeddings.npy, components/)

:func:`atomic_dir` takes the index's write lock, writes a new version and publishes it by
replacing ``CURRENT``, so a reader sees the old index or the new one, never half of one, and a
second writer is refused. Readers call :func:`~covrag.retrieve.versions.resolve_index` once and
read every file from the folder it returns.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from covrag.errors import DataError
from covrag.retrieve.corpus import passage_record, read_corpus
from covrag.retrieve.versions import POINTER, index_lock, is_ours, new_version, resolve_index
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
    path = resolve_index(folder) / MANIFEST
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
    """Write the passages as ``passages.jsonl`` in ``folder``, a line at a time."""
    with open(folder / PASSAGES, "w", encoding="utf-8") as handle:
        for passage in passages:
            try:
                line = json.dumps(passage_record(passage), ensure_ascii=False)
            except TypeError as exc:
                raise DataError(
                    f"metadata of passage {passage.id!r} cannot be saved as JSON: {exc}"
                ) from None
            handle.write(line + "\n")


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
    root = resolve_index(folder)
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


def check_replaceable(folder: str | os.PathLike[str]) -> None:
    """Refuse to write an index over anything but an index, an empty folder or nothing.

    Raises:
        DataError: ``folder`` is a file, or a folder that holds other files than an index's
            (a typo in ``--out`` must not wipe a folder).
    """
    final = Path(folder)
    if not final.exists() or (final / MANIFEST).is_file() or (final / POINTER).is_file():
        return
    if not final.is_dir() or any(not is_ours(entry.name) for entry in final.iterdir()):
        raise DataError(
            "exists and is not a covrag index; refusing to overwrite it", path=str(final)
        )


@contextlib.contextmanager
def atomic_dir(target: str | os.PathLike[str], wait: float = 0.0) -> Iterator[Path]:
    """Yield an empty folder that becomes the index ``target`` when the block ends without error
    (:func:`~covrag.retrieve.versions.new_version`), holding the index's write lock throughout.

    An existing index at ``target`` is replaced; an existing non-empty folder that is not an
    index is left alone (DataError), so a typo in ``--out`` cannot wipe a folder.

    Raises:
        IndexLockedError: another process is writing ``target`` (after ``wait`` seconds).
        IndexWriteError: the new version could not be written; ``target`` is unchanged.
    """
    check_replaceable(target)
    with index_lock(target, wait), new_version(target) as tmp:
        yield tmp
