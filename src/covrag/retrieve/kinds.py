"""Index kinds by name: a new retriever for ``covrag index --kind``; loading any saved index."""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from covrag.errors import ConfigError, DataError
from covrag.retrieve.base import IndexRetriever
from covrag.retrieve.bm25 import BM25Retriever
from covrag.retrieve.dense import DenseRetriever
from covrag.retrieve.fusion import HybridRetriever
from covrag.retrieve.store import read_manifest

if TYPE_CHECKING:
    from covrag.embed import Encoder

#: Index kind -> a retriever with default parameters.
KINDS: dict[str, Callable[[], IndexRetriever]] = {
    BM25Retriever.kind: BM25Retriever,
    DenseRetriever.kind: DenseRetriever,
    HybridRetriever.kind: HybridRetriever,
}


def make_retriever(kind: str) -> IndexRetriever:
    """A new, empty retriever of an index kind (``bm25``, ``dense`` or ``hybrid``).

    Raises:
        ConfigError: for an unknown kind, suggesting the closest one.
    """
    if kind not in KINDS:
        close = difflib.get_close_matches(kind, KINDS, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        raise ConfigError(f"unknown index kind {kind!r} (known: {', '.join(KINDS)}){hint}")
    return KINDS[kind]()


def load_index(
    folder: str | os.PathLike[str],
    *,
    model: str | None = None,
    encoder: Encoder | None = None,
    faiss: bool | None = None,
) -> IndexRetriever:
    """Load a saved index of any kind; ``model``, ``encoder`` and ``faiss`` apply to dense parts.

    Raises:
        DataError: when ``folder`` is not a covrag index, is of an unknown kind, was built with
            another embedding model, or its files disagree with each other.
    """
    root = Path(folder)
    kind = read_manifest(root).kind
    if kind not in _LOADERS:
        raise DataError(f"unknown index kind {kind!r} (known: {', '.join(KINDS)})", path=str(root))
    return _LOADERS[kind](root, model=model, encoder=encoder, faiss=faiss)


def _load_bm25(root: Path, **_: object) -> IndexRetriever:
    return BM25Retriever.load(root)


_LOADERS: dict[str, Callable[..., IndexRetriever]] = {
    BM25Retriever.kind: _load_bm25,
    DenseRetriever.kind: DenseRetriever.load,
    HybridRetriever.kind: HybridRetriever.load,
}
