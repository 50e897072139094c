"""Fine-tune a "same point" bi-encoder: do these two passages make the same point?

The packaged all-MiniLM-L6-v2 is trained contrastively within topics: each batch holds passages
of one topic, two passages are a positive pair when they share a gold aspect (an ArgKP key point,
a Perspectrum perspective cluster, the perspective an evidence paragraph supports) and a negative
pair otherwise; passages that match no aspect are negatives of every other passage and anchors of
none. The loss is supervised contrastive (Khosla et al., NeurIPS 2020) over the batch's cosine
similarities with a temperature, so every pair of the batch counts, negatives from the same topic
(hard ones: same subject, another point). The result is a sentence-transformers folder and
``training_card.json``; :func:`export_encoder_onnx` makes the int8 ONNX folder that
:class:`covrag.coverage.onnx_encoder.OnnxEncoder` reads (mean pooling and normalisation inside
the graph).
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from covrag.coverage.onnx_encoder import ENCODER_FILE
from covrag.errors import ConfigError, MissingExtraError
from covrag.packaged import resolve_model
from covrag.schema.cards import SamePointCard
from covrag.tokens import default_model_path
from covrag.types import BoolArray, Topic
from covrag_lab.train.onnx_rewrite import rewrite_products

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class SamePointConfig:
    """Hyperparameters of the same-point bi-encoder.

    Attributes:
        base_model: Sentence-transformers folder to start from; None for the packaged MiniLM.
        batch_size: Passages per batch (all from one topic).
        max_steps: Optimiser steps (batches); batches are drawn round robin over topics.
        learning_rate: Peak AdamW learning rate (linear warm-up, then linear decay).
        warmup: Share of steps spent warming up.
        temperature: Of the contrastive loss (cosines are divided by it).
        max_length: Token limit of a passage.
        seed: Seed of the batch draw.
        threads: CPU threads for torch.
        with_aspects: Every batch also holds its topic's aspect texts (the key points), each
            labelled with its own aspect, so the model learns aspect-passage matches (a key point
            and the arguments it summarises) beside passage-passage ones.
    """

    base_model: str | None = None
    batch_size: int = 32
    max_steps: int = 200
    learning_rate: float = 2e-5
    warmup: float = 0.1
    temperature: float = 0.05
    max_length: int = 128
    seed: int = 0
    threads: int = 2
    with_aspects: bool = False


@dataclass(frozen=True)
class Batch:
    """Passages of one topic and their gold aspects (rows: passages, columns: aspects)."""

    texts: tuple[str, ...]
    labels: BoolArray


def positives(labels: BoolArray) -> BoolArray:
    """(b, b) mask of positive pairs: two different passages sharing an aspect."""
    shared = labels.astype(np.int64) @ labels.T.astype(np.int64) > 0
    np.fill_diagonal(shared, False)
    return shared


def topic_batches(
    topic: Topic, batch_size: int, rng: np.random.Generator, with_aspects: bool = False
) -> list[Batch]:
    """One shuffled pass over a topic's passages, cut into batches that hold a positive pair;
    ``with_aspects`` adds the topic's aspect texts to every batch (one label each, their own)."""
    labels = topic.label_matrix()
    order = rng.permutation(len(topic.passages))
    aspects = tuple(a.text for a in topic.aspects) if with_aspects else ()
    own = np.eye(len(aspects), len(topic.aspects), dtype=bool)
    batches = []
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        if len(rows) < 2 and start:  # a lone passage joins nothing
            continue
        texts = tuple(topic.passages[i].text for i in rows) + aspects
        batch = Batch(texts, np.concatenate([labels[rows], own]))
        if positives(batch.labels).any():
            batches.append(batch)
    return batches


def draw_batches(datasets: Mapping[str, Sequence[Topic]], config: SamePointConfig) -> list[Batch]:
    """``config.max_steps`` batches: passes over every topic of every dataset, shuffled, repeated
    (with new shuffles) until there are enough."""
    topics = [t for ts in datasets.values() for t in ts]
    if not topics:
        raise ConfigError("no training topics")
    rng = np.random.default_rng(config.seed)
    batches: list[Batch] = []
    while len(batches) < config.max_steps:
        rounds = [b for i in rng.permutation(len(topics)) for b in topic_batches(
            topics[int(i)], config.batch_size, rng, config.with_aspects)]  # fmt: skip
        if not rounds:
            raise ConfigError("the training topics hold no pair of passages sharing an aspect")
        batches += [rounds[int(i)] for i in rng.permutation(len(rounds))]
    return batches[: config.max_steps]


def contrastive_loss(embeddings: Any, labels: BoolArray, temperature: float) -> Any:
    """Supervised contrastive loss of unit ``embeddings`` (torch, (b, d)) over the batch."""
    import torch

    b = embeddings.shape[0]
    sim = embeddings @ embeddings.T / temperature
    eye = torch.eye(b, dtype=torch.bool)
    sim = sim.masked_fill(eye, float("-inf"))
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    pos = torch.from_numpy(positives(labels))
    anchors = pos.any(dim=1)
    per_anchor = -(log_prob.masked_fill(~pos, 0.0).sum(dim=1)) / pos.sum(dim=1).clamp(min=1)
    return per_anchor[anchors].mean()


def train_same_point(
    datasets: Mapping[str, Sequence[Topic]], out: Path, config: SamePointConfig
) -> SamePointCard:
    """Fine-tune on batches of the topics of each named dataset; save the model and card."""
    try:
        import torch
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise MissingExtraError("sentence-transformers", "lab") from exc
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    base = default_model_path() if config.base_model is None else resolve_model(config.base_model)
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    model.max_seq_length = config.max_length
    batches = draw_batches(datasets, config)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    warm = max(1, int(config.warmup * len(batches)))

    def rate(step: int) -> float:
        if step < warm:
            return (step + 1) / warm
        return max(0.0, (len(batches) - step) / max(1, len(batches) - warm))

    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, rate)
    model.train()
    started = time.perf_counter()
    losses: list[float] = []
    for step, batch in enumerate(batches):
        features = model.tokenize(list(batch.texts))
        embeddings = model(features)["sentence_embedding"]
        embeddings = torch.nn.functional.normalize(embeddings, dim=-1)
        loss = contrastive_loss(embeddings, batch.labels, config.temperature)
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        schedule.step()
        losses.append(float(loss.detach()))
        if step % 20 == 0:
            logger.info(
                "step %d/%d loss %.3f (%.0f s)",
                step, len(batches), np.mean(losses[-20:]), time.perf_counter() - started,
            )  # fmt: skip
    seconds = time.perf_counter() - started
    staged = out.with_name(out.name + ".partial")
    if staged.exists():
        shutil.rmtree(staged)
    model.save(str(staged))
    card = SamePointCard(
        config=asdict(config),
        train_topics={name: len(ts) for name, ts in datasets.items()},
        steps=len(batches),
        seconds=round(seconds, 1),
        losses=[round(float(np.mean(losses[i : i + 20])), 4) for i in range(0, len(losses), 20)],
    )
    card.save(staged)
    if out.exists():
        shutil.rmtree(out)
    os.replace(staged, out)
    return card


def export_encoder_onnx(model_dir: Path, out: Path, *, opset: int = 17) -> Path:
    """Export a sentence-transformers folder (mean pooling) to int8 ONNX: unit embeddings from
    ``input_ids``, ``attention_mask`` and, for a model that reads them, ``token_type_ids``, with
    per-channel uint8 weights and per-row activation scales
    (:func:`covrag_lab.train.onnx_rewrite.rewrite_products`, as the shipped cross-encoder), so an
    embedding never depends on its batch."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from transformers import AutoModel, AutoTokenizer

    encoder = AutoModel.from_pretrained(model_dir)
    encoder.eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    pooling = model_dir / "1_Pooling" / "config.json"
    if pooling.exists():
        settings = json.loads(pooling.read_text())
        if settings.get("pooling_mode", "mean") != "mean" and not settings.get(
            "pooling_mode_mean_tokens"
        ):
            raise ConfigError(f"{model_dir}: only mean pooling is exported")

    # BERT-like models read token types; MPNet and RoBERTa-style ones have no such input
    typed = "token_type_ids" in inspect.signature(encoder.forward).parameters

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, ids: Any, mask: Any, *types: Any) -> Any:
            kwargs = {"token_type_ids": types[0]} if types else {}
            hidden = self.encoder(input_ids=ids, attention_mask=mask, **kwargs)[0]
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, dim=-1)

    staged = out.with_name(out.name + ".partial")
    if staged.exists():
        shutil.rmtree(staged)
    staged.mkdir(parents=True)
    sample = tokenizer(["a passage"], return_tensors="pt")
    names = ["input_ids", "attention_mask"] + (["token_type_ids"] if typed else [])
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "length"} for n in names}
    axes["embedding"] = {0: "batch"}
    full = staged / "model.onnx"
    with torch.no_grad():
        torch.onnx.export(
            Pooled(),
            tuple(sample[n] for n in names),
            str(full),
            input_names=names,
            output_names=["embedding"],
            dynamic_axes=axes,
            opset_version=opset,
            dynamo=False,
        )
    result = staged / ENCODER_FILE
    quantize_dynamic(str(full), str(result), weight_type=QuantType.QInt8, per_channel=True)
    rewrite_products(result)
    shard_weights(result)
    full.unlink()
    tokenizer.backend_tokenizer.save(str(staged / "tokenizer.json"))
    if (model_dir / "training_card.json").exists():
        shutil.copy(model_dir / "training_card.json", staged / "training_card.json")
    if out.exists():
        shutil.rmtree(out)
    os.replace(staged, out)
    return out / ENCODER_FILE


#: Largest weight file of an export: a larger model keeps its weights beside the graph in files
#: of at most this size (git hosts refuse or warn at 50-100 MB a file).
SHARD_BYTES = 45_000_000


def shard_weights(model_file: Path, limit: int = SHARD_BYTES) -> list[Path]:
    """Move the weights of an ONNX file over ``limit`` bytes into ``weights-NN.bin`` files beside
    it (ONNX external data, which onnxruntime reads from the model's folder), each at most
    ``limit`` bytes unless one tensor is larger; a smaller model stays one file. Call it on a
    file in a staging folder: it rewrites the file in place. Returns the weight files."""
    import onnx
    from onnx.external_data_helper import set_external_data

    if model_file.stat().st_size <= limit:
        return []
    model = onnx.load(str(model_file))
    shards: list[bytearray] = [bytearray()]
    for tensor in model.graph.initializer:
        data = tensor.raw_data
        if len(data) < 1024:  # scales, zero points and shapes stay in the graph
            continue
        if shards[-1] and len(shards[-1]) + len(data) > limit:
            shards.append(bytearray())
        location = f"weights-{len(shards) - 1:02d}.bin"
        set_external_data(tensor, location=location, offset=len(shards[-1]), length=len(data))
        shards[-1].extend(data)
        tensor.ClearField("raw_data")
        tensor.data_location = onnx.TensorProto.EXTERNAL
    files = [model_file.parent / f"weights-{i:02d}.bin" for i in range(len(shards))]
    for path, data in zip(files, shards, strict=True):
        path.write_bytes(bytes(data))
    onnx.save(model, str(model_file))
    return files


def steps_for(topics: int, passages: float, batch_size: int, epochs: float) -> int:
    """Optimiser steps for ``epochs`` passes over ``topics`` topics of ``passages`` each."""
    return max(1, math.ceil(epochs * topics * math.ceil(passages / batch_size)))
