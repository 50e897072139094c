"""What selectors read that needs a model, computed in the estimate step, never while selecting.

A selector declares what it reads (:attr:`~covrag.selectors.base.Selector.reads`). Preparing the
pool computes the embeddings and sentence pieces (:func:`~covrag.pipeline.prepare.config_for`),
and estimating computes the coverage matrix; :func:`with_inputs` adds the rest, the pool's
same-point vectors, so that selection only computes over arrays. Everything here runs under a
request's deadline (:mod:`covrag.deadline`) and, in the server, under the model lock.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

import numpy as np

from covrag.selectors.base import SAME_POINT, Candidates, Selector
from covrag.types import FloatArray


def with_inputs(candidates: Candidates, selectors: Iterable[Selector]) -> Candidates:
    """The candidates with the same-point vectors ``selectors`` read and they lack (each
    bi-encoder loaded once per process; an empty pool embeds nothing)."""
    models = dict.fromkeys(
        i.model for s in selectors for i in s.reads_for(candidates) if i.kind == SAME_POINT
    )
    missing = [m for m in models if m not in candidates.same_point]
    if not missing:
        return candidates
    texts = [p.text for p in candidates.passages]
    vectors = dict(candidates.same_point)
    for model in missing:
        vectors[model] = _point_vectors(texts, model)
    return dataclasses.replace(candidates, same_point=vectors)


def _point_vectors(texts: list[str], model: str | None) -> FloatArray:
    if not texts:
        return np.zeros((0, 0))
    from covrag.coverage.onnx_encoder import onnx_encoder

    return onnx_encoder(model).encode(texts)


def question_similarity(candidates: Candidates, question: str | None = None) -> FloatArray:
    """Each candidate's cosine similarity to ``question`` (default: the candidates' query), for
    the topic gate (:func:`covrag.selectors.floor.filter_pool`).

    Uses the candidates' embeddings when they were computed for that query
    (``PrepareConfig(embeddings=True)``), and the packaged MiniLM otherwise.
    """
    from covrag.embed import default_encoder

    question = candidates.query if question is None else question
    if not candidates.passages:
        return np.zeros(0)
    if candidates.embeddings is not None and candidates.query_embedding is not None:
        if question == candidates.query:
            return np.asarray(candidates.embeddings @ candidates.query_embedding, np.float64)
    encoder = default_encoder()
    passages = encoder.encode([p.text for p in candidates.passages])
    return np.asarray(passages @ encoder.encode([question])[0], dtype=np.float64)
