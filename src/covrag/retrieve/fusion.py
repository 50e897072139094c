"""Reciprocal rank fusion, and the hybrid retriever that fuses several retrievers with it."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from covrag.errors import ConfigError
from covrag.retrieve.base import IndexRetriever, NotIndexedError, Ranking, Retriever, check_k
from covrag.retrieve.kinds import INDEX_KINDS, load_index
from covrag.retrieve.store import Manifest, atomic_dir, check_rows, read_manifest
from covrag.retrieve.versions import resolve_index
from covrag.types import Passage

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

RRF_K = 60


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[Passage]], k: int = RRF_K, limit: int | None = None
) -> Ranking:
    """Fuse rankings by reciprocal rank (Cormack, Clarke & Buettcher, SIGIR 2009).

    ``score(d) = sum over the rankings r that contain d of 1 / (k + rank_r(d))``, ranks from 1.
    Only ranks matter, so retrievers with incomparable scores (BM25, cosine) fuse fairly;
    ``k = 60`` damps the weight of the very top ranks, as in the paper.

    Passages are matched by id, so a passage returned by several rankings appears once, with
    the record of its first occurrence (earliest ranking, best rank) and ``score`` set to the
    fused score. An id repeated within one ranking counts at its best rank only. Equal fused
    scores keep the order of first occurrence; sums use ``math.fsum``, so equal rank multisets
    give exactly equal scores.

    Args:
        rankings: Ranked lists, best first.
        k: The RRF constant (> 0).
        limit: Keep at most this many passages (all when None).

    Example:
        >>> from covrag.types import Passage
        >>> a, b, c = Passage("a", "A"), Passage("b", "B"), Passage("c", "C")
        >>> fused = reciprocal_rank_fusion([[a, b], [b, c]])
        >>> [(p.id, round(p.score * 61 * 62)) for p in fused]
        [('b', 123), ('a', 62), ('c', 61)]
    """
    if not k > 0:
        raise ValueError(f"the RRF constant k must be > 0, got {k!r}")
    first: dict[str, Passage] = {}
    ranks: dict[str, list[int]] = {}
    for ranking in rankings:
        seen: set[str] = set()
        for rank, passage in enumerate(ranking, start=1):
            if passage.id in seen:
                continue
            seen.add(passage.id)
            first.setdefault(passage.id, passage)
            ranks.setdefault(passage.id, []).append(rank)
    scores = {pid: math.fsum(1.0 / (k + r) for r in rs) for pid, rs in ranks.items()}
    order = sorted(first, key=lambda pid: -scores[pid])  # stable: ties keep first occurrence
    if limit is not None:
        order = order[:limit]
    return tuple(dataclasses.replace(first[pid], score=scores[pid]) for pid in order)


@INDEX_KINDS.register
class HybridRetriever:
    """Several retrievers fused by reciprocal rank fusion.

    Each retriever returns its best ``max(depth, k)`` passages; the fused ranking keeps ``k``.

    Args:
        retrievers: The retrievers to fuse; None for BM25 and the packaged dense MiniLM.
        rrf_k: The RRF constant (see :func:`reciprocal_rank_fusion`).
        depth: How many passages each retriever contributes to the fusion.
    """

    kind = "hybrid"

    def __init__(
        self, retrievers: Sequence[Retriever] | None = None, *, rrf_k: int = RRF_K, depth: int = 100
    ) -> None:
        if retrievers is None:
            from covrag.retrieve.bm25 import BM25Retriever
            from covrag.retrieve.dense import DenseRetriever

            retrievers = (BM25Retriever(), DenseRetriever())
        if not retrievers:
            raise ValueError("HybridRetriever needs at least one retriever")
        check_k(depth)
        self.retrievers = tuple(retrievers)
        self.rrf_k = rrf_k
        self.depth = depth

    def __repr__(self) -> str:
        parts = ", ".join(repr(r) for r in self.retrievers)
        return f"HybridRetriever([{parts}], rrf_k={self.rrf_k!r}, depth={self.depth!r})"

    @property
    def passages(self) -> tuple[Passage, ...]:
        """The first retriever's indexed passages (empty when it keeps none)."""
        return tuple(getattr(self.retrievers[0], "passages", ()))

    def _indexable(self) -> list[IndexRetriever]:
        parts = [r for r in self.retrievers if isinstance(r, IndexRetriever)]
        if len(parts) != len(self.retrievers):
            raise ConfigError("every retriever of this HybridRetriever must index and save itself")
        return parts

    def index(self, passages: Sequence[Passage]) -> HybridRetriever:
        """Index ``passages`` with every retriever and return ``self``."""
        for retriever in self._indexable():
            retriever.index(passages)
        return self

    def reindex(self, passages: Sequence[Passage], previous: object) -> HybridRetriever:
        """Index ``passages``; each part that can reuses the same part of ``previous`` (a
        hybrid retriever of the same parts), e.g. a dense part's embeddings."""
        olds: Sequence[object] = ()
        if isinstance(previous, HybridRetriever):
            olds = previous.retrievers
        for i, retriever in enumerate(self._indexable()):
            reindex = getattr(retriever, "reindex", None)
            if i < len(olds) and type(olds[i]) is type(retriever) and callable(reindex):
                reindex(passages, olds[i])
            else:
                retriever.index(passages)
        return self

    def search(self, query: str, k: int) -> Ranking:
        """The ``k`` best passages of the fused ranking for ``query``."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """:meth:`search` for each query, each retriever searching all queries in one batch."""
        check_k(k)
        depth = max(self.depth, k)
        per_retriever = [r.search_many(queries, depth) for r in self.retrievers]
        return [
            reciprocal_rank_fusion(lists, self.rrf_k, limit=k)
            for lists in zip(*per_retriever, strict=True)
        ]

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Save every retriever's index under ``folder/components`` atomically."""
        with atomic_dir(folder) as tmp:
            self.write(tmp)

    def write(self, folder: Path) -> None:
        """Write the index files into an existing empty ``folder`` (no atomicity)."""
        parts = self._indexable()
        if not self.passages:
            raise NotIndexedError(self)
        kinds = [r.kind for r in parts]
        params = {"rrf_k": self.rrf_k, "depth": self.depth, "components": kinds}
        Manifest(self.kind, len(self.passages), None, params).write(folder)
        for i, retriever in enumerate(parts):
            sub = folder / "components" / f"{i}-{retriever.kind}"
            sub.mkdir(parents=True)
            retriever.write(sub)

    @classmethod
    def load(
        cls,
        folder: str | os.PathLike[str],
        *,
        model: str | None = None,
        encoder: Encoder | None = None,
        faiss: bool | None = None,
    ) -> HybridRetriever:
        """Load a hybrid index saved by :meth:`save` (options as in ``DenseRetriever.load``).

        Raises:
            DataError: when ``folder`` or one of its components is not a valid index.
        """
        root = resolve_index(folder)
        manifest = read_manifest(root, cls.kind)
        kinds = manifest.param("components")
        parts = [
            load_index(
                root / "components" / f"{i}-{kind}", model=model, encoder=encoder, faiss=faiss
            )
            for i, kind in enumerate(kinds)
        ]
        for part in parts:
            check_rows(root / "components", len(part.passages), manifest)
        return cls(parts, rrf_k=manifest.param("rrf_k"), depth=manifest.param("depth"))
