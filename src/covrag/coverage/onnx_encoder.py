"""Passage embeddings from an int8 ONNX bi-encoder, such as the shipped "same point" model.

The model folder holds ``encoder.int8.onnx`` (a sentence encoder whose graph ends in mean pooling
and L2 normalisation, exported by :func:`covrag_lab.train.same_point.export_encoder_onnx`),
``tokenizer.json`` and ``training_card.json``. Its weights are uint8 and its activation scales
one per token row, as the coverage cross-encoder's (:mod:`covrag.coverage.onnx_model`): a
passage's embedding does not depend on the others in its batch. No torch is needed.

Two same-point models ship, each fine-tuned so that passages making the same point (ArgKP key
points, Perspectrum perspectives) lie close and passages of one topic making different points
lie apart; selectors use their cosines as their similarity
(``facility-location(similarity=same-point)``): ``same-point-mpnet`` (all-mpnet-base-v2, the
default: the better one under leave-topics-out CV) and ``same-point-minilm`` (all-MiniLM-L6-v2,
about five times faster). ``similarity_model`` takes either name or an export's folder.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from covrag.coverage.onnx_model import _ort
from covrag.deadline import check_deadline
from covrag.errors import ConfigError
from covrag.types import FloatArray

ENCODER_FILE = "encoder.int8.onnx"
MODELS = Path(__file__).resolve().parent.parent / "models"
#: The shipped same-point models by name (``similarity_model='same-point-minilm'``).
SAME_POINT_MODELS = {name: MODELS / name for name in ("same-point-mpnet", "same-point-minilm")}
DEFAULT_SAME_POINT = "same-point-mpnet"


class OnnxEncoder:
    """Unit embeddings of texts from an ONNX bi-encoder folder, cached per text.

    Args:
        folder: Holds ``encoder.int8.onnx`` (or another ``*.onnx`` with the same inputs and an
            ``embedding`` output) and ``tokenizer.json``.
        max_length: Token limit of a text (longer texts are cut at the end).
        batch_size: Texts per run.
        threads: ONNX Runtime intra-op threads.
    """

    def __init__(
        self, folder: Path, *, max_length: int = 128, batch_size: int = 64, threads: int = 2
    ) -> None:
        from tokenizers import Tokenizer

        ort = _ort()
        files = sorted(folder.glob("*.onnx"))
        if not files or not (folder / "tokenizer.json").exists():
            raise ConfigError(f"{folder} holds no ONNX bi-encoder (*.onnx + tokenizer.json)")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(files[0]), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length)
        self.folder = folder
        self.batch_size = batch_size
        self._cache: OrderedDict[str, FloatArray] = OrderedDict()
        self._cache_size = 100_000

    def encode(self, texts: Sequence[str]) -> FloatArray:
        """(len(texts), d) float64 unit vectors; texts seen before are not re-encoded."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if todo:
            for text, vector in zip(todo, self._run(todo), strict=True):
                self._cache[text] = vector
            while len(self._cache) > self._cache_size:
                self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, 0))
        return np.stack([self._cache[t] for t in texts])

    def _run(self, texts: Sequence[str]) -> FloatArray:
        encoded = self._tokenizer.encode_batch(list(texts))
        order = np.argsort([len(e.ids) for e in encoded], kind="stable")
        result: FloatArray | None = None
        for start in range(0, len(order), self.batch_size):
            check_deadline()  # a request's deadline (covrag.deadline) between batches
            batch = order[start : start + self.batch_size]
            width = max(len(encoded[i].ids) for i in batch)
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(batch):
                n = len(encoded[i].ids)
                ids[row, :n] = encoded[i].ids
                mask[row, :n] = 1
            feed = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:  # BERT-like; MPNet has no token types
                feed["token_type_ids"] = np.zeros_like(ids)
            (vectors,) = self._session.run(["embedding"], feed)
            if result is None:
                result = np.zeros((len(texts), vectors.shape[1]))
            result[batch] = vectors
        assert result is not None
        norms = np.linalg.norm(result, axis=1, keepdims=True)
        unit: FloatArray = result / np.where(norms > 0, norms, 1.0)
        return unit


def onnx_encoder(folder: str | None = None) -> OnnxEncoder:
    """The encoder of ``folder``: a shipped model's name, an export's folder, or None for the
    default shipped model; each folder loaded once per process."""
    name = DEFAULT_SAME_POINT if folder is None else folder
    if name in SAME_POINT_MODELS:
        path = SAME_POINT_MODELS[name]
        if not path.is_dir():
            raise ConfigError(
                f"the same-point model {name!r} does not ship with this version of covrag: give "
                "similarity_model=FOLDER (an export of benchmarks/cv_same_point.py train)"
            )
        return _loaded(path)
    path = Path(name)
    if not path.is_dir():
        raise ConfigError(f"same-point model folder {path} does not exist")
    return _loaded(path.resolve())


@functools.cache
def _loaded(path: Path) -> OnnxEncoder:
    return OnnxEncoder(path)
