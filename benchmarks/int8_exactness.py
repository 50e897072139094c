"""Does ONNX Runtime's int8 product compute exactly on this CPU? (the shipped estimator's scores)

    .venv/bin/python benchmarks/int8_exactness.py [--model DIR]

The shipped coverage model multiplies uint8 activations (one scale per token row, zero point
128) by int8 weights (one scale per output channel) with ``MatMulIntegerToFloat``. On x86 CPUs
without VNNI, ONNX Runtime's u8 x s8 kernel adds two adjacent byte products in a signed 16-bit
lane, which saturates once 2 x 255 x |w| passes 32,767, that is for weights beyond +-64. VNNI
CPUs add in 32 bits and are exact. So the same model can score the same pair differently on two
machines.

Prints the CPU's VNNI flags; for one product of 384 inputs and 64 outputs, the largest
difference between ONNX Runtime and the exact integer product with weights drawn in +-63, +-64,
+-65 and +-127 (stored as int8, and +-127 once more stored as uint8 as covrag now writes them,
``unsigned_weights``) and activations drawn at random, all 255 and alternating 255/1; and the
share of the model's int8 weights beyond +-64.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((x for x in text.splitlines() if x.startswith("flags")), "")
    return set(line.split(":", 1)[-1].split())


def product_session(weights: np.ndarray[Any, Any], unsigned: bool = False) -> Any:
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from covrag_lab.train.onnx_rewrite import unsigned_weights

    k, n = weights.shape
    inits = [
        numpy_helper.from_array(weights, "b"),
        numpy_helper.from_array(np.array(1.0, np.float32), "a_scale"),
        numpy_helper.from_array(np.ones(n, np.float32), "b_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "a_zero"),
        numpy_helper.from_array(np.zeros(n, np.int8), "b_zero"),
    ]
    node = helper.make_node(
        "MatMulIntegerToFloat",
        ["a", "b", "a_scale", "b_scale", "a_zero", "b_zero"],
        ["y"],
        domain="com.microsoft",
    )
    graph = helper.make_graph(
        [node],
        "product",
        [helper.make_tensor_value_info("a", TensorProto.UINT8, [None, k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, n])],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    if unsigned:
        unsigned_weights(model)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def weight_share_beyond(model_file: Path, limit: int = 64) -> tuple[int, int, int]:
    """Of the weights of the model's integer products: how many are int8 beyond +-``limit``, how
    many are int8, and how many are stored as uint8 (exact on every CPU)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(model_file))
    initializers = {i.name: i for i in model.graph.initializer}
    products = ("MatMulInteger", "MatMulIntegerToFloat")
    weights = {n.input[1] for n in model.graph.node if n.op_type in products}
    beyond = total = unsigned = 0
    for init in (initializers[name] for name in weights if name in initializers):
        if init.data_type == onnx.TensorProto.INT8:
            values = numpy_helper.to_array(init)
            beyond += int((np.abs(values.astype(np.int16)) > limit).sum())
            total += values.size
        elif init.data_type == onnx.TensorProto.UINT8:
            unsigned += int(np.prod(init.dims))
    return beyond, total, unsigned


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=None, help="ONNX model folder")
    args = parser.parse_args()
    import onnxruntime as ort

    flags = cpu_flags()
    vnni = sorted(f for f in flags if "vnni" in f or f.startswith("amx"))
    print(f"ONNX Runtime {ort.__version__}; CPU VNNI/AMX flags: {', '.join(vnni) or 'none'}")
    rng = np.random.default_rng(0)
    k, n = 384, 64
    inputs = {
        "random": rng.integers(1, 256, size=(8, k)),
        "all 255": np.full((8, k), 255),
        "255/1 alternating": np.tile([255, 255, 1, 1], (8, k // 4)),
    }
    print("| weights in | " + " | ".join(inputs) + " |")
    print("|---|" + "---|" * len(inputs))
    for limit, unsigned in ((63, False), (64, False), (65, False), (127, False), (127, True)):
        weights = rng.integers(-limit, limit + 1, size=(k, n)).astype(np.int8)
        weights[:, 0] = limit
        session = product_session(weights, unsigned)
        cells = []
        for a in inputs.values():
            a8 = a.astype(np.uint8)
            exact = (a8.astype(np.int64) - 128) @ weights.astype(np.int64)
            (got,) = session.run(None, {"a": a8})
            cells.append(f"{float(np.abs(got - exact).max()):.0f}")
        stored = "uint8 (w + 128)" if unsigned else "int8"
        print(f"| +-{limit}, stored as {stored} | " + " | ".join(cells) + " |")
    if args.model is None:
        from covrag.coverage.cross_encoder import default_model_path

        args.model = Path(default_model_path())
    model_file = sorted(args.model.glob("*.onnx"))[0]
    beyond, total, unsigned = weight_share_beyond(model_file)
    share = beyond / max(total, 1)
    print(f"{model_file}: {beyond:,} of {total:,} int8 weights ({share:.1%}) beyond +-64; ", end="")
    print(f"{unsigned:,} weights stored as uint8")


if __name__ == "__main__":
    main()
