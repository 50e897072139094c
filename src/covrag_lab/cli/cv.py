"""``covrag-lab cv``: k-fold leave-topics-out cross-validation of choosing among settings."""

from __future__ import annotations

import argparse
import contextlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from covrag.cli.common import (
    Subparsers,
    add_config_options,
    add_prepare_args,
    aspect_sources,
    check_outputs,
    config_from_args,
    err_console,
    parse_budget,
    progress_bar,
    write_files,
)
from covrag.errors import ConfigError
from covrag.types import Topic
from covrag_lab.cv import CVConfig

if TYPE_CHECKING:
    from covrag_lab.cv import CVResult, DevReport, HoldOut, Setting

#: The CVConfig fields that are ``covrag-lab cv`` options (settings are chosen by alpha-nDCG@10 at
#: k = 10, as in every documented run: docs/experiments/12, 20).
CV_OPTIONS = ("folds", "seed", "n_resamples")
#: The budget every setting selects under.
CV_BUDGET = "k=10"
#: The learning rate of the cross-encoders trained per fold (``--train-coverage``): every
#: documented per-fold run fine-tuned a first-stage model at 2e-5 (docs/BENCHMARKS.md,
#: docs/experiments/20-question-aware-coverage.md); 4 negatives per positive, one epoch.
FOLD_LEARNING_RATE = 2e-5
#: What ``covrag-lab cv --out DIR`` writes in DIR (an earlier run's folder may be replaced).
CV_ENTRIES = frozenset({"summary.json"})


def register(sub: Subparsers) -> None:
    p = sub.add_parser(
        "cv",
        help="cross-validate choosing among selectors and coverage settings (leave topics out)",
    )
    p.add_argument(
        "--dataset",
        required=True,
        help="bundled dataset name (its --splits are pooled), name:split, or a coverage JSONL",
    )
    p.add_argument(
        "--splits",
        nargs="+",
        default=["train", "dev"],
        help="splits of a bundled dataset to pool (default: train dev; never test)",
    )
    p.add_argument("--selectors", nargs="+", required=True, help="selector specs to choose among")
    p.add_argument("--coverage", nargs="+", default=["gold"], help="coverage estimator specs")
    p.add_argument(
        "--calibrate-threshold",
        nargs="+",
        default=[],
        metavar="SELECTOR",
        help="also these selectors over each --coverage estimator whose threshold is fitted per "
        "fold (F1 over the training topics' labelled pairs)",
    )
    _add_train_options(p)
    add_config_options(p, CVConfig, CV_OPTIONS)
    add_prepare_args(p, multiple=True, exclusion=False)  # no CV of an exclusion was run
    p.add_argument(
        "--dev-report",
        action="store_true",
        help="print each setting's dev figure and the chosen setting's beside the CV figure",
    )
    p.add_argument("--out", type=Path, default=None, help="folder for summary.json")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(run_command=run_cv_command)


def _add_train_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "estimators trained per fold",
        "a cross-encoder trained on each fold's training topics, then read by each --selectors "
        "entry that reads coverage (bundled datasets)",
    )
    g.add_argument(
        "--train-coverage",
        nargs="+",
        default=[],
        metavar="FORMS",
        help="train on these aspect forms, one setting per value, forms joined by '+': "
        "statements, questions, paraphrases (e.g. statements+questions)",
    )
    g.add_argument("--train-cache", type=Path, default=None, help="folder keeping fold models")
    g.add_argument(
        "--train-base",
        default=None,
        help="model to start from (default: MiniLM; e.g. a first-stage cross-encoder), trained "
        "at learning rate 2e-5",
    )


def trained_settings(args: argparse.Namespace) -> list[Setting]:
    """The settings of ``--train-coverage``: each forms value x each coverage-reading selector."""
    from covrag.coverage.cross_encoder import CrossEncoderCoverage
    from covrag.data import BUNDLED, load_dataset
    from covrag.data.question_forms import FORMS
    from covrag.pipeline import build_methods
    from covrag_lab.train.coverage import TrainConfig
    from covrag_lab.train.cv_coverage import TrainedCoverage

    if not args.train_coverage:
        return []
    if args.dataset not in BUNDLED or args.train_cache is None:
        raise ConfigError("--train-coverage needs a bundled --dataset and --train-cache")
    variants = [tuple(v.split("+")) for v in args.train_coverage]
    wanted = {f for v in variants for f in v}
    bad = sorted(wanted - set(FORMS))
    if bad:
        raise ConfigError(f"--train-coverage: unknown form {bad[0]!r} (forms: {', '.join(FORMS)})")
    splits = dict.fromkeys(s.split(":")[0] for s in args.splits)
    forms = {
        form: {
            t.query_id: t
            for split in splits
            for t in load_dataset(f"{args.dataset}:{split}:{form}")
        }
        for form in wanted
    }
    config = TrainConfig(base_model=args.train_base, learning_rate=FOLD_LEARNING_RATE)
    methods = [
        m
        for m in build_methods(args.selectors, ["cross-encoder"])
        if isinstance(m.coverage, CrossEncoderCoverage)
    ]
    return [
        TrainedCoverage(m, forms, v, config, args.train_cache) for v in variants for m in methods
    ]


def cv_topics(dataset: str, splits: Sequence[str]) -> tuple[list[Topic], list[Topic]]:
    """The topics to cross-validate, and the dev topics (among them or not)."""
    from covrag.data import BUNDLED, load_dataset

    if dataset in BUNDLED:
        if any(s.split(":")[0] == "test" for s in splits):
            raise ConfigError("test splits are withheld: cross-validate on train and dev")
        topics = [t for split in dict.fromkeys(splits) for t in load_dataset(f"{dataset}:{split}")]
        # dev in the form the splits name (``dev:questions`` beside ``train:questions``)
        form = next((s for s in splits if s.split(":")[0] == "dev"), None)
        suffix = next((s[len(s.split(":")[0]) :] for s in splits if ":" in s), "")
        return topics, load_dataset(f"{dataset}:{form or 'dev' + suffix}")
    topics = load_dataset(dataset)
    return topics, [t for t in topics if t.split == "dev"]


def build_settings(args: argparse.Namespace) -> list[Setting]:
    """The fixed methods of ``--selectors`` x ``--coverage`` x ``--aspects``, then the fitted
    settings of ``--calibrate-threshold``."""
    from covrag.pipeline import build_methods
    from covrag_lab.cv import CalibratedThreshold

    settings: list[Setting] = list(build_methods(args.selectors, args.coverage, args.aspects))
    if args.calibrate_threshold:
        for method in build_methods(args.calibrate_threshold, args.coverage):
            if method.coverage is not None and repr(method.coverage) != "gold":
                settings.append(CalibratedThreshold(method))
    return settings + trained_settings(args)


def run_cv_command(args: argparse.Namespace, console: Console) -> int:
    check_outputs([("--dataset", args.dataset)], [], [("--out", args.out)])
    # The folder is staged first (as for bench): an unwritable --out fails before the work, and
    # a killed or failed run leaves --out as it was.
    with cv_folder(args.out) as folder:
        result, report = _cv(args, console)
        summary = {**result.to_json(), "dev": report.to_json() if report else None}
        if folder is not None:
            write_files({folder / "summary.json": json.dumps(summary, indent=2) + "\n"})
    if args.json:
        console.print_json(data=summary)
        return 0
    console.print(cv_table(result, report))
    console.print(fold_table(result))
    console.print(cv_summary(result, report))
    if args.out:
        console.print(f"wrote {args.out / 'summary.json'}")
    return 0


def cv_folder(out: Path | None) -> contextlib.AbstractContextManager[Path | None]:
    """The staged folder ``covrag-lab cv`` writes into (renamed to ``out`` at the end), or
    nothing."""
    from covrag.files import staged_folder

    return contextlib.nullcontext() if out is None else staged_folder(out, CV_ENTRIES)


def _cv(args: argparse.Namespace, console: Console) -> tuple[CVResult, DevReport | None]:
    from covrag.pipeline import config_for
    from covrag_lab.cv import base_method, cv_measures, dev_report, run_cv, scores_for

    topics, dev = cv_topics(args.dataset, args.splits)
    ids = {t.query_id for t in topics}
    extra = [t for t in dev if t.query_id not in ids] if args.dev_report else []
    settings = build_settings(args)
    budget = parse_budget(CV_BUDGET)
    cv = config_from_args(CVConfig, args, CV_OPTIONS)
    methods = [base_method(s) for s in settings]
    names = sorted({m.aspects for m in methods} - {"gold"})
    sources = aspect_sources(args, names) if names else {}
    config = config_for([m.selector for m in methods], args.relevance)
    measures = cv_measures(budget, cv, topics)
    scores = scores_for([*topics, *extra], settings, budget, measures, config, sources)
    name = args.dataset + ("" if ":" in args.dataset else f" ({'+'.join(args.splits)})")
    with progress_bar(console) as progress:
        task = progress.add_task(f"cv {name}", total=len(topics))
        result = run_cv(
            name, topics, settings, budget, cv, scores=scores,
            progress=lambda _: progress.advance(task),
        )  # fmt: skip
    if not args.dev_report:
        return result, None
    if args.train_coverage:
        # Fitting on every topic and on the non-dev ones trains a model for each, beyond the folds.
        err_console.print(
            "dev report: each --train-coverage setting trains two more models (on all topics, "
            "and on the non-dev topics), each about as long as a fold's"
        )
    return result, dev_report(settings, result, scores, [t.query_id for t in dev])


def _cell(mean: float, ci: tuple[float, float]) -> str:
    return f"{mean:.3f} [dim]±{(ci[1] - ci[0]) / 2:.2f}[/]"


def cv_table(result: CVResult, report: DevReport | None) -> Table:
    """The procedure's CV figures, then each setting's over all topics, dev and times chosen."""
    table = Table(
        title=f"{result.dataset}: {len(result.fold_of)} topics, {result.folds} folds "
        f"(seed {result.seed}), budget {result.budget}, chosen by {result.measure}"
    )
    table.add_column("setting", overflow="fold", min_width=16)
    for spec in result.measures:
        table.add_column(spec, justify="right")
    if report is not None:
        table.add_column(f"dev {result.measure}", justify="right")
    table.add_column("chosen", justify="right")
    rows = [result.procedure, *result.settings]
    for row in rows:
        cells = [_cell(row.means[m], row.ci[m]) for m in result.measures]
        if report is not None:
            dev = report.chosen.mean if row is result.procedure else report.settings[row.name]
            cells.append(f"{dev:.3f}")
        cells.append("-" if row is result.procedure else f"{row.chosen}/{result.folds}")
        name = f"[bold]{escape(row.name)}[/]" if row is result.procedure else escape(row.name)
        table.add_row(name, *cells, end_section=row is result.procedure)
    table.caption = (
        "mean ± half-width of the 95% bootstrap CI over topics. First row: each topic scored by "
        "the setting chosen on the other folds (the CV estimate of choosing); then each setting "
        "over all topics (a fitted setting: fitted on the other folds); chosen = folds that "
        "chose it"
    )
    return table


def fold_table(result: CVResult) -> Table:
    table = Table(title="folds")
    for column in ("fold", "held-out topics", "chosen", f"train {result.measure}"):
        table.add_column(column, overflow="fold")
    table.add_column(f"held-out {result.measure}", justify="right")
    for fold in result.fold_results:
        chosen = fold.chosen if fold.method == fold.chosen else f"{fold.chosen}: {fold.method}"
        table.add_row(
            str(fold.fold),
            str(len(fold.test_topics)),
            escape(chosen),
            f"{fold.train_mean:.3f}",
            f"{fold.test_mean:.3f}",
        )
    return table


def cv_summary(result: CVResult, report: DevReport | None) -> str:
    low, high = result.procedure.ci[result.measure]
    text = (
        f"CV estimate of choosing by {result.measure}: "
        f"[bold]{result.procedure.means[result.measure]:.3f}[/] (95% CI {low:.3f}-{high:.3f}, "
        f"{len(result.fold_of)} held-out topics)"
    )
    if report is None:
        return text
    label = "chosen on every CV topic" + ("" if report.cross_validated else ", dev held out")
    lines = [text, _hold_line(label, report.chosen, report)]
    if report.held_out is not None:
        lines.append(_hold_line("chosen without the dev topics", report.held_out, report))
    return "\n".join(lines)


def _hold_line(label: str, hold: HoldOut, report: DevReport) -> str:
    return (
        f"{label} ({hold.train_topics} topics): {escape(hold.method)}; "
        f"dev ({len(report.topics)} topics) {hold.mean:.3f}"
    )
