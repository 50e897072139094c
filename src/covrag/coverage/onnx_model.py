"""The shipped coverage cross-encoder at inference: int8 ONNX Runtime, no torch needed.

``export_onnx`` turns a trained cross-encoder folder into ``model.onnx`` (dynamic batch and
length), quantises its weights to int8 per channel (``model.int8.onnx``, about a quarter of the
size) and copies the tokenizer and training card. Activations are quantised at run time with one
scale per token row (:func:`per_row_activations`), so a pair's score never depends on the other
pairs of its batch or on their padding, and the weights are stored as uint8
(:func:`unsigned_weights`), so the products are exact and the score the same on every x86 CPU.
:class:`OnnxPairScorer` scores pairs with it: the Rust tokenizer encodes, pairs are sorted by
length so each batch carries little padding, and the logits go through a sigmoid.
``benchmarks/bench_cross_encoder.py`` measures speed and quality. The graph rewrites live in
:mod:`covrag.coverage.onnx_rewrite`.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from covrag.coverage.onnx_rewrite import per_row_activations as per_row_activations  # re-exported
from covrag.coverage.onnx_rewrite import rewrite_products as rewrite_products  # re-exported
from covrag.coverage.onnx_rewrite import unsigned_weights as unsigned_weights  # re-exported
from covrag.deadline import check_deadline
from covrag.errors import ConfigError, MissingExtraError
from covrag.types import FloatArray

logger = logging.getLogger(__name__)

ONNX_FILE = "model.int8.onnx"


def _ort() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:
        raise MissingExtraError("onnxruntime", "onnx") from exc
    return onnxruntime


def export_onnx(
    model_dir: Path,
    out: Path,
    *,
    quantize: bool = True,
    calibration: Sequence[tuple[str, str]] | None = None,
    per_row: bool = True,
    opset: int = 17,
) -> Path:
    """Export a sequence-classification folder to ONNX (and int8); returns the model file.

    Weights are int8 per output channel. Activation scales are computed at run time, one per
    token row (``per_row``, the default), or one per batch tensor (``per_row=False``, ONNX
    Runtime's dynamic quantisation as it comes: a pair's score then depends on what else is in
    its batch, by up to 0.32 on the shipped model's ArgKP dev pairs). With ``calibration``
    pairs the activations are quantised statically instead, with scales fixed from those pairs.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(model_dir)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    out.mkdir(parents=True, exist_ok=True)
    sample = tokenizer(["a passage"], ["an aspect"], return_tensors="pt")
    # BERT-like models read token types; MPNet, RoBERTa-style and others have no such input
    names = [n for n in model_inputs(model) if n in sample]
    full = out / "model.onnx"
    axes = {name: {0: "batch", 1: "length"} for name in names}
    axes["logits"] = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(
            _logits_module(model, names),
            tuple(sample[n] for n in names),
            str(full),
            input_names=names,
            output_names=["logits"],
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,
        )
    result = full
    if quantize:
        result = out / ONNX_FILE
        if calibration:
            _quantize_static(full, result, tokenizer, calibration, names)
        else:
            from onnxruntime.quantization import QuantType, quantize_dynamic

            quantize_dynamic(str(full), str(result), weight_type=QuantType.QInt8, per_channel=True)
            rewrite_products(result, per_row=per_row)
        full.unlink()
    tokenizer.backend_tokenizer.save(str(out / "tokenizer.json"))
    for name in ("training_card.json",):
        if (model_dir / name).exists() and (model_dir / name) != (out / name):
            shutil.copy(model_dir / name, out / name)
    return result


INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")


def model_inputs(model: Any) -> list[str]:
    """The names of :data:`INPUT_NAMES` that ``model``'s forward takes, in that order."""
    import inspect

    taken = inspect.signature(model.forward).parameters
    return [name for name in INPUT_NAMES if name in taken]


def _logits_module(model: Any, names: Sequence[str]) -> Any:
    """``model`` as a module that takes ``names`` positionally and returns the logits alone,
    so that each input is passed by name whatever the order of the model's own arguments."""
    import torch

    class Logits(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, *inputs: Any) -> Any:
            return self.model(**dict(zip(names, inputs, strict=True))).logits

    return Logits()


def _quantize_static(
    full: Path,
    out: Path,
    tokenizer: Any,
    calibration: Sequence[tuple[str, str]],
    names: Sequence[str],
) -> None:
    """Static int8 (QDQ, per-channel weights) of the matrix products, scales from min/max of
    the calibration pairs' activations; layer norms and softmax stay in float."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )

    class Pairs(CalibrationDataReader):  # type: ignore[misc]
        def __init__(self) -> None:
            self._items = iter(calibration)

        def get_next(self) -> dict[str, np.ndarray[Any, Any]] | None:
            pair = next(self._items, None)
            if pair is None:
                return None
            encoded = tokenizer([pair[0]], [pair[1]], truncation="only_first", max_length=256)
            return {n: np.asarray(encoded[n], dtype=np.int64) for n in names}

    quantize_static(
        str(full),
        str(out),
        Pairs(),
        quant_format=QuantFormat.QDQ,
        op_types_to_quantize=["MatMul", "Gemm"],
        per_channel=True,
        weight_type=QuantType.QInt8,
        activation_type=QuantType.QInt8,
        calibrate_method=CalibrationMethod.MinMax,
        extra_options={"ActivationSymmetric": True},
    )


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
