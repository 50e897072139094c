"""CoveR: dense retrieval with a coverage-trained bi-encoder, queried with what is already covered.

The DES paper's coverage-trained bi-encoder (``docs/METHODS.md``, "CoveR objective") reads a query
made of the question plus the sub-questions already covered and ranks first the passages that
answer a sub-question not yet covered. :func:`cover_query` writes that query; the model is trained
by ``covrag-lab train cover`` (:mod:`covrag_lab.train.cover`) and is any sentence-transformers
folder.

:class:`CoverRetriever` is a dense index (kind ``cover``) whose encoder is such a model. Besides
``search(question, k)`` (nothing covered yet) it has :meth:`~CoverRetriever.search_covered` and
:meth:`~CoverRetriever.search_aspects`, the multi-query search ``covrag ask`` runs with it: the
question, then each aspect (or, with ``others_covered``, the question with the other aspects given
as covered), fused by reciprocal rank fusion.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, cast

from covrag.errors import ConfigError
from covrag.retrieve.base import Ranking, check_k
from covrag.retrieve.dense import DenseRetriever
from covrag.retrieve.fusion import RRF_K, reciprocal_rank_fusion
from covrag.retrieve.kinds import INDEX_KINDS
from covrag.retrieve.store import read_manifest
from covrag.retrieve.versions import resolve_index
from covrag.types import Aspect

if TYPE_CHECKING:
    from covrag.embed import Encoder

#: Joins the question and the covered aspects in a CoveR query (training and search alike).
COVERED_PREFIX = " Already covered: "
COVERED_SEPARATOR = " | "


def cover_query(question: str, covered: Sequence[str] = ()) -> str:
    """The CoveR query: the question, then the aspects already covered.

    Example:
        >>> cover_query("Should cities ban cars?", ["Bans cut pollution."])
        'Should cities ban cars? Already covered: Bans cut pollution.'
        >>> cover_query("Should cities ban cars?")
        'Should cities ban cars?'
    """
    texts = [c.strip() for c in covered if c.strip()]
    if not texts:
        return question.strip()
    return question.strip() + COVERED_PREFIX + COVERED_SEPARATOR.join(texts)


def _texts(aspects: Sequence[str | Aspect]) -> list[str]:
    """Aspect texts to search for (aspects of polarity ``exclude`` are never searched)."""
    return [
        a if isinstance(a, str) else a.text
        for a in aspects
        if isinstance(a, str) or a.polarity != "exclude"
    ]


@INDEX_KINDS.register
class CoverRetriever(DenseRetriever):
    """A dense index over a coverage-trained bi-encoder (``covrag-lab train cover``).

    Args:
        model: The CoveR model folder (or any sentence-transformers name). Required: covrag
            ships no CoveR model, so an index without one would be plain MiniLM retrieval.
        encoder: An encoder to share (its model wins over ``model``).
        faiss: As for :class:`~covrag.retrieve.DenseRetriever`.
        rrf_k: The RRF constant of :meth:`search_aspects`.

    Example (needs a trained model, so not run as a doctest)::

        retriever = CoverRetriever(model="cover-model").index(passages)
        retriever.search_covered("Should cities ban cars?", ["Bans cut pollution."], k=10)
    """

    kind = "cover"

    def __init__(
        self,
        *,
        model: str | None = None,
        encoder: Encoder | None = None,
        faiss: bool | None = None,
        rrf_k: int = RRF_K,
    ) -> None:
        if model is None and encoder is None:
            raise ConfigError(
                "a cover index needs its model: train one with `covrag-lab train cover --out DIR` "
                "and pass model=DIR (covrag index --kind cover --model DIR)"
            )
        if model is not None and Path(model).is_dir():
            model = str(Path(model).resolve())  # the manifest names the folder wherever run
        super().__init__(model=model, encoder=encoder, faiss=faiss)
        self.rrf_k = rrf_k

    def __repr__(self) -> str:
        return f"CoverRetriever(model={self.model_name!r}, faiss={self.faiss!r})"

    def search_covered(self, question: str, covered: Sequence[str | Aspect], k: int) -> Ranking:
        """The ``k`` passages that best answer what ``question`` asks beyond ``covered``."""
        return self.search(cover_query(question, _texts(covered)), k)

    def aspect_queries(
        self, question: str, aspects: Sequence[str | Aspect], *, others_covered: bool = False
    ) -> tuple[str, ...]:
        """The queries of :meth:`search_aspects`: the question alone, then one per aspect: the
        aspect's text, or with ``others_covered`` the question with every *other* aspect given
        as covered (duplicates are searched once)."""
        texts = list(dict.fromkeys(_texts(aspects)))
        queries = [cover_query(question)]
        if not others_covered:
            queries += texts
        elif len(texts) > 1:
            queries += [
                cover_query(question, texts[:i] + texts[i + 1 :]) for i in range(len(texts))
            ]
        return tuple(dict.fromkeys(q for q in queries if q.strip()))

    def search_aspects(
        self,
        question: str,
        aspects: Sequence[str | Aspect],
        k: int,
        *,
        depth: int | None = None,
        others_covered: bool = False,
    ) -> Ranking:
        """A pool of up to ``k`` passages: :meth:`aspect_queries` searched (``depth`` passages
        each, default ``k``) and fused by reciprocal rank fusion.

        By default each aspect is searched by its own text, as in
        :class:`~covrag.retrieve.MultiQueryRetriever`: on ArgKP dev this found more of the
        aspects in the top 50 than searching the question with the other aspects covered
        (``others_covered=True``; docs/experiments/19-cover-retriever.md).
        """
        check_k(k)
        queries = self.aspect_queries(question, aspects, others_covered=others_covered)
        rankings = self.search_many(queries, depth or k)
        return reciprocal_rank_fusion(rankings, self.rrf_k, limit=k)

    @classmethod
    def load(
        cls,
        folder: str | os.PathLike[str],
        *,
        model: str | None = None,
        encoder: Encoder | None = None,
        faiss: bool | None = None,
    ) -> CoverRetriever:
        """Load a cover index; its queries are embedded by the model it was built with unless
        ``model`` or ``encoder`` names another (which must then be the same model)."""
        root = resolve_index(folder)  # one version for the model and the files
        if model is None and encoder is None:
            model = read_manifest(root, cls.kind).model
        return cast(CoverRetriever, super().load(root, model=model, encoder=encoder, faiss=faiss))
