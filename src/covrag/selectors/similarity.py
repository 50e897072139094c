"""The passage vectors a diversity selector compares: MiniLM embeddings or "same point" ones.

``embedding`` is cosine over ``candidates.embeddings`` (the pool's MiniLM embeddings, computed
when the pool is prepared). ``same-point`` is cosine over ``candidates.same_point``: the pool
embedded by a bi-encoder trained so that passages making the same point (sharing a key point or
perspective) lie close and passages of one topic making different points lie apart (the shipped
int8 ONNX model, :mod:`covrag.coverage.onnx_encoder`, or the folder ``similarity_model`` names),
computed in the estimate step (:func:`covrag.pipeline.with_inputs`), never here. Neither uses
gold labels or an LLM at selection time.
"""

from __future__ import annotations

from covrag.errors import ConfigError
from covrag.selectors.base import EMBEDDINGS, SAME_POINT, Candidates, Input
from covrag.types import FloatArray

VECTOR_SIMILARITIES = ("embedding", SAME_POINT)


def check_similarity(
    selector: str, similarity: str, model: str | None, choices: tuple[str, ...]
) -> None:
    """A clear error for an unknown similarity, or a model given to a similarity without one."""
    if similarity not in choices:
        raise ConfigError(f"{selector}: similarity must be one of {choices}, got {similarity!r}")
    if model is not None and similarity != SAME_POINT:
        raise ConfigError(f"{selector}: similarity_model applies to similarity='{SAME_POINT}'")


def vector_input(similarity: str, model: str | None) -> Input:
    """The input ``similarity`` compares: the pool's embeddings or its same-point vectors."""
    return Input(SAME_POINT, model) if similarity == SAME_POINT else Input(EMBEDDINGS)


def passage_vectors(candidates: Candidates, similarity: str, model: str | None) -> FloatArray:
    """(n, d) unit vectors of the pool's passages under ``similarity``."""
    if similarity == SAME_POINT:
        return candidates.point_vectors(model)
    return candidates.require_embeddings()[0]
