"""``covrag plan``: a question's split, sub-questions and (with ``--tree``) QTree and outlines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from covrag.cli.common import Subparsers, add_llm_args, build_llm
from covrag.errors import ConfigError, StructuredOutputError
from covrag.schema.plan import PlanSplit, plan_split_record, plan_tree_record

if TYPE_CHECKING:
    from covrag.pipeline.usecases import PlanResult


def register(sub: Subparsers) -> None:
    """Register ``covrag plan``."""
    p = sub.add_parser(
        "plan", help="plan a question: sub-questions, QTree and judged outlines (LLM)"
    )
    p.add_argument("request", help="the question, possibly with include/exclude instructions")
    p.add_argument(
        "--include", nargs="+", default=[], help="subtopics to cover (skips the LLM's split)"
    )
    p.add_argument(
        "--exclude", nargs="+", default=[], help="subtopics to leave out (skips the LLM's split)"
    )
    add_llm_args(p)  # the planner and the judge of its outlines
    p.add_argument("--subquestions", type=int, default=10, help="DES sub-questions (0 = none)")
    p.add_argument(
        "--from-pool",
        action="store_true",
        help="read the sub-questions off a pool retrieved for the question (key points: one "
        "per group of similar passages, each with the question it answers), instead of "
        "writing them from the question alone; points no pooled passage covers are dropped "
        "and named",
    )
    p.add_argument(
        "--corpus",
        default="bundled",
        help="--from-pool: passage JSONL, bundled name[:split], coverage JSONL, or 'bundled' "
        "(default: the pools of all bundled datasets)",
    )
    p.add_argument("--index", type=Path, default=None, help="--from-pool: a saved index")
    p.add_argument("--pool", type=int, default=50, help="--from-pool: passages to retrieve")
    p.add_argument(
        "--tree",
        action="store_true",
        help="also plan the QTree of sub-queries and its outlines, judged 1-5 (QPlanner)",
    )
    p.add_argument("--depth", type=int, default=3, help="QTree levels")
    p.add_argument("--branching", type=int, default=3, help="QTree children per node")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.set_defaults(run_command=run_plan)


def split_record(query: Any, subquestions: Any) -> dict[str, Any]:
    """The request, its split and its sub-questions, as ``--json`` prints them."""
    return plan_split_record(_split(query, subquestions))


def plan_record(plan: Any, usage: dict[str, float]) -> dict[str, Any]:
    """The split, the QTree and its outlines, as ``--json --tree`` prints them."""
    return plan_tree_record(
        _split(plan.query, plan.subquestions),
        tree=[(n.id, n.text) for n in plan.tree],
        notes=plan.tree.notes,
        candidates=plan.candidates,
        baseline=plan.baseline,
        best=plan.best,
        usage=usage,
    )


def _split(query: Any, subquestions: Any) -> PlanSplit:
    return PlanSplit.of(
        request=query.request,
        base=query.base,
        include=query.include,
        exclude=query.exclude,
        subquestions=subquestions.texts if subquestions else None,
    )


def _plan(args: argparse.Namespace, llm: Any, **how: Any) -> PlanResult:
    """The plan use case over the command's request, its include / exclude and its count of
    sub-questions; ``how`` is the rest (a tree, or the pool)."""
    from covrag.pipeline.usecases import plan

    return plan(
        args.request,
        llm,
        include=args.include,
        exclude=args.exclude,
        subquestions=args.subquestions,
        **how,
    )


def run_plan(args: argparse.Namespace, console: Console) -> int:
    llm = build_llm(args.llm)
    if args.from_pool:
        if args.tree:
            raise ConfigError("--from-pool does not plan a QTree (--tree); use one or the other")
        return _plan_from_pool(args, llm, console)
    doing = "planning the QTree and outlines" if args.tree else "splitting and decomposing"
    with console.status(f"{doing} with {llm.describe()} ...", spinner="dots"):
        try:
            planned = _plan(
                args, llm, outline=args.tree, split=True, depth=args.depth, branching=args.branching
            )
        except StructuredOutputError as exc:
            if args.json or not args.tree:
                raise
            console.print(
                f"\n[bold red]QTree / outlines could not be planned[/]: {escape(str(exc))}"
            )
            return 1
    usage = planned.usage
    if args.json:
        if planned.plan is None:
            record = plan_split_record(_split(planned.query, planned.subquestions), usage)
        else:
            record = plan_record(planned.plan, usage)
        console.print_json(json.dumps(record))
        return 0
    _print_split(planned.query, planned.subquestions, llm.describe(), console)
    if planned.plan is not None:
        _print_plan(planned.plan, console)
    print_usage(usage, console)
    return 0


def _plan_from_pool(args: argparse.Namespace, llm: Any, console: Console) -> int:
    """``--from-pool``: the key points of the question's pool, their questions and what was
    dropped."""
    with console.status(
        f"retrieving and reading the pool with {llm.describe()} ...", spinner="dots"
    ):
        planned = _plan(args, llm, pool=args.index or args.corpus, pool_k=args.pool)
    query, found = planned.query, planned.subquestions
    usage = planned.usage
    if args.json:
        split = _split(query, found)
        record = plan_split_record(split, usage)
        record["points"] = [a.metadata["point"] for a in found.aspects]
        record["dropped"] = list(found.notes)
        console.print_json(json.dumps(record))
        return 0
    _print_split(query, found, llm.describe(), console)
    for note in found.notes:
        console.print(f"  [yellow]dropped[/] {escape(note)}", highlight=False)
    print_usage(usage, console)
    return 0


def print_usage(usage: dict[str, float], console: Console) -> None:
    console.print(
        f"\n[dim]LLM: {usage['calls']:.0f} calls ({usage['cached_calls']:.0f} from the cache), "
        f"{usage['retries']:.0f} retries, {usage['prompt_tokens']:.0f} prompt + "
        f"{usage['completion_tokens']:.0f} completion tokens, {usage['seconds']:.0f} s[/]"
    )


def _print_split(query: Any, subquestions: Any, described: str, console: Console) -> None:
    """The request's split (base query, include, exclude) and its sub-questions."""
    console.rule(f"[bold]plan[/] {escape(described)}")
    console.print(f"[bold]base query[/]: {escape(query.base)}", highlight=False)
    console.print(f"[bold]include[/]: {escape('; '.join(query.include) or '-')}", highlight=False)
    console.print(f"[bold]exclude[/]: {escape('; '.join(query.exclude) or '-')}", highlight=False)
    if subquestions is None:
        return
    console.print(f"\n[bold]sub-questions[/] ({len(subquestions.aspects)})")
    for aspect in subquestions.aspects:
        factor = aspect.metadata.get("factor") or aspect.metadata.get("point")
        label = f"[dim]{escape(str(factor))}:[/] " if factor else ""
        console.print(f"  {aspect.id}  {label}{escape(aspect.text)}", highlight=False)
    if getattr(subquestions, "dropped", None) or getattr(subquestions, "spare", None):
        console.print(
            f"  [dim]{len(subquestions.dropped)} candidates dropped (near-duplicates or "
            f"not questions), {len(subquestions.spare)} left spare[/]"
        )


def _print_plan(plan: Any, console: Console) -> None:
    """The QTree (the chosen outline in green), its notes and the judged outlines."""
    best = set(plan.best.node_ids)
    tree = Tree(f"[bold]QTree[/] ({len(plan.tree)} nodes; [green]green[/] = chosen outline)")
    branches: dict[str | None, Tree] = {None: tree}
    for node in plan.tree:
        label = f"{node.id} {node.text}"
        branches[node.id] = branches[node.parent_id].add(
            f"[green]{label}[/]" if node.id in best else label
        )
    console.print()
    console.print(tree)
    for note in plan.tree.notes:
        console.print(f"[yellow]short of the asked shape[/]: {escape(note)}", highlight=False)
    table = Table(title="outlines, judged 1-5 against the request", show_lines=True)
    for column in ("outline", "nodes", "score", "rationale"):
        table.add_column(column)
    for n, outline in enumerate(plan.candidates, start=1):
        mark = " (chosen)" if outline is plan.best else ""
        row = (outline.render(), str(outline.score), outline.rationale)
        table.add_row(f"LLM {n}{mark}", *(escape(cell) for cell in row))
    baseline = plan.baseline
    row = (baseline.render(), str(baseline.score), baseline.rationale)
    table.add_row("random baseline", *(escape(cell) for cell in row))
    console.print(table)
