"""Train, calibrate and export a coverage cross-encoder: what ``covrag-lab train coverage`` runs.

:func:`training_pairs` turns labelled datasets into (passage, aspect) pairs;
:func:`train_coverage` fine-tunes the model on them
(:func:`~covrag_lab.train.coverage.train_cross_encoder`), picks the F1-best threshold on the dev
pairs, writes it into the training card and, when asked, exports the int8 ONNX copy that covrag
ships.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from covrag.data import load_dataset
from covrag_lab.train.calibrate import Calibration, calibrate_pairs
from covrag_lab.train.coverage import TrainConfig, TrainingCard, train_cross_encoder
from covrag_lab.train.pairs import Pair, dataset_pairs, shuffled

#: Called as ``progress(step, total_steps, running_loss)``.
Progress = Callable[[int, int, float], None]

#: Training pairs whose activations fix the scales of a statically quantised model.
CALIBRATION_PAIRS = 256

THRESHOLD_NOTE = "threshold: maximises F1 over all dev pairs together (dev splits only; never test)"


@dataclass(frozen=True)
class CoverageRun:
    """What training produced: the card (threshold included), the dev figures and the ONNX
    copy (None when none was asked for)."""

    card: TrainingCard
    calibration: Calibration
    onnx: Path | None = None


def training_pairs(
    datasets: Sequence[str],
    *,
    neg_ratio: float | None = None,
    limit_topics: int | None = None,
    seed: int = 0,
) -> dict[str, list[Pair]]:
    """Labelled pairs of each dataset (bundled names or JSONL paths), at most ``neg_ratio``
    negatives per positive per topic (None = all), from the first ``limit_topics`` topics."""
    return {
        name: dataset_pairs(
            load_dataset(name)[:limit_topics], max_negatives_per_positive=neg_ratio, seed=seed
        )
        for name in datasets
    }


def train_coverage(
    train: Mapping[str, Sequence[Pair]],
    dev: Mapping[str, Sequence[Pair]],
    out: Path,
    config: TrainConfig,
    *,
    onnx_out: Path | None = None,
    quantize: str = "row",
    progress: Progress | None = None,
) -> CoverageRun:
    """Fine-tune on ``train``, calibrate the threshold on ``dev``, save the card in ``out`` and
    export the int8 ONNX model to ``onnx_out`` when given. ``quantize`` picks its activation
    scales: ``"row"`` (one per token row, computed at run time), ``"dynamic"`` (one per batch
    tensor) or ``"static"`` (fixed from 256 training pairs drawn with the training seed)."""
    card = train_cross_encoder(train, out, config, progress=progress)
    calibration = calibrate_pairs(out, dev, max_length=config.max_length)
    card.dev = calibration.per_dataset
    card.threshold = calibration.threshold
    card.notes.append(THRESHOLD_NOTE)
    card.save(out)
    exported = None
    if onnx_out is not None:
        from covrag_lab.train.onnx_export import export_onnx

        scales: list[tuple[str, str]] | None = None
        if quantize == "static":
            pairs = shuffled([p for source in train.values() for p in source], config.seed)
            scales = [(p.passage, p.aspect) for p in pairs[:CALIBRATION_PAIRS]]
        exported = export_onnx(out, onnx_out, calibration=scales, per_row=quantize == "row")
    return CoverageRun(card, calibration, exported)
