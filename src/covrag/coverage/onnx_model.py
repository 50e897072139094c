"""The shipped coverage cross-encoder at inference: int8 ONNX Runtime, no torch needed.

``export_onnx`` turns a trained cross-encoder folder into ``model.onnx`` (dynamic batch and
length), quantises its weights to int8 per channel (``model.int8.onnx``, about a quarter of the
size) and copies the tokenizer and training card. Activations are quantised at run time with one
scale per token row (:func:`per_row_activations`), so a pair's score never depends on the other
pairs of its batch or on their padding, and the weights are stored as uint8
(:func:`unsigned_weights`), so the products are exact and the score the same on every x86 CPU.
:class:`OnnxPairScorer` scores pairs with it: the Rust tokenizer encodes, pairs are sorted by
length so each batch carries little padding, and the logits go through a sigmoid.
``benchmarks/bench_cross_encoder.py`` measures speed and quality.
"""

from __future__ import annotations

import logging
import shutil
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


def rewrite_products(
    source: Path, target: Path | None = None, *, per_row: bool = True, unsigned: bool = True
) -> int:
    """Rewrite the int8 products of a dynamically quantised ONNX model (``quantize_dynamic``):
    per-row activation scales (:func:`per_row_activations`) and uint8 weights
    (:func:`unsigned_weights`); ``target`` defaults to ``source``. Returns how many matrix
    products were rewritten."""
    import onnx

    model = onnx.load(str(source))
    count = per_row_activations(model) if per_row else 0
    if unsigned:
        count = max(count, unsigned_weights(model))
    onnx.checker.check_model(model)
    target = source if target is None else target
    partial = target.with_name(target.name + ".partial")
    try:
        onnx.save(model, str(partial))
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return count


def unsigned_weights(model: Any) -> int:
    """Store the int8 weights of ``model``'s integer products as uint8 (w + 128, zero point + 128):
    the same numbers, computed exactly on every x86 CPU; returns how many products changed.

    ONNX Runtime multiplies uint8 activations by int8 weights, on x86 CPUs without VNNI, by adding
    two adjacent byte products in a signed 16-bit lane, which saturates once 2 x 255 x |w| passes
    32,767 (weights beyond +-64; ``benchmarks/int8_exactness.py``), so the same model scored the
    same pair differently on two machines. Its uint8 x uint8 product widens to 16 bits first and
    is exact everywhere (a pair about 6% slower on such a CPU;
    docs/experiments/20-question-aware-coverage.md).
    """
    from onnx import TensorProto, numpy_helper

    initializers = {i.name: i for i in model.graph.initializer}
    done: set[str] = set()
    count = 0
    for node in model.graph.node:
        if node.op_type not in ("MatMulInteger", "MatMulIntegerToFloat"):
            continue
        weight = node.input[1]
        point = node.input[3] if node.op_type == "MatMulInteger" else node.input[5]
        if weight not in initializers or point not in initializers:
            continue
        if initializers[weight].data_type == TensorProto.UINT8:
            continue
        for name in (weight, point):
            if name in done:
                continue
            init = initializers[name]
            if init.data_type != TensorProto.INT8:
                raise ConfigError(f"{name}: expected int8 weights or zero points")
            values = numpy_helper.to_array(init).astype(np.int16) + 128
            init.CopyFrom(numpy_helper.from_array(values.astype(np.uint8), name))
            done.add(name)
        count += 1
    return count


def per_row_activations(model: Any) -> int:
    """Give every int8 matrix product of ``model`` (an ``onnx.ModelProto`` written by
    ``quantize_dynamic``) one activation scale per row instead of one per tensor; returns how
    many products were rewritten.

    ``quantize_dynamic`` quantises each activation tensor x with ``DynamicQuantizeLinear``: one
    scale and zero point from the min and max of the whole tensor, which for a batch is every
    pair in it, padding included. Here each row r of x (one token of one pair) gets its own
    symmetric scale s_r = max|x_r| / 127 and is stored as round(x_r / s_r) + 128 in uint8
    (``QuantizeLinear`` along the rows of x flattened to 2-D). The product runs as ONNX Runtime's
    ``MatMulIntegerToFloat`` with an activation scale of 1 and the weights' per-channel scales,
    and its result is multiplied by s_r. A row's result then depends on that row alone, so a
    pair's score does not depend on its batch or its padding, and rows with small activations
    keep their precision.
    """
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if opset < 15:
        raise ConfigError(f"per-row activation scales need ONNX opset 15 or later, not {opset}")
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    k = "covrag_row"
    constants: dict[str, np.ndarray[Any, Any]] = {
        f"{k}/127": np.array(127.0, np.float32),
        f"{k}/tiny": np.array(1e-12, np.float32),
        f"{k}/0": np.array(0.0, np.float32),
        f"{k}/128": np.array(128.0, np.float32),
        f"{k}/1": np.array(1.0, np.float32),
        f"{k}/zero_point": np.array(128, np.uint8),
        f"{k}/rows": np.array([-1], np.int64),
        f"{k}/one_column": np.array([1], np.int64),
    }
    graph.initializer.extend(numpy_helper.from_array(v, n) for n, v in constants.items())
    consumers: dict[str, list[Any]] = {}
    producer: dict[str, Any] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
        for name in node.output:
            producer[name] = node

    def only(name: str, op_type: str) -> Any:
        found = consumers.get(name, [])
        if len(found) != 1 or found[0].op_type != op_type:
            raise ConfigError(
                f"not a model as quantize_dynamic writes it: {name} should feed one {op_type}"
            )
        return found[0]

    def quantise(x: str, quantised: str) -> tuple[str, list[Any]]:
        n = f"{k}/{x}"

        def reduce(op: str, out: str) -> Any:  # over the last axis, kept
            if opset >= 18:
                return helper.make_node(op, [f"{n}/x", f"{k}/rows"], [out], keepdims=1)
            return helper.make_node(op, [f"{n}/x"], [out], axes=[-1], keepdims=1)

        return f"{n}/scale", [
            helper.make_node("Shape", [x], [f"{n}/shape"]),
            helper.make_node("Shape", [x], [f"{n}/width"], start=-1),
            helper.make_node("Shape", [x], [f"{n}/leading"], end=-1),
            helper.make_node("Concat", [f"{k}/rows", f"{n}/width"], [f"{n}/flat"], axis=0),
            helper.make_node("Reshape", [x, f"{n}/flat"], [f"{n}/x"]),
            reduce("ReduceMax", f"{n}/max"),  # max |x| = max(max x, -min x), with no |x| tensor
            reduce("ReduceMin", f"{n}/min"),
            helper.make_node("Neg", [f"{n}/min"], [f"{n}/-min"]),
            helper.make_node("Max", [f"{n}/max", f"{n}/-min", f"{k}/tiny"], [f"{n}/max_"]),
            helper.make_node("Div", [f"{n}/max_", f"{k}/127"], [f"{n}/column"]),
            helper.make_node("Reshape", [f"{n}/column", f"{k}/rows"], [f"{n}/vector"]),
            helper.make_node("Mul", [f"{n}/vector", f"{k}/0"], [f"{n}/zeros"]),
            helper.make_node("Add", [f"{n}/zeros", f"{k}/128"], [f"{n}/points_"]),
            helper.make_node("Cast", [f"{n}/points_"], [f"{n}/points"], to=TensorProto.UINT8),
            helper.make_node(
                "QuantizeLinear", [f"{n}/x", f"{n}/vector", f"{n}/points"], [f"{n}/q"], axis=0
            ),
            helper.make_node("Reshape", [f"{n}/q", f"{n}/shape"], [quantised]),
            helper.make_node(
                "Concat", [f"{n}/leading", f"{k}/one_column"], [f"{n}/scale_shape"], axis=0
            ),
            helper.make_node("Reshape", [f"{n}/column", f"{n}/scale_shape"], [f"{n}/scale"]),
        ]

    row_scale: dict[str, str] = {}  # a quantised activation -> its per-row scales
    tensor_scale: dict[str, str] = {}  # ... -> the per-tensor scale it replaces
    done: set[int] = set()
    nodes: list[Any] = []
    count = 0
    for node in graph.node:
        if id(node) in done:
            continue
        if node.op_type == "DynamicQuantizeLinear":
            scale, quantising = quantise(node.input[0], node.output[0])
            row_scale[node.output[0]] = scale
            tensor_scale[node.output[0]] = node.output[1]
            nodes += quantising
        elif node.op_type == "MatMulInteger" and node.input[0] in row_scale:
            cast = only(node.output[0], "Cast")
            product = only(cast.output[0], "Mul")
            a, b, _, b_zero_point = node.input
            result = product.output[0]
            scales = producer[next(i for i in product.input if i != cast.output[0])]
            if scales.op_type != "Mul" or tensor_scale[a] not in scales.input:
                raise ConfigError(
                    f"not a model as quantize_dynamic writes it: {product.name or result} "
                    "is not scaled by the activation's scale times the weight's"
                )
            weight_scale = next(i for i in scales.input if i != tensor_scale[a])
            nodes += [
                helper.make_node(
                    "MatMulIntegerToFloat",
                    [a, b, f"{k}/1", weight_scale, f"{k}/zero_point", b_zero_point],
                    [f"{result}/{k}"],
                    domain="com.microsoft",
                ),
                helper.make_node("Mul", [f"{result}/{k}", row_scale[a]], [result]),
            ]
            done |= {id(cast), id(product)}
            count += 1
        else:
            nodes.append(node)
    if any(n.op_type == "MatMulInteger" for n in nodes):
        raise ConfigError("not a model as quantize_dynamic writes it: an int8 product is left")
    needed = {o.name for o in graph.output}
    kept: list[Any] = []
    for node in reversed(nodes):  # drop what fed only the old per-tensor scales
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    initializers = [i for i in graph.initializer if i.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    del graph.value_info[:]  # shapes inferred for the old per-tensor scales no longer hold
    return count


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
        self._plain = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._plain.no_padding()
        self._plain.no_truncation()
        self.max_length = max_length
        self.batch_size = batch_size

    def lengths(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray[Any, np.dtype[np.int64]]:
        encoded = self._plain.encode_batch([list(p) for p in pairs])
        return np.array([len(e.ids) for e in encoded], dtype=np.int64)

    def predict(self, pairs: Sequence[tuple[str, str]]) -> FloatArray:
        """Probabilities in the order given (pairs are batched by length internally).

        Raises:
            DeadlineExceeded: Under a :func:`~covrag.deadline.deadline_scope` whose deadline
                passed; checked before each batch.
        """
        if not pairs:
            return np.zeros(0)
        encoded = self._tokenizer.encode_batch([list(p) for p in pairs])
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
