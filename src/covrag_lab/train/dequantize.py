"""A trainable float32 copy of an int8 ONNX cross-encoder, to continue training from.

covrag ships its coverage cross-encoder as int8 ONNX only (:mod:`covrag.coverage.onnx_model`):
the float32 weights of the run that made it are not kept. To train a further stage (documents
after debates) without redoing the first two stages, :func:`dequantized_model` reads every
quantised weight back as ``(q - zero_point) * scale`` (per output channel for the linear layers,
per tensor for the embeddings), takes the float32 biases and layer norms as stored, and writes a
standard ``BertForSequenceClassification`` folder (one logit) that
:func:`covrag_lab.train.coverage.train_cross_encoder` accepts as ``base_model``. The copy differs
from the lost float32 model only by the rounding of int8 quantisation (half a step per weight),
which :func:`check_dequantized` measures against the ONNX model's own scores.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from covrag.errors import ConfigError
from covrag.tokens import default_model_path

#: The output of a quantised product names the linear layer it belongs to.
_LAYER = re.compile(r"^/(bert/encoder/layer\.\d+/[a-z_/]+?)/MatMul_output_0")
_TRANSPOSED = "_Transposed_quantized"


def _dequantized(inits: dict[str, np.ndarray[Any, Any]], stem: str) -> np.ndarray[Any, Any]:
    """``(q - zero_point) * scale`` of the initialisers ``stem_quantized`` etc. (uint8 storage,
    scale and zero point per tensor or per last axis)."""
    q = inits[stem + "_quantized"].astype(np.float32)
    zero = inits[stem + "_zero_point"].astype(np.float32)
    scale = inits[stem + "_scale"].astype(np.float32)
    values: np.ndarray[Any, Any] = ((q - zero) * scale).astype(np.float32)
    return values


def onnx_state_dict(onnx_path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """The Hugging Face BERT state dict (names and shapes of ``BertForSequenceClassification``)
    read back from a covrag int8 ONNX export."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(onnx_path)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    state: dict[str, np.ndarray[Any, Any]] = {
        name: value
        for name, value in inits.items()
        if (name.startswith("bert.") or name.startswith("classifier."))
        and "." in name
        and not name.endswith(("_quantized", "_scale", "_zero_point"))
    }
    for name in inits:
        if name.startswith("bert.embeddings.") and name.endswith(".weight_quantized"):
            stem = name[: -len("_quantized")]
            state[stem] = _dequantized(inits, stem)
        elif name.endswith(_TRANSPOSED):
            stem = name[: -len("_quantized")]
            state[name[: -len(_TRANSPOSED)]] = _dequantized(inits, stem).T.copy()
    for node in graph.node:
        if node.op_type != "MatMulIntegerToFloat" or node.input[1].endswith(_TRANSPOSED):
            continue
        match = _LAYER.match(node.output[0])
        if match is None:
            raise ConfigError(f"{onnx_path}: cannot tell which layer {node.output[0]!r} is")
        stem = node.input[1][: -len("_quantized")]
        layer = match.group(1).replace("/", ".")
        state[layer + ".weight"] = _dequantized(inits, stem).T.copy()
    return state


def dequantized_model(onnx_dir: Path, out: Path, *, encoder: Path | None = None) -> Path:
    """Write a float32 ``BertForSequenceClassification`` folder made from ``onnx_dir``'s int8
    model to ``out`` (with its tokenizer and a note in ``dequantized.json``); returns ``out``.

    ``encoder`` is the folder whose ``config.json`` describes the architecture (default: the
    packaged all-MiniLM-L6-v2, which the shipped model was trained from)."""
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification

    from covrag.coverage.onnx_model import ONNX_FILE

    source = onnx_dir / ONNX_FILE
    if not source.is_file():
        raise ConfigError(f"{onnx_dir}: no {ONNX_FILE} to read weights from")
    base = encoder if encoder is not None else default_model_path()
    config = AutoConfig.from_pretrained(str(base), num_labels=1)
    model = AutoModelForSequenceClassification.from_config(config)  # type: ignore[no-untyped-call]
    state = {k: torch.from_numpy(np.array(v)) for k, v in onnx_state_dict(source).items()}
    expected = model.state_dict()
    missing = sorted(k for k in expected if k not in state and "position_ids" not in k)
    if missing:
        raise ConfigError(f"{source}: no weights for {', '.join(missing[:5])}")
    for name, value in state.items():
        if name in expected and tuple(expected[name].shape) != tuple(value.shape):
            raise ConfigError(
                f"{source}: {name} has shape {tuple(value.shape)}, expected "
                f"{tuple(expected[name].shape)}"
            )
    model.load_state_dict({k: v for k, v in state.items() if k in expected}, strict=False)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        for folder in (onnx_dir, base):
            if (folder / name).is_file():
                shutil.copy(folder / name, out / name)
                break
    note = {"source": str(source), "how": "int8 weights read back as (q - zero_point) * scale"}
    (out / "dequantized.json").write_text(json.dumps(note, indent=1) + "\n", encoding="utf-8")
    return out


def check_dequantized(
    onnx_dir: Path, torch_dir: Path, pairs: Sequence[tuple[str, str]], max_length: int = 256
) -> dict[str, float]:
    """How close the float32 copy scores ``pairs`` to the ONNX model: the largest absolute
    difference of probabilities and their Pearson correlation."""
    from sentence_transformers import CrossEncoder

    from covrag.coverage.cross_encoder import PairScorer

    onnx_scores, _, _ = PairScorer(str(onnx_dir), 32, max_length, cache_size=100_000).score(
        list(pairs)
    )
    model = CrossEncoder(str(torch_dir), device="cpu", max_length=max_length)
    torch_scores = np.asarray(model.predict(list(pairs), activation_fn=_sigmoid()), dtype=float)
    diff = np.abs(np.asarray(onnx_scores, dtype=float) - torch_scores)
    corr = float(np.corrcoef(onnx_scores, torch_scores)[0, 1]) if len(pairs) > 1 else 1.0
    return {"pairs": float(len(pairs)), "max_abs_diff": float(diff.max()), "pearson": corr}


def _sigmoid() -> Any:
    import torch

    return torch.nn.Sigmoid()
