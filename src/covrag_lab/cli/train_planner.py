"""``covrag-lab train planner-data`` (judged outlines: SFT examples, DPO pairs) and ``covrag-lab
train planner`` (SFT then DPO of a small LM on them).

The work itself is in :mod:`covrag_lab.train.planner_data` and :mod:`covrag_lab.train.planner`;
these commands parse the options, show progress and print what was made.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from covrag.cli.common import (
    Subparsers,
    add_llm_args,
    build_llm,
    check_outputs,
    field_default,
    progress_bar,
)

if TYPE_CHECKING:
    from covrag.types import Topic
    from covrag_lab.train.planner_data import PlannerRequest

#: The PlannerTrainConfig fields that are ``covrag-lab train planner`` options: the base model and
#: the SFT epochs of docs/experiments/17-trained-planner.md, and ``max_steps`` (a quick run).
#: The LoRA, DPO, batch and learning-rate settings keep TRL's usual values (no run compared
#: others; the trained planner did not beat the random outline there).
PLANNER_OPTIONS = ("base_model", "sft_epochs", "max_steps")


def add_request_args(
    p: argparse.ArgumentParser, datasets: Sequence[str], help_text: str, config: type[Any]
) -> None:
    """The options of the requests (``--datasets``, ``--limit-topics``, ``--per-topic``) and of
    the teacher's QTree (``--depth``, ``--branching``, defaults from ``config``), shared by
    ``train planner-data`` and ``eval planner``: the two read requests made the same way."""
    p.add_argument("--datasets", nargs="+", default=list(datasets), help=help_text)
    p.add_argument("--limit-topics", type=int, default=None, help="first N topics of each dataset")
    p.add_argument("--per-topic", type=int, default=2, help="requests per topic")
    for name in ("depth", "branching"):
        p.add_argument("--" + name, type=int, default=field_default(config, name))


def load_requests(args: argparse.Namespace, seed: int) -> tuple[list[Topic], list[PlannerRequest]]:
    """The topics of ``--datasets`` (the first ``--limit-topics`` of each, taken in turn from
    each dataset) and ``--per-topic`` requests about each, their aspects drawn with ``seed``."""
    from covrag.data import load_dataset
    from covrag_lab.train.planner_data import make_requests

    per_dataset = [load_dataset(spec)[: args.limit_topics or None] for spec in args.datasets]
    topics = [t for group in itertools.zip_longest(*per_dataset) for t in group if t is not None]
    return topics, make_requests(topics, args.per_topic, seed)


def add_train_planner_data(train: Subparsers) -> None:
    """Register ``covrag-lab train planner-data``."""
    from covrag_lab.train.planner_data import DataConfig

    p = train.add_parser(
        "planner-data",
        help="judged outlines of include/exclude requests: SFT examples and DPO pairs (LLM)",
    )
    add_request_args(
        p,
        ["argkp2021:train", "perspectrum:train"],
        "labelled topics whose questions and aspects make the requests",
        DataConfig,
    )
    p.add_argument("--out", required=True, type=Path, help="folder to write the data into")
    add_llm_args(p)  # the teacher and the judge
    p.set_defaults(run_command=run_train_planner_data)


def run_train_planner_data(args: argparse.Namespace, console: Console) -> int:
    from covrag_lab.train.planner_data import DataConfig, write_planner_data

    check_outputs([("--datasets", d) for d in args.datasets], [], [("--out", args.out)])
    config = DataConfig(depth=args.depth, branching=args.branching)
    _, requests = load_requests(args, config.seed)
    teacher = build_llm(args.llm)
    with progress_bar(console) as progress:
        task = progress.add_task("planning and judging", total=len(requests))
        card = write_planner_data(
            requests,
            teacher,
            teacher,
            args.out,
            config,
            progress=lambda _: progress.advance(task),
        )
    histogram = card["score_histogram"]["candidates"]
    console.print(
        f"{card['judged_requests']} of {card['requests']} requests judged: "
        f"{card['sft_examples']} SFT examples, {card['dpo_pairs']} DPO pairs -> {args.out}; "
        f"candidate scores 1-5: {' '.join(map(str, histogram.values()))}"
    )
    return 0


def add_train_planner(train: Subparsers) -> None:
    """Register ``covrag-lab train planner``."""
    from covrag_lab.train.planner import PlannerTrainConfig

    p = train.add_parser(
        "planner", help="SFT then DPO (TRL, LoRA) of a small LM on the planner data"
    )
    p.add_argument("--data", required=True, type=Path, help="folder of `train planner-data`")
    p.add_argument("--out", required=True, type=Path, help="folder to write sft/, dpo/ into")
    for field in dataclasses.fields(PlannerTrainConfig):
        if field.name in PLANNER_OPTIONS:
            p.add_argument(
                "--" + field.name.replace("_", "-"),
                type=type(field.default),
                default=field.default,
                help="default: %(default)s",
            )
    p.set_defaults(run_command=run_train_planner)


def run_train_planner(args: argparse.Namespace, console: Console) -> int:
    from covrag_lab.train.planner import PlannerTrainConfig, train_planner

    check_outputs([("--data", args.data)], [], [("--out", args.out)])
    config = PlannerTrainConfig(**{name: getattr(args, name) for name in PLANNER_OPTIONS})
    with progress_bar(console) as progress:
        task = progress.add_task("training", total=None)

        def report(stage: str, step: int, total: int, loss: float | None) -> None:
            shown = f"{stage} loss {loss:.3f}" if loss is not None else stage
            progress.update(task, completed=step, total=total, description=shown)

        card = train_planner(args.data, args.out, config, progress=report)
    for stage in ("sft", "dpo"):
        if card.get(stage):
            figures = card[stage]
            console.print(
                f"{stage}: {figures['steps']} steps in {figures['seconds']:.0f} s, peak "
                f"{figures['peak_rss_mb']:.0f} MB, last loss {figures['losses'][-1]:.3f} "
                f"-> {args.out / stage}"
            )
    return 0
