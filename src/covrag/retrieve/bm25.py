"""Lexical retrieval with BM25 on ``bm25s`` (Lù, 2024: eager sparse scoring).

Text is split on word characters (two or more), lowercased, and English stopwords are removed
with ``bm25s``' own tokenizer, the same way for passages and queries. Scores use the Lucene
variant of BM25 (Robertson & Zaragoza, 2009) with ``k1`` and ``b``.

Identifiers are also indexed as they are written (``identifiers=True``, the default): a
command-line option keeps its dashes and its case (``-L`` and ``-l`` are different curl options,
and the word tokenizer drops one-letter words altogether), and a dotted name stays whole
(``json.dump``, ``os.path.join``), beside the words they hold. A query naming ``--exclude`` or
``-L`` then finds the passage that documents it before passages that only share its words.
An index saved before this option records none and is searched as it was built.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from covrag.errors import CovragError, DataError
from covrag.retrieve.base import NotIndexedError, Ranking, check_k, scored, top_k
from covrag.retrieve.corpus import check_corpus
from covrag.retrieve.kinds import INDEX_KINDS
from covrag.retrieve.store import Manifest, atomic_dir, read_manifest, read_passages, write_passages
from covrag.retrieve.versions import resolve_index
from covrag.text import dotted_names, options
from covrag.types import Passage

logger = logging.getLogger(__name__)

_SUBDIR = "bm25s"


def identifier_tokens(text: str) -> list[str]:
    """The identifiers of ``text`` as index tokens: options with their dashes and case, dotted
    names lower-cased.

    Example:
        >>> identifier_tokens("Use -L (--location) or json.dump; e-mail stays a word.")
        ['-L', '--location', 'json.dump']
    """
    return options(text) + dotted_names(text)


def _bm25s() -> Any:
    try:
        import bm25s
    except ImportError as exc:
        raise CovragError(
            "bm25s, a covrag dependency, cannot be imported: reinstall covrag"
        ) from exc
    # bm25s sets its logger to DEBUG on import, which bypasses the application's log level;
    # let it inherit the application's level instead (an explicit other level is kept).
    bm25s_logger = logging.getLogger("bm25s")
    if bm25s_logger.level == logging.DEBUG:
        bm25s_logger.setLevel(logging.NOTSET)
    return bm25s


@INDEX_KINDS.register
class BM25Retriever:
    """BM25 over a passage corpus.

    Passages that share no term with the query score 0 and are not returned, so a search can
    give fewer than ``k`` passages.

    Args:
        k1: Term-frequency saturation.
        b: Length normalisation.
        stopwords: A ``bm25s`` stopword list name (``"en"``) or None to keep every word.
        identifiers: Also index options and dotted names as written (:func:`identifier_tokens`).

    Example:
        >>> from covrag.types import Passage
        >>> corpus = [Passage("p1", "Cars pollute the air."), Passage("p2", "Bikes are cheap.")]
        >>> retriever = BM25Retriever().index(corpus)
        >>> [p.id for p in retriever.search("air pollution from cars", k=2)]
        ['p1']
    """

    kind = "bm25"

    def __init__(
        self,
        *,
        k1: float = 1.5,
        b: float = 0.75,
        stopwords: str | None = "en",
        identifiers: bool = True,
    ) -> None:
        self.k1 = k1
        self.b = b
        self.stopwords = stopwords
        self.identifiers = identifiers
        self._model: Any = None
        self._passages: tuple[Passage, ...] = ()

    def __repr__(self) -> str:
        return (
            f"BM25Retriever(k1={self.k1!r}, b={self.b!r}, stopwords={self.stopwords!r}, "
            f"identifiers={self.identifiers!r})"
        )

    @property
    def passages(self) -> tuple[Passage, ...]:
        """The indexed passages, in index order."""
        return self._passages

    def _tokenize(self, texts: Sequence[str]) -> list[list[str]]:
        tokens: list[list[str]] = _bm25s().tokenize(
            list(texts),
            lower=True,
            stopwords=self.stopwords,
            return_ids=False,
            show_progress=False,
        )
        if self.identifiers:
            tokens = [t + identifier_tokens(text) for t, text in zip(tokens, texts, strict=True)]
        return tokens

    def index(self, passages: Sequence[Passage]) -> BM25Retriever:
        """Build the index over ``passages`` (unique ids) and return ``self``.

        Raises:
            DataError: for an empty corpus, duplicate ids, or no indexable word at all.
        """
        started = time.perf_counter()
        passages = check_corpus(passages)
        tokens = self._tokenize([p.text for p in passages])
        if not any(tokens):
            raise DataError("no passage has an indexable word (all empty or stopwords)")
        model = _bm25s().BM25(k1=self.k1, b=self.b, method="lucene", backend="numpy")
        model.index(tokens, show_progress=False)
        self._model, self._passages = model, passages
        logger.info(
            "BM25 indexed %d passages in %.2f s", len(passages), time.perf_counter() - started
        )
        return self

    def search(self, query: str, k: int) -> Ranking:
        """The ``k`` best-scoring passages for ``query`` with a score above 0, best first."""
        return self.search_many([query], k)[0]

    def search_many(self, queries: Sequence[str], k: int) -> list[Ranking]:
        """:meth:`search` for each query; the queries are tokenized in one pass."""
        check_k(k)
        if self._model is None:
            raise NotIndexedError(self)
        results = []
        for tokens in self._tokenize(queries):
            scores = self._model.get_scores(tokens) if tokens else np.zeros(len(self._passages))
            best = top_k(scores, k)
            results.append(scored(self._passages, best[scores[best] > 0], scores))
        return results

    def save(self, folder: str | os.PathLike[str]) -> None:
        """Save the index to ``folder`` atomically (an existing index there is replaced)."""
        with atomic_dir(folder) as tmp:
            self.write(tmp)

    def write(self, folder: Path) -> None:
        """Write the index files into an existing empty ``folder`` (no atomicity)."""
        if self._model is None:
            raise NotIndexedError(self)
        params = {
            "k1": self.k1,
            "b": self.b,
            "stopwords": self.stopwords,
            "identifiers": self.identifiers,
        }
        Manifest(self.kind, len(self._passages), None, params).write(folder)
        write_passages(folder, self._passages)
        self._model.save(str(folder / _SUBDIR), show_progress=False)

    @classmethod
    def load(cls, folder: str | os.PathLike[str], **_dense_options: object) -> BM25Retriever:
        """Load a BM25 index saved by :meth:`save` (the options of dense indexes are ignored).

        Raises:
            DataError: when ``folder`` is not a BM25 index or its files disagree.
        """
        root = resolve_index(folder)
        manifest = read_manifest(root, cls.kind)
        passages = read_passages(root, manifest)
        retriever = cls(
            k1=manifest.param("k1"),
            b=manifest.param("b"),
            stopwords=manifest.param("stopwords"),
            identifiers=bool(manifest.params.get("identifiers", False)),
        )
        try:
            model = _bm25s().BM25.load(str(root / _SUBDIR), show_progress=False)
        except (OSError, ValueError) as exc:
            raise DataError(
                f"cannot read the bm25s index: {exc}", path=str(root / _SUBDIR)
            ) from None
        if int(model.scores["num_docs"]) != manifest.count:
            raise DataError(
                f"index is inconsistent: bm25s holds {model.scores['num_docs']} documents, "
                f"manifest says {manifest.count}",
                path=str(root / _SUBDIR),
            )
        retriever._model, retriever._passages = model, passages
        return retriever
