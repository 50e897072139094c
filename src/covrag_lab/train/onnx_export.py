"""Export a trained sequence-classification folder (a coverage cross-encoder) to the int8 ONNX
model covrag's :class:`~covrag.coverage.onnx_model.OnnxPairScorer` reads.

:func:`export_onnx` writes ``model.onnx`` (dynamic batch and length), quantises its weights to
int8 per channel (``model.int8.onnx``, about a quarter of the size) and copies the tokenizer and
training card. Activations are quantised at run time with one scale per token row
(:func:`~covrag_lab.train.onnx_rewrite.per_row_activations`), so a pair's score never depends on
the other pairs of its batch or on their padding, and the weights are stored as uint8
(:func:`~covrag_lab.train.onnx_rewrite.unsigned_weights`), so the products are exact and the
score the same on every x86 CPU. Moved from :mod:`covrag.coverage.onnx_model`: exporting is part
of training, and the product only reads the result.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from covrag.coverage.onnx_model import ONNX_FILE
from covrag_lab.train.onnx_rewrite import rewrite_products

__all__ = ["INPUT_NAMES", "export_onnx", "model_inputs"]


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
