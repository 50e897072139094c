"""Fine-tune a coverage cross-encoder: does this passage answer (cover) this aspect?

The model starts from the packaged all-MiniLM-L6-v2 encoder (or any Hugging Face encoder) with a
new one-logit head, trained with binary cross-entropy on labelled (passage, aspect) pairs
(:mod:`covrag.train.pairs`). Batches are formed from length-sorted buckets so little compute goes
to padding. The result is a standard ``AutoModelForSequenceClassification`` folder that
``sentence_transformers.CrossEncoder`` loads, plus ``training_card.json``.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from covrag.errors import DataError, MissingExtraError
from covrag.tokens import default_model_path
from covrag.train.pairs import Pair, shuffled

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of ``covrag train coverage``.

    Attributes:
        base_model: Encoder to start from; None for the packaged MiniLM.
        epochs: Passes over the training pairs.
        batch_size: Pairs per optimiser step.
        learning_rate: Peak AdamW learning rate (linear warm-up, then linear decay).
        warmup: Share of steps spent warming up.
        max_length: Token limit of a (passage, aspect) pair; longer passages are cut at the end,
            and the card reports how many were.
        seed: Seed of shuffling, batching and the new head's initialisation.
        threads: CPU threads for torch.
    """

    base_model: str | None = None
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup: float = 0.1
    max_length: int = 160
    seed: int = 0
    threads: int = 2


@dataclass
class TrainingCard:
    config: dict[str, Any]
    train_pairs: dict[str, int]
    steps: int
    seconds: float
    truncated_pairs: int
    dev: dict[str, dict[str, float]] = field(default_factory=dict)
    threshold: float | None = None
    notes: list[str] = field(default_factory=list)

    def save(self, folder: Path) -> None:
        (folder / "training_card.json").write_text(json.dumps(asdict(self), indent=2) + "\n")


def _torch() -> Any:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise MissingExtraError("torch/transformers", "embed") from exc
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    return torch


def _batches(pairs: Sequence[Pair], tokenizer: Any, batch_size: int, seed: int) -> list[list[int]]:
    """Indices grouped into batches of similar length, batches in random order."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(pairs))
    lengths = np.array([len(pairs[i].passage) + len(pairs[i].aspect) for i in order])
    bucket = batch_size * 50
    batches: list[list[int]] = []
    for start in range(0, len(order), bucket):
        chunk = order[start : start + bucket]
        chunk = chunk[np.argsort(lengths[start : start + bucket], kind="stable")]
        batches.extend(chunk[i : i + batch_size].tolist() for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def train_cross_encoder(
    train: Mapping[str, Sequence[Pair]],
    out: Path,
    config: TrainConfig | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> TrainingCard:
    """Fine-tune on the pairs of each named source and save model, tokenizer and card to ``out``.

    Args:
        train: Source name -> its labelled pairs (all sources are shuffled together).
        out: Folder to write (created; an existing model there is replaced only on success).
        config: Hyperparameters.
        progress: Called as ``progress(step, total_steps, running_loss)``.
    """
    config = config or TrainConfig()
    torch = _torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    pairs = shuffled([p for source in train.values() for p in source], config.seed)
    if not pairs or len({p.label for p in pairs}) < 2:
        raise DataError("training needs both positive and negative pairs")
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    base = config.base_model or str(default_model_path())
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    model.train()
    plan = _batch_plan(pairs, tokenizer, config)
    optimizer, scheduler = _optimizer(torch, model, config, len(plan))
    loss_fn = torch.nn.BCEWithLogitsLoss()
    started = time.perf_counter()
    running = 0.0
    truncated = 0
    for step, batch in enumerate(plan):
        chosen = [pairs[i] for i in batch]
        encoded = tokenizer(
            [p.passage for p in chosen],
            [p.aspect for p in chosen],
            padding=True,
            truncation="only_first",
            max_length=config.max_length,
            return_tensors="pt",
            return_overflowing_tokens=False,
        )
        truncated += int((encoded["attention_mask"].sum(dim=1) >= config.max_length).sum())
        labels = torch.tensor([float(p.label) for p in chosen])
        loss = loss_fn(model(**encoded).logits.squeeze(-1), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        value = float(loss.item())
        running = 0.98 * running + 0.02 * value if step else value
        if progress is not None:
            progress(step + 1, len(plan), running)
        if (step + 1) % 100 == 0:
            rate = (step + 1) * config.batch_size / (time.perf_counter() - started)
            logger.info("step %d/%d, loss %.4f, %.1f pairs/s", step + 1, len(plan), running, rate)
    seconds = time.perf_counter() - started
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    card = TrainingCard(
        config=asdict(config),
        train_pairs={name: len(source) for name, source in train.items()},
        steps=len(plan),
        seconds=round(seconds, 1),
        truncated_pairs=truncated,
    )
    card.save(out)
    logger.info("trained %d steps in %.0f s", len(plan), seconds)
    return card


def _batch_plan(pairs: Sequence[Pair], tokenizer: Any, config: TrainConfig) -> list[list[int]]:
    """The batches of every epoch in order; a fractional last epoch is cut short."""
    epochs = max(1, math.ceil(config.epochs))
    plan: list[list[int]] = []
    for epoch in range(epochs):
        plan.extend(_batches(pairs, tokenizer, config.batch_size, config.seed + epoch))
    return plan[: max(1, int(round(len(plan) * config.epochs / epochs)))]


def _optimizer(torch: Any, model: Any, config: TrainConfig, steps: int) -> tuple[Any, Any]:
    """AdamW with linear warm-up then linear decay to zero over ``steps``."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    warmup = max(1, int(config.warmup * steps))

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (steps - step) / max(1, steps - warmup))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
