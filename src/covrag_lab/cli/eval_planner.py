"""``covrag-lab eval-planner``: compare planners (base, SFT, SFT+DPO, random) on held-aside
requests.

``covrag-lab eval planner`` is routed here too, by :func:`route`: the spelling of the days when
this command sat beside ``covrag eval``, whose options kept ``planner`` from being an argparse
sub-command of it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from covrag.cli.common import Subparsers, add_llm_args, build_llm, check_outputs, progress_bar
from covrag.files import atomic_write_text
from covrag.schema.cards import PlannerTrainCard, read_card
from covrag_lab.cli.train_planner import add_request_args, load_requests

COMMAND = "eval-planner"


def route(argv: Sequence[str]) -> list[str]:
    """``eval planner ...`` -> ``eval-planner ...`` (the first positional words only)."""
    args = list(argv)
    first = next((i for i, a in enumerate(args) if not a.startswith("-")), None)
    if first is not None and args[first : first + 2] == ["eval", "planner"]:
        args[first : first + 2] = [COMMAND]
    return args


def register(sub: Subparsers) -> None:
    from covrag_lab.train.planner_eval import EvalConfig

    p = sub.add_parser(
        COMMAND,
        prog="covrag-lab eval planner",
        help="judge a trained planner's outlines beside the random outline (also: covrag-lab "
        "eval planner)",
        description="Judge the outlines of planners on held-aside requests, beside the random "
        "outline: score 1-5, violations of the exclude constraint, and the selection their "
        "outlines find; paired tests between planners.",
    )
    add_request_args(
        p,
        ["argkp2021:dev", "perspectrum:dev"],
        "held-aside labelled topics (never a test split)",
        EvalConfig,
    )
    p.add_argument(
        "--trained",
        type=Path,
        required=True,
        help="folder of `covrag-lab train planner`: its base, sft and dpo models are compared",
    )
    add_llm_args(p)  # the judge, and the teacher of the random outline's QTree
    p.add_argument(
        "--retries",
        type=int,
        default=EvalConfig().retries,
        help="extra attempts per LLM step (default: %(default)s)",
    )
    p.add_argument("--out", type=Path, default=None, help="JSON file of the results")
    p.set_defaults(run_command=run_eval_planner)


def planner_specs(trained: Path) -> dict[str, str]:
    """Planner name -> LLM spec: the trained folder's base, sft and dpo models."""
    card = read_card(PlannerTrainCard, trained / "card.json")
    specs = {"base": f"transformers(model={card.base_model!r})"}
    for stage in ("sft", "dpo"):
        if (trained / stage).is_dir():
            specs[stage] = f"transformers(model={str(trained / stage)!r})"
    return specs


def run_eval_planner(args: argparse.Namespace, console: Console) -> int:
    from covrag.embed import default_encoder
    from covrag.llm import parse_llm
    from covrag_lab.train.planner_eval import EvalConfig, evaluate_planners, summarise

    check_outputs([("--datasets", d) for d in args.datasets], [("--out", args.out)])
    specs = planner_specs(args.trained)
    config = EvalConfig(depth=args.depth, branching=args.branching, retries=args.retries)
    topics, requests = load_requests(args, config.seed)
    planners = {name: parse_llm(spec) for name, spec in specs.items()}
    judge = build_llm(args.llm)
    with progress_bar(console) as progress:
        task = progress.add_task("planning and judging", total=len(requests))
        results = evaluate_planners(
            requests,
            {t.query_id: t for t in topics},
            planners,
            judge,
            default_encoder(),
            config,
            progress=lambda _: progress.advance(task),
        )
    summary = summarise(results, seed=config.seed)
    summary.update(planner_specs=specs, judge=judge.describe(), requests=len(requests))
    if args.out is not None:
        payload = {
            **summary,
            "results": [r.__dict__ | {"measures": dict(r.measures)} for r in results],
        }
        atomic_write_text(args.out, json.dumps(payload, indent=2, default=list) + "\n")
    _print(summary, console)
    return 0


def _print(summary: dict[str, Any], console: Console) -> None:
    planners: dict[str, Any] = summary["planners"]
    table = Table(title=f"planners on {summary['requests']} requests, judged by {summary['judge']}")
    for column in ("planner", "score", "95% CI", "failed", "violations", "include hit"):
        table.add_column(column, justify="right")
    table.add_column("alpha-nDCG@10", justify="right")
    table.add_column("Excl@10", justify="right")
    for name, row in planners.items():
        ci = row["score_ci95"]
        table.add_row(
            name,
            f"{row['score']:.2f}",
            f"{ci[0]:.2f}-{ci[1]:.2f}" if ci else "-",
            str(row["failed"]),
            "-" if row["violation_rate"] is None else f"{row['violation_rate']:.2f}",
            "-" if row["include_hit_rate"] is None else f"{row['include_hit_rate']:.2f}",
            f"{row['alpha-nDCG@10']:.4f}",
            f"{row['Excl@10']:.4f}",
        )
    console.print(table)
    for test in summary["paired_tests"]:
        if test["measure"] == "score":
            console.print(
                f"{test['a']} - {test['b']}: score {test['diff']:+.3f} "
                f"(p {test['p']:.3f}, Holm {test['p_holm']:.3f})"
            )
