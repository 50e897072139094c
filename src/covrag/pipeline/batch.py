"""Batch commands over many passages, on any :class:`~.executor.Executor`.

- :func:`build_index`: a retrieval index over a corpus, its embeddings computed on the executor.

With the default executor everything runs here; with
:class:`~covrag.pipeline.distributed.RayExecutor` the model step of each item runs on an actor
pool and the rest as Ray tasks. The results are the same either way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from covrag.embed import Encoder, default_encoder
from covrag.pipeline.executor import Executor, identity
from covrag.retrieve.base import IndexRetriever
from covrag.retrieve.dense import DenseRetriever, embedding_chunks, gather_embeddings
from covrag.retrieve.fusion import HybridRetriever
from covrag.retrieve.kinds import make_retriever
from covrag.types import FloatArray, Passage


def _encoder_step(model: str | None) -> Callable[[Sequence[str]], FloatArray]:
    """Loads the encoder once (per process or worker) and returns its ``encode``."""
    encoder = default_encoder() if model is None else Encoder(model)
    return encoder.encode


def build_index(
    passages: Sequence[Passage], kind: str, *, executor: Executor | None = None
) -> IndexRetriever:
    """A new index of ``kind`` over ``passages``; the dense embeddings (of ``dense`` and
    ``hybrid``) are computed on ``executor``, in the same chunks as
    :meth:`DenseRetriever.index <covrag.retrieve.DenseRetriever.index>`, so the index is the
    same. BM25 is built here: it is one pass over the corpus statistics."""
    retriever = make_retriever(kind)
    if executor is None:
        return retriever.index(passages)
    parts = retriever.retrievers if isinstance(retriever, HybridRetriever) else (retriever,)
    for part in parts:
        if isinstance(part, DenseRetriever):
            texts = [p.text for p in passages]
            chunks = embedding_chunks(texts)
            labels = [f"{i + 1} of {len(chunks)}" for i in range(len(chunks))]
            load = functools.partial(_encoder_step, part.model)
            vectors = executor.map(chunks, labels, load, identity, what="embedding chunk")
            part.index_embedded(passages, gather_embeddings(texts, chunks, vectors))
        elif isinstance(part, IndexRetriever):
            part.index(passages)
    return retriever
