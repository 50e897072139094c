"""Train CoveR, the DES paper's coverage-trained bi-encoder: what ``covrag-lab train cover`` runs.

Training examples (see ``docs/METHODS.md``, "CoveR objective"), drawn from labelled topics:

- **coverage examples**: some of the topic's aspects are assumed covered; the anchor is
  :func:`~covrag.retrieve.cover_query` (the question plus the covered aspects), the positive a
  passage answering at least one uncovered aspect, the hard negative a *redundant* passage (one
  that answers only covered aspects), or, when the topic has none, an irrelevant one (answers
  no aspect);
- **aspect examples** (a share ``aspect_share``): the anchor is one aspect, the positive a passage
  answering it, the hard negative a passage of the same topic answering only other aspects. They
  teach the same model to score "does this passage answer this aspect", so it also serves as a
  cheap coverage estimator (:class:`~covrag.coverage.CoverCoverage`).

The loss is sentence-transformers' ``MultipleNegativesRankingLoss`` (InfoNCE over the batch's
positives and hard negatives), driven by a plain loop like :mod:`covrag_lab.train.coverage` (the
library's ``SentenceTransformerTrainer`` would add the ``datasets`` and ``accelerate``
dependencies for a run of minutes). The default run (1,500 examples, one epoch, batch 32) takes
minutes on 2 CPU cores, so there are no checkpoints: a run that stops is rerun.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from covrag.errors import DataError, MissingExtraError
from covrag.retrieve.cover import cover_query
from covrag.schema.cards import CoverCard
from covrag.tokens import default_model_path
from covrag.types import Topic

logger = logging.getLogger(__name__)

CARD = "training_card.json"


def _help(text: str) -> dict[str, str]:
    return {"help": text}


@dataclass(frozen=True)
class CoverConfig:
    """Hyperparameters of ``covrag-lab train cover`` (each field's help is in its metadata; the CLI
    builds its options from them)."""

    base_model: str | None = field(
        default=None, metadata=_help("bi-encoder to start from (default: the packaged MiniLM)")
    )
    examples: int = field(
        default=1500,
        metadata=_help("training examples in all, shared equally by the datasets and their topics"),
    )
    examples_per_topic: int = field(default=60, metadata=_help("most examples from one topic"))
    aspect_share: float = field(
        default=0.3,
        metadata=_help(
            "share of aspect examples (aspect -> passage answering it); the rest are "
            "coverage examples (question + covered aspects -> passage answering an uncovered one)"
        ),
    )
    epochs: int = field(default=1, metadata=_help("passes over the examples"))
    batch_size: int = field(
        default=32,
        metadata=_help(
            "examples per step (the others' passages are each one's in-batch negatives)"
        ),
    )
    learning_rate: float = field(
        default=5e-5, metadata=_help("peak AdamW learning rate (10%% warm-up, linear decay)")
    )
    max_seq_length: int = field(
        default=192, metadata=_help("token limit of a text (long covered lists are cut)")
    )
    scale: float = field(default=20.0, metadata=_help("similarity scale (inverse temperature)"))
    seed: int = field(default=0, metadata=_help("seed of sampling, shuffling and dropout"))
    threads: int = field(
        default=2, metadata=_help("CPU threads for torch (1 is faster on a crowded machine)")
    )

    def __post_init__(self) -> None:
        if not 0.0 <= self.aspect_share <= 1.0:
            raise ValueError(f"aspect_share must lie in [0, 1], got {self.aspect_share}")
        for name in ("examples", "examples_per_topic", "epochs", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")


@dataclass(frozen=True, slots=True)
class CoverExample:
    """One (anchor, positive, hard negative) triplet; ``kind`` is ``coverage`` or ``aspect``,
    ``negative_kind`` is ``redundant``, ``irrelevant`` or ``other-aspect``."""

    anchor: str
    positive: str
    negative: str
    kind: str
    negative_kind: str
    query_id: str


class _Labels:
    """One topic's labels as index sets: which passages answer which aspects."""

    def __init__(self, topic: Topic) -> None:
        self.topic = topic
        self.aspects = [a.id for a in topic.aspects]
        self.text = {a.id: a.text for a in topic.aspects}
        self.sets = [
            topic.labels.get(p.id, frozenset()) & set(self.aspects) for p in topic.passages
        ]
        self.answered = [a for a in self.aspects if any(a in s for s in self.sets)]

    def passages_where(self, keep: Callable[[frozenset[str]], bool]) -> list[int]:
        return [i for i, s in enumerate(self.sets) if keep(s)]


def _coverage_example(labels: _Labels, rng: np.random.Generator) -> CoverExample | None:
    """A random covered set, a passage answering an uncovered aspect and a redundant one."""
    answered = labels.answered
    if len(answered) < 2:
        return None
    size = int(rng.integers(1, len(answered)))
    covered = set(rng.choice(answered, size, replace=False).tolist())
    positives = labels.passages_where(lambda s: bool(s - covered))
    negatives = labels.passages_where(lambda s: bool(s) and s <= covered)
    negative_kind = "redundant"
    if not negatives:
        negatives, negative_kind = labels.passages_where(lambda s: not s), "irrelevant"
    if not positives or not negatives:
        return None
    order = [a for a in labels.aspects if a in covered]  # the topic's order, not the draw's
    passages = labels.topic.passages
    return CoverExample(
        cover_query(labels.topic.query, [labels.text[a] for a in order]),
        passages[int(rng.choice(positives))].text,
        passages[int(rng.choice(negatives))].text,
        "coverage",
        negative_kind,
        labels.topic.query_id,
    )


def _aspect_example(labels: _Labels, rng: np.random.Generator) -> CoverExample | None:
    """An aspect, a passage answering it and one answering only other aspects."""
    if len(labels.answered) < 2:
        return None
    aspect = str(rng.choice(labels.answered))
    positives = labels.passages_where(lambda s: aspect in s)
    negatives = labels.passages_where(lambda s: bool(s) and aspect not in s)
    if not negatives:
        return None
    passages = labels.topic.passages
    return CoverExample(
        labels.text[aspect],
        passages[int(rng.choice(positives))].text,
        passages[int(rng.choice(negatives))].text,
        "aspect",
        "other-aspect",
        labels.topic.query_id,
    )


def cover_examples(topics: Sequence[Topic], n: int, config: CoverConfig) -> list[CoverExample]:
    """Up to ``n`` examples from ``topics``, spread evenly over them (deterministic in the seed).

    A topic whose labels cannot give an example (fewer than two answered aspects) gives none.
    """
    rng = np.random.default_rng(config.seed)
    usable = [_Labels(t) for t in topics]
    usable = [labels for labels in usable if len(labels.answered) >= 2]
    if not usable:
        return []
    per_topic = min(config.examples_per_topic, max(1, -(-n // len(usable))))
    examples: list[CoverExample] = []
    for labels in usable:
        for _ in range(per_topic):
            make = _aspect_example if rng.random() < config.aspect_share else _coverage_example
            example = make(labels, rng)
            if example is not None:
                examples.append(example)
    if len(examples) > n:
        keep = np.sort(rng.choice(len(examples), n, replace=False))
        examples = [examples[i] for i in keep]
    return examples


def training_examples(
    datasets: Sequence[str], config: CoverConfig, *, limit_topics: int | None = None
) -> dict[str, list[CoverExample]]:
    """Examples of each dataset (bundled ``name:split[:questions]`` or a coverage JSONL path),
    ``config.examples`` shared equally among them, from the first ``limit_topics`` topics."""
    from covrag.data import load_dataset

    if not datasets:
        return {}
    n = max(1, config.examples // len(datasets))
    # Each dataset draws with its own seed: a dataset given in two forms (statements and
    # questions) then gives different covered sets and passages, not the same ones reworded.
    return {
        name: cover_examples(
            load_dataset(name)[:limit_topics], n, dataclasses.replace(config, seed=config.seed + i)
        )
        for i, name in enumerate(datasets)
    }


def _torch() -> Any:
    try:
        import torch
        from sentence_transformers import SentenceTransformer  # noqa: F401
    except ImportError as exc:
        raise MissingExtraError("sentence-transformers", "embed") from exc
    from covrag.embed import quiet_transformers

    quiet_transformers()
    return torch


def train_cover(
    train: Mapping[str, Sequence[CoverExample]],
    out: Path,
    config: CoverConfig | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> CoverCard:
    """Fine-tune the bi-encoder on the examples of each named source and save it to ``out``
    (a sentence-transformers folder) with ``training_card.json``.

    Raises:
        DataError: when there are fewer examples than one batch needs (two).
    """
    config = config or CoverConfig()
    torch = _torch()
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    examples = [e for source in train.values() for e in source]
    if len(examples) < 2:
        raise DataError("CoveR training needs at least two examples (in-batch negatives)")
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    local = config.base_model is None or Path(config.base_model).is_dir()
    base = config.base_model or str(default_model_path())
    model = SentenceTransformer(base, device="cpu", local_files_only=local)
    model.max_seq_length = config.max_seq_length
    loss_fn = MultipleNegativesRankingLoss(model, scale=config.scale)
    batches = _batches(len(examples), config)
    optimizer, scheduler = _optimizer(torch, model, config, len(batches))
    model.train()
    started = time.perf_counter()
    losses: list[float] = []
    for step, batch in enumerate(batches):
        chosen = [examples[i] for i in batch]
        features = [
            model.preprocess([getattr(e, column) for e in chosen])
            for column in ("anchor", "positive", "negative")
        ]
        loss = loss_fn(features, torch.zeros(len(chosen)))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        losses.append(float(loss.item()))
        if progress is not None:
            progress(step + 1, len(batches), float(np.mean(losses[-20:])))
    seconds = time.perf_counter() - started
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save(str(out))
    window = max(1, min(20, len(losses) // 4))  # mean loss of the first and last steps
    card = CoverCard(
        config=asdict(config),
        examples={name: _counts(source) for name, source in train.items()},
        steps=len(batches),
        seconds=round(seconds, 1),
        loss_first=round(float(np.mean(losses[:window])), 4),
        loss_last=round(float(np.mean(losses[-window:])), 4),
        notes=["loss: MultipleNegativesRankingLoss with one hard negative per anchor"],
    )
    card.save(out)
    logger.info("CoveR trained %d steps in %.0f s", len(batches), seconds)
    return card


def _counts(examples: Sequence[CoverExample]) -> dict[str, int]:
    counts: dict[str, int] = {"all": len(examples)}
    for e in examples:
        key = e.kind if e.kind == "aspect" else f"coverage/{e.negative_kind}"
        counts[key] = counts.get(key, 0) + 1
    return counts


def _batches(n: int, config: CoverConfig) -> list[list[int]]:
    """Shuffled batches of every epoch (a last batch of one example joins the one before)."""
    rng = np.random.default_rng(config.seed)
    batches: list[list[int]] = []
    for _ in range(config.epochs):
        order = rng.permutation(n).tolist()
        epoch = [order[i : i + config.batch_size] for i in range(0, n, config.batch_size)]
        if len(epoch) > 1 and len(epoch[-1]) < 2:
            epoch[-2].extend(epoch.pop())
        batches.extend(epoch)
    return batches


def _optimizer(torch: Any, model: Any, config: CoverConfig, steps: int) -> tuple[Any, Any]:
    """AdamW with linear warm-up (10% of steps) then linear decay to zero."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=0.01)
    warmup = max(1, steps // 10)

    def schedule(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return max(0.0, (steps - step) / max(1, steps - warmup))

    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)
