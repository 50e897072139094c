"""Ingestion: a user's files (.txt, .md, .html, .pdf, passage JSONL) into an index of passages.

:func:`update_index` reads the files (:func:`read_document`), splits them into token-sized,
sentence-respecting passages with character offsets (:class:`Chunker`, on ``semchunk``) and
builds or incrementally updates a saved index. It needs the ``docs`` extra.
"""

from covrag.ingest.chunk import Chunker
from covrag.ingest.library import IngestReport, read_documents, update_index
from covrag.ingest.readers import Document, UnreadableError, read_document
from covrag.ingest.walk import DEFAULT_MAX_BYTES, find_files, read_file

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Chunker",
    "Document",
    "IngestReport",
    "UnreadableError",
    "find_files",
    "read_document",
    "read_documents",
    "read_file",
    "update_index",
]
