"""Build or update a saved index from a user's files, re-reading only what changed.

:func:`update_index` lists the files (:func:`~covrag.ingest.walk.find_files`: regular files
inside the paths given; symlinks out of them, devices, FIFOs, loops and deep folders are
skipped), reads each within a size cap (:func:`~covrag.ingest.walk.read_file`), hashes it, and
compares with the index's ``documents.json`` (:mod:`covrag.schema.documents`): a file with the
same path and hash, chunked with the same settings, keeps its passages; a new or changed file is
read and chunked; a file no longer named (or now unreadable) drops out. Unreadable files are
skipped and reported, never fatal; an update that leaves no passage is an error. A dense index
re-embeds only passages it has not embedded before.

An update holds the index's write lock from before it reads the previous index until the new one
is published, so a second writer is refused (or waits); the new index is written as a new
version and published by replacing one pointer file (:mod:`covrag.retrieve.versions`), so a
reader sees the old index or the new one, and a crash or a full disk leaves the old one. An
update that changes nothing rewrites nothing.
"""

from __future__ import annotations

import io
import json
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from covrag.errors import ConfigError, CovragError, DataError
from covrag.ingest.chunk import Chunker
from covrag.ingest.readers import JSONL, UnreadableError, file_hash, read_document
from covrag.ingest.walk import DEFAULT_MAX_BYTES, SkipError, find_files, read_file
from covrag.retrieve import load_index, make_retriever
from covrag.retrieve.base import IndexRetriever
from covrag.retrieve.corpus import parse_corpus
from covrag.retrieve.store import (
    MANIFEST,
    check_replaceable,
    read_index_passages,
    read_manifest,
)
from covrag.retrieve.versions import index_lock, new_version, resolve_index
from covrag.schema._base import read_model
from covrag.schema.documents import DocumentsFile, SkippedFile
from covrag.types import Passage

logger = logging.getLogger(__name__)

DOCUMENTS = "documents.json"

#: Called after each file is handled, with its path (for a progress bar).
FileCallback = Callable[[Path], None]


@dataclass(frozen=True)
class IngestReport:
    """What an update did.

    Attributes:
        documents: Files in the index now.
        passages: Passages in the index now.
        parsed: Files read and chunked this time (new or changed).
        reused: Files unchanged since the last update (passages kept, nothing re-read).
        removed: Files of the previous index that are gone (or now skipped).
        skipped: Files that could not be read, each with the reason.
        written: Whether the index was (re)written; False when nothing changed.
        seconds: Wall-clock time of the whole update.
    """

    documents: int
    passages: int
    parsed: tuple[str, ...] = ()
    reused: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    skipped: tuple[SkippedFile, ...] = ()
    written: bool = True
    seconds: float = 0.0


@dataclass(frozen=True, slots=True)
class _Document:
    """One file of the index: an :class:`IndexedDocument` without pydantic's weight (a
    hundredth of the memory, which counts in a folder of 100,000 files)."""

    doc_id: str
    source: str
    title: str
    sha256: str
    passages: tuple[str, ...]

    def to_json(self) -> str:
        record = {
            "doc_id": self.doc_id,
            "source": self.source,
            "title": self.title,
            "sha256": self.sha256,
            "passages": self.passages,
        }
        return json.dumps(record, ensure_ascii=False)


@dataclass
class _Previous:
    """The last update's documents (by source) and passages (by id), when reusable."""

    documents: dict[str, _Document] = field(default_factory=dict)
    passages: dict[str, Passage] = field(default_factory=dict)
    kind: str | None = None
    skipped: tuple[SkippedFile, ...] = ()
    limits: dict[str, object] = field(default_factory=dict)


def read_documents(folder: str | os.PathLike[str]) -> DocumentsFile | None:
    """The ``documents.json`` of an index folder, or None when it has none."""
    path = resolve_index(folder) / DOCUMENTS
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg}", path=str(path), line=exc.lineno) from None
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 (byte {exc.start})", path=str(path)) from None
    return read_model(DocumentsFile, data, path=str(path))


def _previous(folder: Path, chunker: Chunker) -> _Previous:
    root = resolve_index(folder)
    if not (root / MANIFEST).is_file():
        return _Previous()
    listing = read_documents(root)
    if listing is None:
        return _Previous()  # an index of passage JSONL (covrag index --corpus): rebuilt whole
    manifest = read_manifest(root)
    if listing.settings != chunker.settings:
        logger.info("chunk settings changed: every file is read again")
        return _Previous(kind=manifest.kind)
    passages = {p.id: p for p in read_index_passages(root)}
    documents = {
        d.source: _Document(d.doc_id, d.source, d.title, d.sha256, tuple(d.passages))
        for d in listing.documents
    }
    return _Previous(
        documents, passages, manifest.kind, tuple(listing.skipped), dict(listing.limits)
    )


def _doc_ids(files: Mapping[Path, str], previous: _Previous) -> dict[Path, str]:
    """A unique ``doc_id`` per file: the previous one for a known file, else its short name
    (whitespace made ``_``), numbered ``~2``, ``~3``... when taken."""
    ids: dict[Path, str] = {}
    taken: set[str] = set()
    for path in files:
        known = previous.documents.get(str(path))
        if known is not None and known.doc_id not in taken:
            ids[path] = known.doc_id
            taken.add(known.doc_id)
    for path, name in files.items():
        if path in ids:
            continue
        base = "_".join(name.split()) or "doc"
        doc_id, n = base, 1
        while doc_id in taken:
            n += 1
            doc_id = f"{base}~{n}"
        ids[path] = doc_id
        taken.add(doc_id)
    return ids


def _parse(path: Path, doc_id: str, data: bytes, chunker: Chunker) -> tuple[str, list[Passage]]:
    """The title and passages of one file (UnreadableError with the reason)."""
    if path.suffix.lower() in JSONL:
        try:
            passages = list(
                parse_corpus(
                    enumerate(io.StringIO(data.decode("utf-8"), newline=None), start=1),
                    str(path),
                )
            )
        except (DataError, UnicodeDecodeError) as exc:
            raise UnreadableError(str(exc).removeprefix(f"{path}: ")) from None
        if not passages:
            raise UnreadableError("no passages in the file")
        return path.stem, passages
    document = read_document(path, data)
    passages = list(chunker.split(document, doc_id))
    if not passages:
        raise UnreadableError("no text in the file")
    return document.title, passages


@dataclass
class _Collected:
    documents: list[_Document] = field(default_factory=list)
    passages: list[Passage] = field(default_factory=list)
    parsed: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)


def _collect(
    files: Mapping[Path, str],
    previous: _Previous,
    chunker: Chunker,
    on_file: FileCallback,
    max_bytes: int,
) -> _Collected:
    out = _Collected()
    seen: set[str] = set()
    doc_ids = _doc_ids(files, previous)
    for path in files:
        doc_id = doc_ids[path]
        source = str(path)
        try:
            data = read_file(path, max_bytes)
            digest = file_hash(data)
            known = previous.documents.get(source)
            if (
                known is not None
                and (known.sha256, known.doc_id) == (digest, doc_id)
                and all(i in previous.passages for i in known.passages)
            ):
                title, passages = known.title, [previous.passages[i] for i in known.passages]
                out.reused.append(source)
            else:
                title, passages = _parse(path, doc_id, data, chunker)
                out.parsed.append(source)
            clash = next((p.id for p in passages if p.id in seen), None)
            if clash is not None:
                raise UnreadableError(f"passage id {clash!r} is already taken by another file")
        except OSError as exc:
            reason = exc.strerror or str(exc)
            out.skipped.append(SkippedFile(source=source, reason=reason, kind="unreadable"))
        except UnreadableError as exc:
            kind = exc.kind if isinstance(exc, SkipError) else "unreadable"
            out.skipped.append(SkippedFile(source=source, reason=str(exc), kind=kind))
        else:
            ids = tuple(p.id for p in passages)
            seen.update(ids)
            out.documents.append(_Document(doc_id, source, title, digest, ids))
            out.passages.extend(passages)
        on_file(path)
    return out


def _build(
    kind: str, passages: Sequence[Passage], folder: Path, previous: _Previous
) -> IndexRetriever:
    """A retriever of ``kind`` over ``passages``; a dense part reuses the previous embeddings."""
    retriever = make_retriever(kind)
    reindex = getattr(retriever, "reindex", None)  # dense and hybrid; BM25 rebuilds in full
    reuse = None
    if callable(reindex) and previous.kind == kind:
        try:
            reuse = load_index(folder)
        except CovragError as exc:  # an old index that no longer loads is simply rebuilt
            logger.warning("cannot reuse %s (%s): indexing every passage", folder, exc)
    if callable(reindex) and reuse is not None:
        reindex(passages, reuse)
    else:
        retriever.index(passages)
    return retriever


def update_index(
    paths: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    kind: str = "bm25",
    chunker: Chunker | None = None,
    on_file: FileCallback | None = None,
    on_files: Callable[[int], None] | None = None,
    follow_symlinks: bool = False,
    max_bytes: int = DEFAULT_MAX_BYTES,
    wait: float = 0.0,
) -> IngestReport:
    """Index the files named by ``paths`` into the folder ``out``, reusing what it holds.

    Args:
        paths: Files, folders (searched recursively) and globs.
        out: The index folder: created, or updated when it holds an index of files.
        kind: Index kind (``bm25``, ``dense``, ``hybrid``).
        chunker: Passage size and overlap (default :class:`Chunker`).
        on_file: Called after each file is handled.
        on_files: Called once with the number of files found, before any is read.
        follow_symlinks: Read symlinks whose targets lie outside ``paths`` too.
        max_bytes: Skip a file larger than this (no more than ``max_bytes + 1`` of its bytes
            are read).
        wait: Seconds to wait while another process updates ``out`` (0: refuse at once).

    Raises:
        DataError: when no file gives a passage (the message lists the skipped files), or
            ``out`` is a folder that holds something other than an index.
        IndexLockedError: another process is updating ``out``.
        IndexWriteError: the new index could not be written (a full disk...); ``out`` holds
            the previous index, unchanged.
    """
    started = time.perf_counter()
    folder = Path(out)
    check_replaceable(folder)  # before any file is read
    if max_bytes < 1:
        raise ConfigError(f"the file size cap must be positive, not {max_bytes} bytes")
    limits = {"follow_symlinks": follow_symlinks, "max_file_bytes": max_bytes}
    with index_lock(folder, wait):
        files, missing = find_files(paths, follow_symlinks=follow_symlinks)
        if on_files is not None:
            on_files(len(files))
        chunker = chunker or Chunker()
        previous = _previous(folder, chunker)
        got = _collect(files, previous, chunker, on_file or (lambda _: None), max_bytes)
        skipped = tuple(SkippedFile(source=m.path, reason=m.reason, kind=m.kind) for m in missing)
        skipped += tuple(got.skipped)
        removed = tuple(sorted(set(previous.documents) - {d.source for d in got.documents}))
        if not got.passages:
            raise DataError(_nothing_read(paths, skipped))
        write = got.parsed or removed or previous.kind != kind or skipped != previous.skipped
        write = bool(write or limits != previous.limits)
        if write:
            retriever = _build(kind, got.passages, folder, previous)
            listing = DocumentsFile(
                settings=chunker.settings, documents=[], skipped=list(skipped), limits=limits
            )
            with new_version(folder) as tmp:
                retriever.write(tmp)
                _write_documents(tmp / DOCUMENTS, listing, got.documents)
    seconds = time.perf_counter() - started
    logger.info(
        "indexed %d files (%d read) in %.2f s", len(got.documents), len(got.parsed), seconds
    )
    return IngestReport(
        documents=len(got.documents),
        passages=len(got.passages),
        parsed=tuple(got.parsed),
        reused=tuple(got.reused),
        removed=removed,
        skipped=skipped,
        written=write,
        seconds=seconds,
    )


def _write_documents(path: Path, listing: DocumentsFile, documents: Sequence[_Document]) -> None:
    """Write ``documents.json``: ``listing`` (checked by pydantic) with ``documents``, written a
    document at a time rather than built as one string."""
    head = listing.model_dump_json(indent=1, exclude={"documents"})
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(head.rstrip().removesuffix("}").rstrip() + ',\n "documents": [')
        for i, document in enumerate(documents):
            handle.write(("," if i else "") + "\n  " + document.to_json())
        handle.write("\n ]\n}\n")


def _nothing_read(paths: Sequence[str | os.PathLike[str]], skipped: Sequence[SkippedFile]) -> str:
    named = ", ".join(str(p) for p in paths)
    lines = [f"no passages from {named}: no readable .txt, .md, .html, .pdf or .jsonl file"]
    lines += [f"  skipped {s.source}: {s.reason}" for s in skipped[:20]]
    if len(skipped) > 20:
        lines.append(f"  ... and {len(skipped) - 20} more")
    return "\n".join(lines)
