"""Fine-tune a coverage cross-encoder: does this passage answer (cover) this aspect?

The model starts from the packaged all-MiniLM-L6-v2 encoder (or any Hugging Face encoder) with a
new one-logit head, trained with binary cross-entropy on labelled (passage, aspect) pairs
(:mod:`covrag_lab.train.pairs`). Batches are formed from length-sorted buckets so little compute
goes to padding. The result is a standard ``AutoModelForSequenceClassification`` folder that
``sentence_transformers.CrossEncoder`` loads, plus ``training_card.json``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from covrag.errors import ConfigError, DataError, MissingExtraError
from covrag.packaged import resolve_model
from covrag.schema.cards import CoverageTrainingCard
from covrag.tokens import default_model_path
from covrag_lab.errors import TrainingError
from covrag_lab.train.calibrate import roc_auc
from covrag_lab.train.pairs import Pair, shuffled

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of ``covrag-lab train coverage``.

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
        checkpoint_every: Optimiser steps between checkpoints (0 = none). A run that stops
            resumes from its last checkpoint when started again with the same settings.
        precision: "fp32", or "bf16" for bfloat16 autocast of the forward pass (weights,
            gradients and optimiser state stay float32). On a CPU with AVX512-BF16 or AMX it
            trains about twice as fast; on one without, torch emulates it slowly.
        min_train_auc: The collapse check. After a run of at least ``CHECKED_STEPS`` steps, the
            model scores a sample of its own training pairs; when their ROC-AUC is below this
            (a model that scores every pair alike sits at 0.5), nothing is written and
            :class:`~covrag_lab.errors.TrainingError` is raised. 0 turns the check off.
    """

    base_model: str | None = None
    epochs: float = 1.0
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup: float = 0.1
    max_length: int = 160
    seed: int = 0
    threads: int = 2
    checkpoint_every: int = 200
    precision: str = "fp32"
    min_train_auc: float = 0.55

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"precision must be one of {', '.join(PRECISIONS)}, not {self.precision!r}"
            )
        if not 0.0 <= self.min_train_auc <= 1.0:
            raise ConfigError(f"min_train_auc must lie in [0, 1], not {self.min_train_auc}")


PRECISIONS = ("fp32", "bf16")
# The collapse check: runs this long are expected to separate their own training pairs, judged
# on a sample of this many of them.
CHECKED_STEPS = 100
CHECKED_PAIRS = 512
# Settings that do not change the trained model: left out of checkpoint and fold-cache keys.
_NOT_SHAPING = ("threads", "checkpoint_every", "min_train_auc")


#: What a run writes beside the model (``schema.cards.CoverageTrainingCard``).
TrainingCard = CoverageTrainingCard


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

    Every ``config.checkpoint_every`` steps the model, optimiser, schedule and random state go to
    ``OUT.checkpoint/``; started again with the same pairs and settings, the run resumes from
    there and ends with the same model as an uninterrupted run. The checkpoint is removed once
    the model is saved.

    Args:
        train: Source name -> its labelled pairs (all sources are shuffled together).
        out: Folder to write (created; an existing model there is replaced only on success).
        config: Hyperparameters.
        progress: Called as ``progress(step, total_steps, running_loss)``.

    Raises:
        TrainingError: The run collapsed (see ``TrainConfig.min_train_auc``). Nothing is
            written to ``out`` and the checkpoint is removed, since resuming it would end the same.
    """
    config = config or TrainConfig()
    torch = _torch()
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    pairs = shuffled([p for source in train.values() for p in source], config.seed)
    if not pairs or len({p.label for p in pairs}) < 2:
        raise DataError("training needs both positive and negative pairs")
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    base = resolve_model(config.base_model) if config.base_model else str(default_model_path())
    tokenizer = AutoTokenizer.from_pretrained(base)
    model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
    model.train()
    plan = _batch_plan(pairs, tokenizer, config)
    optimizer, scheduler = _optimizer(torch, model, config, len(plan))
    state = _Run(torch, model, optimizer, scheduler)
    checkpoint = Checkpoint(out.with_name(out.name + ".checkpoint"), _fingerprint(pairs, config))
    checkpoint.restore(state)
    for step in range(state.step, len(plan)):
        state.step_on([pairs[i] for i in plan[step]], tokenizer, config)
        if progress is not None:
            progress(step + 1, len(plan), state.running)
        if (step + 1) % 100 == 0:
            rate = (step + 1 - state.resumed_at) * config.batch_size / state.elapsed()
            logger.info(
                "step %d/%d, loss %.4f, %.1f pairs/s", step + 1, len(plan), state.running, rate
            )
        if config.checkpoint_every and (step + 1) % config.checkpoint_every == 0:
            checkpoint.save(state)
    model.eval()
    separation = _separation(torch, model, tokenizer, pairs, config)
    if len(plan) >= CHECKED_STEPS and not separation >= config.min_train_auc:
        checkpoint.clear()
        raise TrainingError(
            f"training collapsed: after {len(plan)} steps the model ranks its own training pairs "
            f"with ROC-AUC {separation:.3f} (chance is 0.5; the check wants "
            f">= {config.min_train_auc}), so it was not written to {out}. Its last running loss "
            f"was {state.running:.3f}. Try a lower learning rate (this run: "
            f"{config.learning_rate:g}); --min-train-auc 0 turns the check off"
        )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    card = TrainingCard(
        config=asdict(config),
        train_pairs={name: len(source) for name, source in train.items()},
        steps=len(plan),
        seconds=round(state.seconds_before + state.elapsed(), 1),
        truncated_pairs=state.truncated,
        train_roc_auc=round(separation, 4) if math.isfinite(separation) else None,
    )
    if state.resumed_at:
        card.notes.append(f"resumed from the checkpoint at step {state.resumed_at}")
    card.save(out)
    checkpoint.clear()
    logger.info("trained %d steps in %.0f s", len(plan), card.seconds)
    return card


class _Run:
    """The mutable state of one training run: what a checkpoint saves."""

    def __init__(self, torch: Any, model: Any, optimizer: Any, scheduler: Any) -> None:
        self.torch, self.model, self.optimizer, self.scheduler = torch, model, optimizer, scheduler
        self.loss_fn = torch.nn.BCEWithLogitsLoss()
        self.step = 0
        self.resumed_at = 0
        self.running = 0.0
        self.truncated = 0
        self.seconds_before = 0.0
        self.started = time.perf_counter()

    def elapsed(self) -> float:
        return max(time.perf_counter() - self.started, 1e-9)

    def step_on(self, chosen: Sequence[Pair], tokenizer: Any, config: TrainConfig) -> None:
        torch = self.torch
        encoded = _encode(tokenizer, chosen, config)
        self.truncated += int((encoded["attention_mask"].sum(dim=1) >= config.max_length).sum())
        labels = torch.tensor([float(p.label) for p in chosen])
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=config.precision == "bf16"):
            logits = self.model(**encoded).logits.squeeze(-1)
        loss = self.loss_fn(logits.float(), labels)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad()
        value = float(loss.item())
        self.running = 0.98 * self.running + 0.02 * value if self.step else value
        self.step += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "rng": self.torch.get_rng_state(),
            "step": self.step,
            "running": self.running,
            "truncated": self.truncated,
            "seconds": self.seconds_before + self.elapsed(),
        }

    def load_state_dict(self, saved: Mapping[str, Any]) -> None:
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        self.torch.set_rng_state(saved["rng"])
        self.step = self.resumed_at = int(saved["step"])
        self.running = float(saved["running"])
        self.truncated = int(saved["truncated"])
        self.seconds_before = float(saved["seconds"])
        self.started = time.perf_counter()


@dataclass(frozen=True)
class Checkpoint:
    """A training run's checkpoint folder, tied to the pairs and settings it was made with."""

    folder: Path
    fingerprint: str

    @property
    def file(self) -> Path:
        return self.folder / "state.pt"

    def restore(self, state: _Run) -> bool:
        """Load the checkpoint into ``state`` if there is one; False when there is none."""
        if not self.file.is_file():
            return False
        saved = state.torch.load(self.file, map_location="cpu", weights_only=False)
        if saved.get("fingerprint") != self.fingerprint:
            raise DataError(
                f"{self.folder}: this checkpoint was made with other training pairs or settings; "
                "rerun with the same ones to resume, or delete the folder to start afresh"
            )
        state.load_state_dict(saved)
        logger.info("resuming from %s at step %d", self.folder, state.step)
        return True

    def save(self, state: _Run) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        partial = self.file.with_name(self.file.name + ".partial")
        state.torch.save({**state.state_dict(), "fingerprint": self.fingerprint}, partial)
        os.replace(partial, self.file)

    def clear(self) -> None:
        if self.folder.is_dir():
            shutil.rmtree(self.folder)


def shaping_settings(config: TrainConfig) -> dict[str, Any]:
    """The settings that change the trained model (not the thread count, the checkpoint interval
    or the collapse check).

    fp32, the precision every run had before ``precision`` existed, is left out, so checkpoints
    and fold caches made then still match.
    """
    settings = asdict(config)
    if settings["precision"] == "fp32":
        del settings["precision"]
    return {k: v for k, v in settings.items() if k not in _NOT_SHAPING}


def _fingerprint(pairs: Sequence[Pair], config: TrainConfig) -> str:
    """What a checkpoint must match to be resumed: the pairs and every setting that shapes the
    run (not the thread count or the checkpoint interval)."""
    digest = hashlib.sha256()
    digest.update(json.dumps(shaping_settings(config), sort_keys=True).encode())
    for pair in pairs:
        digest.update(f"{pair.passage}\x1f{pair.aspect}\x1f{pair.label}\x1e".encode())
    return digest.hexdigest()


def _encode(tokenizer: Any, chosen: Sequence[Pair], config: TrainConfig) -> Any:
    """A batch of (passage, aspect) pairs as the model reads them: passages cut first."""
    return tokenizer(
        [p.passage for p in chosen],
        [p.aspect for p in chosen],
        padding=True,
        truncation="only_first",
        max_length=config.max_length,
        return_tensors="pt",
        return_overflowing_tokens=False,
    )


def _separation(
    torch: Any, model: Any, tokenizer: Any, pairs: Sequence[Pair], config: TrainConfig
) -> float:
    """ROC-AUC of the model's scores on a seeded sample of its training pairs, up to half of
    them positive (NaN when a score is not finite)."""
    mixed = shuffled(list(pairs), config.seed + 1)
    chosen = [p for p in mixed if p.label][: CHECKED_PAIRS // 2]
    chosen += [p for p in mixed if not p.label][: CHECKED_PAIRS - len(chosen)]
    scores: list[float] = []
    with torch.no_grad():
        for start in range(0, len(chosen), 64):
            encoded = _encode(tokenizer, chosen[start : start + 64], config)
            scores.extend(model(**encoded).logits.squeeze(-1).float().tolist())
    values = np.asarray(scores, dtype=float)
    if not np.isfinite(values).all():
        return float("nan")
    return roc_auc([p.label for p in chosen], values)


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
