"""The shipped coverage cross-encoder at inference: int8 ONNX Runtime, no torch needed.

The model is ``model.int8.onnx`` (:data:`ONNX_FILE`) beside its ``tokenizer.json``, written by
``covrag-lab train coverage --onnx-out`` (:mod:`covrag_lab.train.onnx_export`): int8 weights per
channel stored as uint8 and activations quantised at run time with one scale per token row, so a
pair's score never depends on the other pairs of its batch and is the same on every x86 CPU.
:class:`OnnxPairScorer` scores pairs with it: the Rust tokenizer encodes, pairs are sorted by
length so each batch carries little padding, and the logits go through a sigmoid.
``benchmarks/bench_cross_encoder.py`` measures speed and quality.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from covrag.deadline import check_deadline
from covrag.errors import ConfigError, MissingExtraError
from covrag.types import FloatArray

logger = logging.getLogger(__name__)

ONNX_FILE = "model.int8.onnx"


def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise MissingExtraError("onnxruntime", "embed") from exc
    return onnxruntime


class OnnxPairScorer:
    """Scores (passage, aspect) pairs with an ONNX cross-encoder and a ``tokenizer.json``."""

    def __init__(
        self, folder: Path, *, max_length: int = 256, batch_size: int = 64, threads: int = 2
    ) -> None:
        from tokenizers import Tokenizer

        ort = _ort()
        files = sorted(folder.glob("*.onnx"))
        if not files or not (folder / "tokenizer.json").exists():
            raise ConfigError(
                f"{folder} holds no ONNX cross-encoder (model*.onnx + tokenizer.json)"
            )
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self._session = ort.InferenceSession(
            str(files[0]), options, providers=["CPUExecutionProvider"]
        )
        self._inputs = {i.name for i in self._session.get_inputs()}
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()
        self._tokenizer.enable_truncation(max_length, strategy="only_first")
        # A pair whose second text alone is past max_length cannot be cut from the first text
        # (a long answer sentence read by the support judge): it is cut from the longer one.
        self._either = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._either.no_padding()
        self._either.enable_truncation(max_length, strategy="longest_first")
        self._plain = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._plain.no_padding()
        self._plain.no_truncation()
        self.max_length = max_length
        self.batch_size = batch_size

    def lengths(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray[Any, np.dtype[np.int64]]:
        encoded = self._plain.encode_batch([list(p) for p in pairs])
        return np.array([len(e.ids) for e in encoded], dtype=np.int64)

    def _encode(self, pairs: Sequence[tuple[str, str]]) -> list[Any]:
        """The pairs' encodings, the first text cut to fit; a pair whose second text alone is
        too long is cut from its longer text instead."""
        try:
            return list(self._tokenizer.encode_batch([list(p) for p in pairs]))
        except Exception:  # the tokenizers library raises a bare Exception for it
            encoded = []
            for pair in pairs:
                try:
                    encoded.append(self._tokenizer.encode(*pair))
                except Exception:
                    encoded.append(self._either.encode(*pair))
            return encoded

    def predict(self, pairs: Sequence[tuple[str, str]]) -> FloatArray:
        """Probabilities in the order given (pairs are batched by length internally).

        Raises:
            DeadlineExceeded: Under a :func:`~covrag.deadline.deadline_scope` whose deadline
                passed; checked before each batch.
        """
        if not pairs:
            return np.zeros(0)
        encoded = self._encode(pairs)
        order = np.argsort([len(e.ids) for e in encoded], kind="stable")
        scores = np.empty(len(pairs))
        for start in range(0, len(order), self.batch_size):
            check_deadline()  # a request past its deadline stops here (covrag.deadline)
            batch = order[start : start + self.batch_size]
            width = max(len(encoded[i].ids) for i in batch)
            feed = {
                "input_ids": np.zeros((len(batch), width), dtype=np.int64),
                "attention_mask": np.zeros((len(batch), width), dtype=np.int64),
                "token_type_ids": np.zeros((len(batch), width), dtype=np.int64),
            }
            for row, i in enumerate(batch):
                e = encoded[i]
                n = len(e.ids)
                feed["input_ids"][row, :n] = e.ids
                feed["attention_mask"][row, :n] = 1
                feed["token_type_ids"][row, :n] = e.type_ids
            (logits,) = self._session.run(
                ["logits"], {k: v for k, v in feed.items() if k in self._inputs}
            )
            scores[batch] = np.asarray(logits, dtype=np.float64).reshape(-1)
        return 1.0 / (1.0 + np.exp(-scores))
