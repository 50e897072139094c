"""CLI commands for fitting and exporting: ``covrag fit lmvu``, ``covrag qrels``."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.table import Table

from covrag.commands import progress_bar, progress_iter
from covrag.coverage import parse_estimator
from covrag.data import load_dataset
from covrag.errors import ConfigError
from covrag.evaluate.qrels import coverage_qrels, topic_qrels, write_qrels
from covrag.select.lmvu import FEATURES, M0_FEATURES, STATE, LMVUModel
from covrag.train.lmvu import StateConfig, TrainingSet, cached_training_set, fit_lmvu

FEATURE_SETS: dict[str, tuple[str, ...]] = {
    "full": FEATURES,
    "m0": M0_FEATURES,
    "no-atomic": tuple(f for f in FEATURES if not f.startswith("piece_")),
    "static": FEATURES[: STATE.start],
}


def parse_dataset_weights(items: list[str]) -> dict[str, float]:
    """``["argkp2021:train=3"]`` -> ``{"argkp2021:train": 3.0}``."""
    weights: dict[str, float] = {}
    for item in items:
        name, sep, value = item.rpartition("=")
        try:
            weight = float(value)
        except ValueError:
            weight = float("nan")
        if not sep or not name or not weight >= 0:
            raise ConfigError(f"--dataset-weight: expected NAME=W with W >= 0, got {item!r}")
        weights[name] = weight
    return weights


def run_fit_lmvu(args: argparse.Namespace, console: Console) -> int:
    weights = parse_dataset_weights(args.dataset_weight)
    unknown = sorted(set(weights) - set(args.dataset))
    if unknown:
        raise ConfigError(f"--dataset-weight names {unknown}, not among --dataset")
    datasets = [(name, load_dataset(name)) for name in args.dataset]
    total = sum(len(topics) for _, topics in datasets)
    config = StateConfig(budgets=tuple(args.budgets), seed=args.seed)
    started = time.perf_counter()
    with progress_bar(console) as progress:
        task = progress.add_task("training states", total=total)
        training = TrainingSet.concat(
            [
                cached_training_set(
                    name, topics, config, args.states_cache, lambda _: progress.advance(task)
                )
                for name, topics in datasets
            ]
        )
    states_seconds = time.perf_counter() - started
    model = LMVUModel(
        l2=args.l2,
        features=FEATURE_SETS[args.features],
        shuffle_state=args.shuffle_state,
        random_state=args.seed,
    )
    fit_started = time.perf_counter()
    fit_lmvu(training, model, weights)
    fit_seconds = time.perf_counter() - fit_started
    model.save(
        args.out,
        datasets=list(args.dataset),
        dataset_weights={d: weights.get(d, 1.0) for d in args.dataset},
        states_per_dataset={d: training.states_of(d) for d in args.dataset},
        budgets=list(config.budgets),
        max_steps=config.max_steps,
        candidates_per_state=config.candidates_per_state,
        seed=args.seed,
        states=training.n_states,
        candidates=len(training.y),
        pairs=model.n_pairs_,
        seconds_states=round(states_seconds, 2),
        seconds_fit=round(fit_seconds, 3),
    )
    table = Table(title=f"LMVU fitted on {', '.join(args.dataset)} -> {args.out}")
    table.add_column("feature")
    table.add_column("weight (standardised)", justify="right")
    for name, weight in zip(FEATURES, model.coef_, strict=True):
        table.add_row(name, f"{weight:+.3f}")
    console.print(table)
    console.print(
        f"{training.n_states} states, {len(training.y)} candidates, {model.n_pairs_} pairs; "
        f"states built in {states_seconds:.1f} s, fitted in {fit_seconds:.2f} s"
    )
    return 0


def run_qrels(args: argparse.Namespace, console: Console) -> int:
    topics = load_dataset(args.dataset)
    if args.coverage in (None, "gold"):
        qrels = topic_qrels(topics)
    else:
        estimator = parse_estimator(args.coverage)
        matrices = {
            t.query_id: estimator.estimate(t)
            for t in progress_iter(topics, len(topics), f"estimate {estimator!r}", console)
        }
        qrels = coverage_qrels(matrices)
    write_qrels(args.out, qrels)
    console.print(
        f"wrote {len(qrels)} diversity qrels (query iteration doc relevance) to {args.out}"
    )
    return 0


def run_train_coverage(args: argparse.Namespace, console: Console) -> int:
    from covrag.train.calibrate import calibrate_pairs
    from covrag.train.coverage import TrainConfig, train_cross_encoder
    from covrag.train.pairs import dataset_pairs

    ratio = args.neg_ratio if args.neg_ratio > 0 else None
    train = {
        name: dataset_pairs(
            load_dataset(name)[: args.limit_topics],
            max_negatives_per_positive=ratio,
            seed=args.seed,
        )
        for name in args.datasets
    }
    dev = {
        name: dataset_pairs(
            load_dataset(name)[: args.limit_topics],
            max_negatives_per_positive=ratio,
            seed=args.seed,
        )
        for name in args.dev
    }
    config = TrainConfig(
        base_model=args.base_model,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=args.lr,
        max_length=args.max_length,
        seed=args.seed,
    )
    for name, pairs in train.items():
        console.print(f"train {name}: {len(pairs)} pairs, {sum(p.label for p in pairs)} positive")
    with progress_bar(console) as progress:
        task = progress.add_task("training", total=None)

        def report(step: int, total: int, loss: float) -> None:
            progress.update(task, completed=step, total=total, description=f"loss {loss:.3f}")

        card = train_cross_encoder(train, args.out, config, progress=report)
    calibration = calibrate_pairs(args.out, dev, max_length=args.max_length)
    card.dev = calibration.per_dataset
    card.threshold = calibration.threshold
    card.notes.append(
        "threshold: maximises F1 over all dev pairs together (dev splits only; never test)"
    )
    card.save(args.out)
    if args.onnx_out:
        from covrag.coverage.onnx_model import export_onnx

        exported = export_onnx(args.out, args.onnx_out)
        console.print(f"int8 ONNX model: {exported} ({exported.stat().st_size / 1e6:.1f} MB)")
    table = Table(title=f"coverage cross-encoder -> {args.out}")
    for column in ("dev set", "pairs", "ROC-AUC", "F1 @ threshold"):
        table.add_column(column, justify="right")
    for name, figures in calibration.per_dataset.items():
        table.add_row(
            name, f"{figures['pairs']:.0f}", f"{figures['roc_auc']:.3f}", f"{figures['f1']:.3f}"
        )
    console.print(table)
    console.print(
        f"{card.steps} steps in {card.seconds:.0f} s; threshold {calibration.threshold:.2f} "
        f"(chosen on dev); {card.truncated_pairs} training pairs reached {args.max_length} tokens"
    )
    return 0
