"""Graph rewrites of a dynamically quantised ONNX cross-encoder (``quantize_dynamic``'s output).

:func:`per_row_activations` gives each activation one quantisation scale per token row, so a pair's
score never depends on the other pairs of its batch or on their padding, and
:func:`unsigned_weights` stores the int8 weights as uint8, so the products are exact and the score
the same on every x86 CPU. :func:`rewrite_products` applies both to a model file, for
:func:`covrag_lab.train.onnx_export.export_onnx` and the same-point encoders' export.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from covrag.errors import ConfigError


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
    from onnx import helper

    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if opset < 15:
        raise ConfigError(f"per-row activation scales need ONNX opset 15 or later, not {opset}")
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    graph = model.graph
    _add_row_constants(graph)
    nodes, count = _rewritten_nodes(graph, opset)
    if any(n.op_type == "MatMulInteger" for n in nodes):
        raise ConfigError("not a model as quantize_dynamic writes it: an int8 product is left")
    _keep_needed(graph, nodes)
    return count


_K = "covrag_row"
"""The prefix of every tensor :func:`per_row_activations` adds."""


def _add_row_constants(graph: Any) -> None:
    """Add the constants the per-row quantisation and products read to ``graph``."""
    from onnx import numpy_helper

    k = _K
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


def _rewritten_nodes(graph: Any, opset: int) -> tuple[list[Any], int]:
    """``graph``'s nodes with each ``DynamicQuantizeLinear`` replaced by a per-row quantisation
    and each of its ``MatMulInteger`` products (with the cast and scaling after it) by a per-row
    scaled ``MatMulIntegerToFloat``; returns the nodes and how many products were rewritten."""
    consumers: dict[str, list[Any]] = {}
    producer: dict[str, Any] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
        for name in node.output:
            producer[name] = node
    row_scale: dict[str, str] = {}  # a quantised activation -> its per-row scales
    tensor_scale: dict[str, str] = {}  # ... -> the per-tensor scale it replaces
    done: set[int] = set()
    nodes: list[Any] = []
    count = 0
    for node in graph.node:
        if id(node) in done:
            continue
        if node.op_type == "DynamicQuantizeLinear":
            scale, quantising = _quantise_rows(node.input[0], node.output[0], opset)
            row_scale[node.output[0]] = scale
            tensor_scale[node.output[0]] = node.output[1]
            nodes += quantising
        elif node.op_type == "MatMulInteger" and node.input[0] in row_scale:
            product_nodes, replaced = _row_product(
                node, consumers, producer, row_scale, tensor_scale
            )
            nodes += product_nodes
            done |= replaced
            count += 1
        else:
            nodes.append(node)
    return nodes, count


def _only(consumers: dict[str, list[Any]], name: str, op_type: str) -> Any:
    """The one node that reads ``name``, which must be an ``op_type``."""
    found = consumers.get(name, [])
    if len(found) != 1 or found[0].op_type != op_type:
        raise ConfigError(
            f"not a model as quantize_dynamic writes it: {name} should feed one {op_type}"
        )
    return found[0]


def _row_product(
    node: Any,
    consumers: dict[str, list[Any]],
    producer: dict[str, Any],
    row_scale: dict[str, str],
    tensor_scale: dict[str, str],
) -> tuple[list[Any], set[int]]:
    """The nodes replacing the ``MatMulInteger`` ``node`` and the cast and scaling after it (a
    ``MatMulIntegerToFloat`` times the activation's row scales), and the ids of the cast and
    scaling nodes it replaces."""
    from onnx import helper

    k = _K
    cast = _only(consumers, node.output[0], "Cast")
    product = _only(consumers, cast.output[0], "Mul")
    a, b, _, b_zero_point = node.input
    result = product.output[0]
    scales = producer[next(i for i in product.input if i != cast.output[0])]
    if scales.op_type != "Mul" or tensor_scale[a] not in scales.input:
        raise ConfigError(
            f"not a model as quantize_dynamic writes it: {product.name or result} "
            "is not scaled by the activation's scale times the weight's"
        )
    weight_scale = next(i for i in scales.input if i != tensor_scale[a])
    nodes = [
        helper.make_node(
            "MatMulIntegerToFloat",
            [a, b, f"{k}/1", weight_scale, f"{k}/zero_point", b_zero_point],
            [f"{result}/{k}"],
            domain="com.microsoft",
        ),
        helper.make_node("Mul", [f"{result}/{k}", row_scale[a]], [result]),
    ]
    return nodes, {id(cast), id(product)}


def _quantise_rows(x: str, quantised: str, opset: int) -> tuple[str, list[Any]]:
    """The nodes quantising tensor ``x`` to uint8 ``quantised`` with one symmetric scale per row
    of ``x`` flattened to 2-D; returns the name of the scales (shaped to multiply the product's
    rows) and the nodes."""
    from onnx import TensorProto, helper

    k = _K
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


def _keep_needed(graph: Any, nodes: list[Any]) -> None:
    """Make ``nodes`` the nodes of ``graph``, less those (and the initializers) no output needs:
    what fed only the old per-tensor scales."""
    needed = {o.name for o in graph.output}
    kept: list[Any] = []
    for node in reversed(nodes):
        if any(name in needed for name in node.output):
            kept.append(node)
            needed.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    initializers = [i for i in graph.initializer if i.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(initializers)
    del graph.value_info[:]  # shapes inferred for the old per-tensor scales no longer hold
