"""``documents.json``: which files an index built by ``covrag index --docs`` holds.

It sits in the index (its current version, :mod:`covrag.retrieve.versions`) beside
``manifest.json`` and ``passages.jsonl`` and is what an incremental update compares against::

    {"format": "covrag-documents", "version": 1,
     "settings": {"chunker": "semchunk", "unwrap": 2, "tokens": 200, "overlap": 20,
                  "counter": "..."},
     "documents": [{"doc_id": "notes/tea.md", "source": "/abs/notes/tea.md", "title": "Tea",
                    "sha256": "...", "passages": ["notes/tea.md#1", ...]}],
     "skipped": [{"source": "/abs/broken.pdf", "reason": "not a readable PDF (...)",
                  "kind": "unreadable"}],
     "limits": {"follow_symlinks": false, "max_file_bytes": 100000000}}

A file whose ``source`` and ``sha256`` are unchanged (under the same ``settings``) keeps its
passages as they are; any other file is read and chunked again. ``skipped`` lists every path that
gave no document, each with a ``kind`` (:class:`SkippedFile`); ``limits`` are the reading limits
of the update that wrote the file (:mod:`covrag.ingest.walk`).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

from covrag.schema._base import RecordError

DOCUMENTS_FORMAT = "covrag-documents"
DOCUMENTS_VERSION = 1


class IndexedDocument(BaseModel):
    """One file of the index and the ids of its passages, in text order."""

    model_config = ConfigDict(extra="allow", frozen=True)

    doc_id: str
    source: str
    title: str
    sha256: str
    passages: list[str]


class SkippedFile(BaseModel):
    """A path that gave no document, and why.

    ``kind`` sorts the reasons: ``missing``, ``unsupported``, ``unreadable`` (a damaged file,
    no text, an OS error), ``outside`` (a symlink out of the paths given), ``special`` (a
    device, FIFO or socket), ``too-large`` (over the size cap), ``loop`` (a symlink loop) or
    ``too-deep`` (a folder nested too deep); None in files written before it existed.
    """

    model_config = ConfigDict(frozen=True)

    source: str
    reason: str
    kind: str | None = None


class DocumentsFile(BaseModel):
    """The whole ``documents.json``."""

    model_config = ConfigDict(extra="allow")

    format: str = DOCUMENTS_FORMAT
    version: int = DOCUMENTS_VERSION
    settings: dict[str, Any]
    documents: list[IndexedDocument]
    skipped: list[SkippedFile] = []
    limits: dict[str, Any] = {}

    @model_validator(mode="after")
    def _check(self) -> DocumentsFile:
        if self.format != DOCUMENTS_FORMAT:
            raise RecordError("format", f"must be {DOCUMENTS_FORMAT!r}")
        if self.version != DOCUMENTS_VERSION:
            raise RecordError(
                "version", f"version {self.version}; this covrag reads {DOCUMENTS_VERSION}"
            )
        seen: set[str] = set()
        for i, doc in enumerate(self.documents):
            if doc.doc_id in seen:
                raise RecordError(f"documents[{i}].doc_id", f"duplicate {doc.doc_id!r}")
            seen.add(doc.doc_id)
        return self
