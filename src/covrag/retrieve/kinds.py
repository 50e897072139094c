"""Index kinds by name: a new retriever for ``covrag index --kind``; loading any saved index.

Each index retriever class carries its kind (``kind = "bm25"``) and registers itself with
``@INDEX_KINDS.register``; :func:`make_retriever` and :func:`load_index` read the registry, so a new
kind is added in its own module only. This module imports no retriever (the hybrid retriever loads
its parts through :func:`load_index`, so importing one here would be a cycle).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from covrag.errors import ConfigError, DataError
from covrag.registry import Registry
from covrag.retrieve.base import IndexRetriever
from covrag.retrieve.store import read_manifest
from covrag.retrieve.versions import resolve_index

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

#: Loads of an index that an update keeps replacing before giving up.
_LOAD_ATTEMPTS = 3

INDEX_KINDS: Registry[IndexRetriever] = Registry("index kind", key="kind")
"""Index retriever classes by kind (``bm25``, ``dense``, ``hybrid``)."""


class IndexKind(Protocol):
    """The class of an index retriever: builds an empty one, or loads a saved one."""

    kind: str

    def __call__(self) -> IndexRetriever: ...

    def load(
        self,
        folder: str | os.PathLike[str],
        *,
        model: str | None = None,
        encoder: Encoder | None = None,
        faiss: bool | None = None,
    ) -> IndexRetriever: ...


def make_retriever(kind: str) -> IndexRetriever:
    """A new, empty retriever of an index kind (``bm25``, ``dense`` or ``hybrid``).

    Raises:
        ConfigError: for an unknown kind, suggesting the closest one.
    """
    return INDEX_KINDS.get(kind)()


def load_index(
    folder: str | os.PathLike[str],
    *,
    model: str | None = None,
    encoder: Encoder | None = None,
    faiss: bool | None = None,
) -> IndexRetriever:
    """Load a saved index of any kind; ``model``, ``encoder`` and ``faiss`` apply to dense parts.

    Every file comes from the version the index's ``CURRENT`` names when the load starts
    (:mod:`covrag.retrieve.versions`); when an update replaces that version while it is being
    read, the new one is loaded.

    Raises:
        DataError: when ``folder`` is not a covrag index, is of an unknown kind, was built with
            another embedding model, or its files disagree with each other.
    """
    for _ in range(_LOAD_ATTEMPTS - 1):
        root = resolve_index(folder)  # every file from this one version
        try:
            return _load(root, model=model, encoder=encoder, faiss=faiss)
        except (DataError, OSError):
            if resolve_index(folder) == root:
                raise
            # An update published a new version and removed this one while it was being read.
            logger.info("%s was updated while it was loaded: loading the new version", folder)
    return _load(resolve_index(folder), model=model, encoder=encoder, faiss=faiss)


def _load(
    root: Path, *, model: str | None, encoder: Encoder | None, faiss: bool | None
) -> IndexRetriever:
    kind = read_manifest(root).kind
    try:
        index_kind = cast(IndexKind, INDEX_KINDS.get(kind))
    except ConfigError:
        known = ", ".join(INDEX_KINDS.names())
        raise DataError(f"unknown index kind {kind!r} (known: {known})", path=str(root)) from None
    return index_kind.load(root, model=model, encoder=encoder, faiss=faiss)
