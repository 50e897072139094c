"""The retrieval protocol and the top-k kernel shared by the retrievers.

A retriever has one verb, ``search(query, k)``, returning the best ``k`` passages best first as
:class:`~covrag.types.Passage` records with ``score`` set, so a result drops straight into a
:class:`~covrag.types.Topic` as its candidate pool. ``search_many`` is the batched form.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from covrag.errors import ConfigError, CovragError
from covrag.types import IntArray, Passage

Ranking = tuple[Passage, ...]


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks passages for a query."""

    def search(self, query: str, k: int) -> Ranking:
        """The ``k`` best passages for ``query``, best first, each with ``score`` set."""
        ...

    def search_many(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """``search`` for each query, in order."""
        ...


@runtime_checkable
class IndexRetriever(Retriever, Protocol):
    """A retriever that indexes a corpus itself and saves the index to a folder."""

    kind: str

    @property
    def passages(self) -> tuple[Passage, ...]:
        """The indexed passages, in index order."""
        ...

    def index(self, passages: Sequence[Passage]) -> IndexRetriever:
        """Build the index over ``passages`` and return ``self``."""
        ...

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Save the index to ``folder`` atomically."""
        ...

    def write(self, folder: Path) -> None:
        """Write the index files into an existing empty ``folder``."""
        ...


class NotIndexedError(CovragError, RuntimeError):
    """A retriever was asked to search or save before it indexed a corpus."""

    def __init__(self, retriever: object) -> None:
        super().__init__(
            f"{retriever!r} has no index: call .index(passages) or load one with .load(folder)"
        )


def check_k(k: int) -> None:
    """Reject a non-positive ``k`` (``covrag search --k``, a request's ``k``).

    Raises:
        ConfigError: ``k`` is not an integer >= 1 (a ``ValueError`` too, for library callers).
    """
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")


def top_k(scores: npt.NDArray[np.floating], k: int) -> IntArray:
    """Indices of the ``k`` highest scores, best first; equal scores in index order.

    ``np.argpartition`` finds the k-th best value in O(n); only the scores at or above it are
    sorted, so the result is deterministic even when ties straddle the cut.
    """
    n = int(scores.shape[0])
    k = min(k, n)
    if k <= 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        kth = scores[np.argpartition(-scores, k - 1)[:k]].min()
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))
    result: IntArray = candidates[order[:k]].astype(np.int64)
    return result


def scored(
    passages: Sequence[Passage], indices: IntArray, scores: npt.NDArray[np.floating]
) -> Ranking:
    """The passages at ``indices`` with ``score`` set from ``scores`` (aligned with the corpus)."""
    return tuple(dataclasses.replace(passages[i], score=float(scores[i])) for i in indices.tolist())
