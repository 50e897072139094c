"""The corpus use cases: documents, an index or a dataset -> a retriever; indexing; search.

:func:`open_corpus` is the one way an entry point turns what a user names (a saved index
folder, a folder or files of documents, a passage JSONL, a bundled ``name[:split]``, passages,
or a retriever) into the :class:`~covrag.retrieve.Retriever` that ``ask`` and ``plan`` search.
:func:`index_documents` and :func:`index_corpus` build saved indexes (``covrag index``), and
:func:`search` searches one (``covrag search``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, cast

from covrag.errors import ConfigError
from covrag.ingest.chunk import DEFAULT_OVERLAP, DEFAULT_TOKENS, Chunker
from covrag.ingest.library import IngestReport, update_index
from covrag.ingest.walk import DEFAULT_MAX_BYTES
from covrag.retrieve import BM25Retriever, CoverRetriever, Retriever, load_corpus, load_index
from covrag.retrieve.base import IndexRetriever
from covrag.retrieve.kinds import INDEX_KINDS
from covrag.types import Passage

if TYPE_CHECKING:
    from covrag.pipeline.executor import Executor

#: What :func:`open_corpus` opens: a retriever, passages, or a path or spec.
Corpus: TypeAlias = "str | os.PathLike[str] | Sequence[Passage] | Retriever"

#: Seconds an ask about documents waits while another process updates the same cached index.
CACHE_WAIT = 300.0


@dataclass(frozen=True)
class DocumentOptions:
    """How documents are read and cut into passages (``covrag index --docs``, ``ask --docs``).

    Attributes:
        chunk_tokens: Most tokens (MiniLM WordPiece) per passage.
        chunk_overlap: Tokens shared by consecutive passages of a document.
        max_bytes: A file larger than this is skipped; no more is ever read of it.
        follow_symlinks: Read symlinks whose targets lie outside the paths given.
    """

    chunk_tokens: int = DEFAULT_TOKENS
    chunk_overlap: int = DEFAULT_OVERLAP
    max_bytes: int = DEFAULT_MAX_BYTES
    follow_symlinks: bool = False

    def chunker(self) -> Chunker:
        return Chunker(tokens=self.chunk_tokens, overlap=self.chunk_overlap)


def is_index(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a saved index folder (versioned, or of the layout before versions)."""
    folder = Path(path)
    return (folder / "CURRENT").is_file() or (folder / "manifest.json").is_file()


def open_corpus(
    corpus: Corpus,
    *,
    documents: Sequence[str] | None = None,
    options: DocumentOptions | None = None,
    on_indexed: Callable[[IngestReport], None] | None = None,
) -> Retriever:
    """The retriever of a corpus.

    Args:
        corpus: A retriever (as it is), passages (indexed with BM25), a saved index folder, a
            folder of documents (indexed on the fly and cached, as ``documents``), or a corpus
            spec: a passage JSONL path, a bundled ``name[:split]`` or ``"bundled"``.
        documents: Files, folders or globs to answer from instead (indexed with BM25 into a
            cache folder, updated incrementally: unchanged files are not read again).
        options: How documents are read and chunked (default :class:`DocumentOptions`).
        on_indexed: Called with the indexing report when documents were indexed.
    """
    if documents is None and isinstance(corpus, str | os.PathLike):
        path = os.fspath(corpus)
        if os.path.isdir(path) and not is_index(path):
            documents = [path]
        elif os.path.isdir(path):
            return load_index(path)
        else:
            return BM25Retriever().index(load_corpus(path))
    if documents is not None:
        options = options or DocumentOptions()
        folder = cached_index(documents, "bm25", options)
        report = index_documents(documents, folder, options=options, wait=CACHE_WAIT)
        if on_indexed is not None:
            on_indexed(report)
        return load_index(folder)
    if isinstance(corpus, Sequence):
        return BM25Retriever().index(list(cast("Sequence[Passage]", corpus)))
    return cast("Retriever", corpus)


def cached_index(paths: Sequence[str], kind: str, options: DocumentOptions) -> Path:
    """The cache folder of an index built on the fly (``covrag ask --docs``): one per set of
    named paths, kind and chunk settings, updated incrementally (files by content hash)."""
    from covrag.llm.cache import default_cache_dir

    named = sorted(os.path.abspath(p) for p in paths)
    settings = options.chunker().settings
    key = json.dumps({"paths": named, "kind": kind, "chunks": settings}, sort_keys=True)
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return default_cache_dir() / "docs-indexes" / digest


def index_documents(
    paths: Sequence[str],
    out: str | os.PathLike[str],
    *,
    kind: str = "bm25",
    options: DocumentOptions | None = None,
    on_files: Callable[[int], None] | None = None,
    on_file: Callable[[Path], None] | None = None,
    wait: float = 0.0,
) -> IngestReport:
    """Index the documents ``paths`` names into the folder ``out``, reusing what it holds
    (``wait``: seconds to wait for another process updating ``out``, 0 to refuse at once)."""
    options = options or DocumentOptions()
    return update_index(
        paths,
        out,
        kind=kind,
        chunker=options.chunker(),
        on_files=on_files,
        on_file=on_file,
        follow_symlinks=options.follow_symlinks,
        max_bytes=options.max_bytes,
        wait=wait,
    )


@dataclass(frozen=True)
class IndexedCorpus:
    """An index built over a corpus: the retriever, the passages' count, and the seconds to
    read the corpus and to index it."""

    retriever: IndexRetriever
    passages: int
    read_seconds: float
    index_seconds: float


def index_corpus(
    corpus: str, kind: str, *, model: str | None = None, executor: Executor | None = None
) -> IndexedCorpus:
    """A new index of ``kind`` over the passages of ``corpus`` (a spec, as :func:`open_corpus`
    reads it); the dense embeddings are computed on ``executor``."""
    from covrag.pipeline.batch import build_index

    if model is not None and kind not in ("dense", "cover"):
        raise ConfigError(f"--model applies to dense and cover indexes, not {kind}")
    started = time.perf_counter()
    passages = load_corpus(corpus)
    read = time.perf_counter() - started
    started = time.perf_counter()
    retriever: IndexRetriever
    if model is not None or kind == "cover":
        retriever = INDEX_KINDS.get(kind)(model=model).index(passages)
    else:
        retriever = build_index(passages, kind, executor=executor)
    return IndexedCorpus(retriever, len(passages), read, time.perf_counter() - started)


def search(
    index: str | os.PathLike[str], query: str, k: int, covered: Sequence[str] = ()
) -> list[Passage]:
    """The ``k`` best passages of a saved index for ``query``; with ``covered`` (a ``cover``
    index only), what answers something other than those aspects first."""
    retriever = load_index(index)
    if covered and not isinstance(retriever, CoverRetriever):
        raise ConfigError(f"--covered needs a cover index; {index} is {retriever.kind}")
    if isinstance(retriever, CoverRetriever):
        return list(retriever.search_covered(query, covered, k))
    return list(retriever.search(query, k))
