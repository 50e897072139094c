"""Dense retrieval: passages and queries embedded by a sentence encoder, ranked by inner product.

Embeddings are unit vectors (the packaged all-MiniLM-L6-v2 by default), so the inner product is
the cosine similarity. Search is exact: a matrix product and an ``argpartition`` top-k in numpy,
or a FAISS ``IndexFlatIP`` when ``faiss`` is installed (never required). Embeddings are kept as
float32, in memory and on disk, so a loaded index ranks exactly like the one that was saved.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from covrag.embed import DEFAULT_MODEL
from covrag.errors import DataError, MissingExtraError
from covrag.retrieve.base import NotIndexedError, Ranking, check_k, scored, top_k
from covrag.retrieve.corpus import check_corpus
from covrag.retrieve.kinds import INDEX_KINDS
from covrag.retrieve.store import (
    Manifest,
    atomic_dir,
    check_rows,
    read_manifest,
    read_passages,
    write_passages,
)
from covrag.retrieve.versions import resolve_index
from covrag.types import FloatArray, Passage

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

F32Array = npt.NDArray[np.float32]
_EMBEDDINGS = "embeddings.npy"
_QUERY_BLOCK = 1024  # queries scored per matrix product: bounds memory at 1024 x corpus floats
EMBED_CHUNK = 1024  # texts per encoder call when indexing: one unit of work on a Ray worker


def _faiss(required: bool) -> Any:
    try:
        import faiss
    except ImportError as exc:
        if required:
            raise MissingExtraError("faiss-cpu", "faiss") from exc
        return None
    return faiss


def embedding_chunks(texts: Sequence[str], size: int = EMBED_CHUNK) -> list[list[str]]:
    """The distinct ``texts``, longest first (as the encoder batches them), in chunks of
    ``size``: the units in which a corpus is embedded, here or on a cluster's workers, so that
    both embed each text in the same batch and get the same bits."""
    distinct = sorted(dict.fromkeys(texts), key=len, reverse=True)
    return [distinct[i : i + size] for i in range(0, len(distinct), size)]


def gather_embeddings(
    texts: Sequence[str], chunks: Sequence[Sequence[str]], vectors: Sequence[FloatArray]
) -> F32Array:
    """Row i is the embedding of ``texts[i]``, from the chunks' embeddings (float32)."""
    by_text: dict[str, Any] = {}
    for chunk, block in zip(chunks, vectors, strict=True):
        by_text.update(zip(chunk, block, strict=True))
    if not texts:
        return np.zeros((0, 0), dtype=np.float32)
    return np.stack([by_text[t] for t in texts]).astype(np.float32)


@INDEX_KINDS.register
class DenseRetriever:
    """Exact inner-product search over sentence embeddings.

    Args:
        model: A sentence-transformers model name or path; None for the packaged MiniLM.
        encoder: An :class:`~covrag.embed.Encoder` to share (its model wins over ``model``).
        faiss: True to require FAISS, False to use numpy, None to use FAISS when installed.

    The encoder is loaded on first use. Example (loads the model, so not run as a doctest)::

        retriever = DenseRetriever().index(passages)
        retriever.search("do car bans hurt shops?", k=10)
    """

    kind = "dense"

    def __init__(
        self, *, model: str | None = None, encoder: Encoder | None = None, faiss: bool | None = None
    ) -> None:
        if encoder is not None and model is not None and encoder.name != model:
            raise ValueError(f"encoder is {encoder.name!r} but model is {model!r}")
        self.model = model
        self.faiss = faiss
        self._encoder = encoder
        self._passages: tuple[Passage, ...] = ()
        self._embeddings: F32Array | None = None
        self._faiss_index: Any = None

    def __repr__(self) -> str:
        return f"DenseRetriever(model={self.model_name!r}, faiss={self.faiss!r})"

    @property
    def model_name(self) -> str:
        """The encoder's name, as recorded in a saved index's manifest."""
        if self._encoder is not None:
            return self._encoder.name
        return DEFAULT_MODEL if self.model is None else self.model

    @property
    def encoder(self) -> Encoder:
        """The encoder, loaded on first use (the process-wide packaged MiniLM by default)."""
        if self._encoder is None:
            from covrag.embed import Encoder, default_encoder

            self._encoder = default_encoder() if self.model is None else Encoder(self.model)
        return self._encoder

    @property
    def passages(self) -> tuple[Passage, ...]:
        """The indexed passages, in index order."""
        return self._passages

    def index(self, passages: Sequence[Passage]) -> DenseRetriever:
        """Embed ``passages`` (unique ids) and return ``self``.

        Raises:
            DataError: for an empty corpus or duplicate ids.
        """
        started = time.perf_counter()
        passages = check_corpus(passages)
        texts = [p.text for p in passages]
        chunks = embedding_chunks(texts)
        embeddings = gather_embeddings(texts, chunks, [self.encoder.encode(c) for c in chunks])
        self._set(passages, embeddings)
        logger.info(
            "dense indexed %d passages in %.2f s", len(passages), time.perf_counter() - started
        )
        return self

    def reindex(self, passages: Sequence[Passage], previous: object) -> DenseRetriever:
        """Index ``passages``, taking the embedding of each passage ``previous`` (a dense
        retriever of the same model) already holds with the same id and text; only the others
        are embedded. Anything else as ``previous`` embeds everything (:meth:`index`).
        """
        passages = check_corpus(passages)
        if (
            not isinstance(previous, DenseRetriever)
            or previous._embeddings is None
            or previous.model_name != self.model_name
        ):
            return self.index(passages)
        row = {(p.id, p.text): i for i, p in enumerate(previous.passages)}
        known = [row.get((p.id, p.text)) for p in passages]
        new = [i for i, r in enumerate(known) if r is None]
        embeddings = np.zeros((len(passages), previous._embeddings.shape[1]), dtype=np.float32)
        kept = [(i, r) for i, r in enumerate(known) if r is not None]
        if kept:
            at, rows = zip(*kept, strict=True)
            embeddings[list(at)] = previous._embeddings[list(rows)]
        if new:
            texts = [passages[i].text for i in new]
            embeddings[new] = self.encoder.encode(texts).astype(np.float32)
        self._set(passages, embeddings)
        logger.info("dense reindexed %d passages (%d embedded)", len(passages), len(new))
        return self

    def index_embedded(
        self, passages: Sequence[Passage], embeddings: npt.NDArray[np.floating[Any]]
    ) -> DenseRetriever:
        """Index ``passages`` with embeddings computed elsewhere (row i embeds passage i), by
        this retriever's model (a Ray cluster's workers, :mod:`covrag.pipeline.distributed`).

        Raises:
            DataError: for an empty corpus, duplicate ids, or a row count that differs.
        """
        passages = check_corpus(passages)
        if embeddings.ndim != 2 or embeddings.shape[0] != len(passages):
            raise DataError(
                f"{embeddings.shape[0] if embeddings.ndim else 0} embeddings for "
                f"{len(passages)} passages"
            )
        self._set(passages, np.asarray(embeddings, dtype=np.float32))
        return self

    def _set(self, passages: tuple[Passage, ...], embeddings: F32Array) -> None:
        embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        embeddings.setflags(write=False)
        self._passages, self._embeddings = passages, embeddings
        self._faiss_index = None
        faiss = None if self.faiss is False else _faiss(required=bool(self.faiss))
        if faiss is not None:
            self._faiss_index = faiss.IndexFlatIP(embeddings.shape[1])
            self._faiss_index.add(embeddings)

    def search(self, query: str, k: int) -> Ranking:
        """The ``k`` passages most similar to ``query`` (cosine), best first."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """:meth:`search` for each query; queries are embedded and scored in batches."""
        check_k(k)
        if self._embeddings is None:
            raise NotIndexedError(self)
        if not queries:
            return []
        vectors = self.encoder.encode(list(queries)).astype(np.float32)
        if vectors.shape[1] != self._embeddings.shape[1]:
            raise DataError(
                f"query embeddings have {vectors.shape[1]} dimensions, the index "
                f"{self._embeddings.shape[1]}: the index was built with another model"
            )
        if self._faiss_index is not None:
            return self._search_faiss(vectors, k)
        results: list[Ranking] = []
        for start in range(0, len(vectors), _QUERY_BLOCK):
            block = vectors[start : start + _QUERY_BLOCK] @ self._embeddings.T
            results.extend(scored(self._passages, top_k(row, k), row) for row in block)
        return results

    def _search_faiss(self, vectors: F32Array, k: int) -> list[Ranking]:
        scores, ids = self._faiss_index.search(vectors, min(k, len(self._passages)))
        results: list[Ranking] = []
        for row_ids, row_scores in zip(ids.tolist(), scores.tolist(), strict=True):
            pairs = [(i, s) for i, s in zip(row_ids, row_scores, strict=True) if i >= 0]
            results.append(
                tuple(dataclasses.replace(self._passages[i], score=float(s)) for i, s in pairs)
            )
        return results

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Save the index to ``folder`` atomically (an existing index there is replaced)."""
        with atomic_dir(folder) as tmp:
            self.write(tmp)

    def write(self, folder: Path) -> None:
        """Write the index files into an existing empty ``folder`` (no atomicity)."""
        if self._embeddings is None:
            raise NotIndexedError(self)
        dimension = int(self._embeddings.shape[1])
        Manifest(self.kind, len(self._passages), self.model_name, {"dimension": dimension}).write(
            folder
        )
        write_passages(folder, self._passages)
        np.save(folder / _EMBEDDINGS, self._embeddings, allow_pickle=False)

    @classmethod
    def load(
        cls,
        folder: str | os.PathLike[str],
        *,
        model: str | None = None,
        encoder: Encoder | None = None,
        faiss: bool | None = None,
    ) -> DenseRetriever:
        """Load a dense index saved by :meth:`save`, for queries embedded by the same model.

        Args:
            folder: The index folder.
            model: The model that will embed queries; None for the packaged MiniLM.
            encoder: An encoder to share instead of ``model``.
            faiss: As in the constructor.

        Raises:
            DataError: when ``folder`` is not a dense index, was built with another model, or its
                files disagree with each other.
        """
        root = resolve_index(folder)
        manifest = read_manifest(root, cls.kind)
        retriever = cls(model=model, encoder=encoder, faiss=faiss)
        if manifest.model != retriever.model_name:
            raise DataError(
                f"index was built with model {manifest.model!r} but queries would be embedded "
                f"with {retriever.model_name!r}: load it with model={manifest.model!r} or "
                "rebuild it",
                path=str(root),
                field="model",
            )
        passages = read_passages(root, manifest)
        path = root / _EMBEDDINGS
        try:
            embeddings = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read the embeddings: {exc}", path=str(path)) from None
        check_rows(path, int(embeddings.shape[0]) if embeddings.ndim == 2 else -1, manifest)
        if embeddings.shape[1] != manifest.param("dimension"):
            raise DataError("embedding dimension disagrees with the manifest", path=str(path))
        retriever._set(passages, embeddings)
        return retriever
