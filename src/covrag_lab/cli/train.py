"""``covrag-lab fit lmvu``, ``covrag-lab train coverage|question-forms|cover`` and ``covrag-lab
qrels``.

The work itself is in :mod:`covrag_lab.train.lmvu_run` and :mod:`covrag_lab.train.coverage_run`;
these commands parse the options, show progress and print what was fitted.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TypeVar

from rich.console import Console
from rich.table import Table

from covrag.cli.common import (
    Subparsers,
    add_llm_args,
    build_llm,
    check_outputs,
    field_default,
    progress_bar,
)
from covrag.errors import ConfigError, MissingExtraError
from covrag_lab.cli.train_cover import add_train_cover
from covrag_lab.cli.train_planner import add_train_planner, add_train_planner_data

T = TypeVar("T")


def progress_iter(items: Iterable[T], total: int, label: str, console: Console) -> Iterator[T]:
    """Iterate with a progress bar on the console (hidden when output is not a terminal)."""
    with progress_bar(console) as progress:
        task = progress.add_task(label, total=total)
        for item in items:
            yield item
            progress.advance(task)


#: The ``train coverage`` options that set a :class:`~covrag_lab.train.coverage.TrainConfig`
#: field: the option's ``args`` name -> the field (its default is the option's).
COVERAGE_FIELDS = {
    "base_model": "base_model",
    "lr": "learning_rate",
    "precision": "precision",
    "min_train_auc": "min_train_auc",
}


def register(sub: Subparsers) -> None:
    """Register ``covrag-lab fit``, ``covrag-lab train`` and ``covrag-lab qrels``."""
    p = sub.add_parser("fit", help="fit a learned selector (LMVU)")
    fit = p.add_subparsers(dest="what", required=True, metavar="what")
    _add_fit_lmvu(fit)
    p = sub.add_parser(
        "train",
        help="train a model: the coverage cross-encoder, question forms, planner data and "
        "planner, CoveR",
    )
    train = p.add_subparsers(dest="what", required=True, metavar="what")
    _add_train_coverage(train)
    _add_train_question_forms(train)
    add_train_planner_data(train)
    add_train_planner(train)
    add_train_cover(train)

    p = sub.add_parser("qrels", help="export diversity qrels (gold labels or a coverage matrix)")
    p.add_argument("--dataset", required=True, help="bundled name:split or coverage JSONL path")
    p.add_argument("--coverage", default="gold", help="gold (default) or an estimator spec")
    p.add_argument("--out", required=True, type=Path, help="qrels file to write")
    p.set_defaults(run_command=run_qrels)


def _add_fit_lmvu(fit: Subparsers) -> None:
    from covrag_lab.train.lmvu import StateConfig

    p = fit.add_parser("lmvu", help="fit LMVU's linear scorer on labelled datasets")
    p.add_argument("--dataset", nargs="+", required=True, help="bundled name:split or JSONL paths")
    p.add_argument("--out", required=True, type=Path, help="model JSON to write")
    p.add_argument(
        "--budgets",
        nargs="+",
        type=int,
        default=list(field_default(StateConfig, "budgets")),
        help="token budgets to generate training states under (default: %(default)s)",
    )
    p.add_argument(
        "--dataset-weight",
        nargs="+",
        default=[],
        metavar="NAME=W",
        help="weigh a dataset's states by W (others weigh 1), e.g. argkp2021:train=3",
    )
    p.add_argument(
        "--states-cache",
        type=Path,
        default=None,
        help="folder to keep each dataset's training states in (rebuilt if settings differ)",
    )
    p.set_defaults(run_command=run_fit_lmvu)


def _add_train_coverage(train: Subparsers) -> None:
    from covrag_lab.train.coverage import PRECISIONS, TrainConfig

    p = train.add_parser("coverage", help="fine-tune a coverage cross-encoder from MiniLM")
    p.add_argument(
        "--datasets",
        nargs="+",
        default=["argkp2021:train", "perspectrum:train", "perspectrum-evidence:train"],
        help="labelled training data (bundled names or JSONL paths)",
    )
    p.add_argument(
        "--dev",
        nargs="+",
        default=["argkp2021:dev", "perspectrum:dev", "perspectrum-evidence:dev"],
        help="labelled dev data for ROC-AUC and the threshold",
    )
    p.add_argument("--out", required=True, type=Path, help="model folder to write")
    fields = COVERAGE_FIELDS  # the options that set a TrainConfig field take its default
    p.add_argument(
        "--base-model",
        default=field_default(TrainConfig, fields["base_model"]),
        help="model to start from (default: the packaged MiniLM encoder)",
    )
    p.add_argument(
        "--lr",
        type=float,
        default=field_default(TrainConfig, fields["lr"]),
        help="peak learning rate (the shipped model's second stage: 2e-5; default: %(default)s)",
    )
    p.add_argument(
        "--precision",
        choices=PRECISIONS,
        default=field_default(TrainConfig, fields["precision"]),
        help="bf16: bfloat16 autocast of the forward pass, about 2x faster on a CPU with "
        "AVX512-BF16 or AMX (weights and optimiser state stay fp32)",
    )
    p.add_argument(
        "--neg-ratio",
        type=float,
        default=3.0,
        help="at most this many negatives per positive per topic (0 = all)",
    )
    p.add_argument(
        "--min-train-auc",
        type=float,
        default=field_default(TrainConfig, fields["min_train_auc"]),
        help="refuse to write a model whose ROC-AUC on a sample of its own training pairs is "
        "below this after 100+ steps (a collapsed run: 0.5 is chance); 0 turns the check off",
    )
    p.add_argument(
        "--onnx-out",
        type=Path,
        default=None,
        help="also export an int8 ONNX copy (what covrag ships: per-row activation scales, so "
        "a pair's score does not depend on its batch) to this folder",
    )
    p.set_defaults(run_command=run_train_coverage)


def _add_train_question_forms(train: Subparsers) -> None:
    from covrag_lab.train.question_form import STYLES

    p = train.add_parser(
        "question-forms",
        help="reword every aspect of labelled data as the neutral question it answers (LLM)",
    )
    p.add_argument(
        "--datasets",
        nargs="+",
        required=True,
        help="bundled name:split or JSONL paths; an aspect shared by several topics is "
        "rewritten once",
    )
    p.add_argument("--out", required=True, type=Path, help="question-form JSONL to write")
    p.add_argument(
        "--style",
        choices=STYLES,
        default="neutral",
        help="neutral: the question each statement answers, 8 statements per request (as "
        "the bundled files were made); contrast: one statement per request with its topic's "
        "other statements shown as what the question must not fit, and a gate (not a question "
        "the topic already has; nearer, by MiniLM cosine, to its own statement than to any "
        "other) with retries",
    )
    add_llm_args(p)
    p.set_defaults(run_command=run_train_question_forms)


def run_train_question_forms(args: argparse.Namespace, console: Console) -> int:
    from covrag.data import load_dataset
    from covrag.data.question_forms import read_question_forms
    from covrag_lab.train.question_form import alignment, write_question_forms

    check_outputs([("--datasets", d) for d in args.datasets], [("--out", args.out)])
    topics = [t for spec in args.datasets for t in load_dataset(spec)]
    llm = build_llm(args.llm)
    encoder = None
    if args.style == "contrast":
        from covrag.embed import default_encoder

        encoder = default_encoder()  # the gate needs it: a missing extra stops the run here
    with progress_bar(console) as progress:
        task = progress.add_task("rewording aspects", total=len(topics))
        written = write_question_forms(
            topics,
            llm,
            args.out,
            progress=lambda _: progress.advance(task),
            style=args.style,
            encoder=encoder,
        )
    console.print(f"{written} aspects of {len(topics)} topics written to {args.out}")
    try:
        nearest, total = alignment(read_question_forms(args.out).values())
    except MissingExtraError as error:  # the forms are written; only the screen needs MiniLM
        console.print(f"alignment screen skipped: {error}")
        return 0
    console.print(
        f"alignment: {nearest} of {total} statements are nearest (MiniLM cosine) to their own "
        "question among their topic's questions; read the others before training on them"
    )
    return 0


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
    from covrag.data import load_dataset
    from covrag.selectors.lmvu.features import FEATURES
    from covrag.selectors.lmvu.model import LMVUModel
    from covrag_lab.train.lmvu import StateConfig
    from covrag_lab.train.lmvu_run import check_weights, fit_lmvu_datasets

    inputs = [("--dataset", name) for name in args.dataset]
    check_outputs(inputs, [("--out", args.out)])
    weights = parse_dataset_weights(args.dataset_weight)
    check_weights(weights, args.dataset)
    datasets = {name: load_dataset(name) for name in args.dataset}
    # the paper's controls (m0, no-atomic, shuffled states) are fitted by benchmarks/bench_lmvu.py
    model = LMVUModel()
    config = StateConfig(budgets=tuple(args.budgets))
    with progress_bar(console) as progress:
        task = progress.add_task("training states", total=sum(map(len, datasets.values())))
        fitted = fit_lmvu_datasets(
            datasets,
            args.out,
            model,
            config,
            weights=weights,
            states_cache=args.states_cache,
            on_topic=lambda _: progress.advance(task),
        )
    table = Table(title=f"LMVU fitted on {', '.join(args.dataset)} -> {args.out}")
    table.add_column("feature")
    table.add_column("weight (standardised)", justify="right")
    for name, weight in zip(FEATURES, fitted.model.coef_, strict=True):
        table.add_row(name, f"{weight:+.3f}")
    console.print(table)
    training = fitted.training
    console.print(
        f"{training.n_states} states, {len(training.y)} candidates, {model.n_pairs_} pairs; "
        f"states built in {fitted.states_seconds:.1f} s, fitted in {fitted.fit_seconds:.2f} s"
    )
    return 0


def run_qrels(args: argparse.Namespace, console: Console) -> int:
    from covrag.coverage import parse_estimator
    from covrag.data import load_dataset
    from covrag.evaluation.qrels import coverage_qrels, topic_qrels, write_qrels

    check_outputs([("--dataset", args.dataset)], [("--out", args.out)])
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
    from covrag_lab.train.coverage import TrainConfig
    from covrag_lab.train.coverage_run import train_coverage, training_pairs

    inputs = [("--datasets", name) for name in args.datasets]
    inputs += [("--dev", name) for name in args.dev] + [("--base-model", args.base_model)]
    check_outputs(inputs, [], [("--out", args.out), ("--onnx-out", args.onnx_out)])
    config = TrainConfig(**{name: getattr(args, dest) for dest, name in COVERAGE_FIELDS.items()})
    ratio = args.neg_ratio if args.neg_ratio > 0 else None
    train = training_pairs(args.datasets, neg_ratio=ratio, seed=config.seed)
    dev = training_pairs(args.dev, neg_ratio=ratio, seed=config.seed)
    for name, pairs in train.items():
        console.print(f"train {name}: {len(pairs)} pairs, {sum(p.label for p in pairs)} positive")
    with progress_bar(console) as progress:
        task = progress.add_task("training", total=None)

        def report(step: int, total: int, loss: float) -> None:
            progress.update(task, completed=step, total=total, description=f"loss {loss:.3f}")

        run = train_coverage(
            train,
            dev,
            args.out,
            config,
            onnx_out=args.onnx_out,
            progress=report,
        )
    if run.onnx is not None:
        console.print(f"int8 ONNX model: {run.onnx} ({run.onnx.stat().st_size / 1e6:.1f} MB)")
    table = Table(title=f"coverage cross-encoder -> {args.out}")
    for column in ("dev set", "pairs", "ROC-AUC", "F1 @ threshold"):
        table.add_column(column, justify="right")
    for name, figures in run.calibration.per_dataset.items():
        table.add_row(
            name, f"{figures['pairs']:.0f}", f"{figures['roc_auc']:.3f}", f"{figures['f1']:.3f}"
        )
    console.print(table)
    card = run.card
    console.print(
        f"{card.steps} steps in {card.seconds:.0f} s; threshold {run.calibration.threshold:.2f} "
        f"(chosen on dev); {card.truncated_pairs} training pairs reached {config.max_length} tokens"
    )
    return 0
