"""What ``covrag ask`` shows on the console: the plan, the selection, the answer and the costs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from covrag.pipeline import AskResult
    from covrag.types import Passage


def covered_by(result: AskResult, number: Mapping[str, int]) -> dict[str, tuple[int, ...]]:
    """Aspect id -> the context numbers of the selected passages that cover it (estimated)."""
    found: dict[str, list[int]] = {a: [] for a in result.coverage.aspect_ids}
    for pid, n in sorted(number.items(), key=lambda item: item[1]):
        for aspect in result.coverage.aspects_of(pid):
            found[aspect].append(n)
    return {a: tuple(ns) for a, ns in found.items()}


def coverage_cell(
    result: AskResult, number: Mapping[str, int], aspect_id: str, covering: Sequence[int]
) -> str:
    """The plan table's cell: each covering passage (``covering``, from :func:`covered_by`)
    with its probability (``[1] 0.83``), or "not covered" with the best probability any
    selected passage reached, so that a near miss and a blank can be told apart."""
    coverage = result.coverage
    if aspect_id not in coverage.aspect_ids:
        return "[red]not covered[/]"
    column = coverage.aspect_ids.index(aspect_id)
    probs = {
        n: float(coverage.probs[coverage.passage_ids.index(pid), column])
        for pid, n in number.items()
        if pid in coverage.passage_ids
    }
    if covering:
        return escape(" ".join(f"[{n}] {probs[n]:.2f}" for n in covering))
    best = f" (best {max(probs.values()):.2f})" if probs else ""
    return f"[red]not covered[/]{best}"


def print_selection(
    result: AskResult, number: Mapping[str, int], aspect_text: Mapping[str, str], console: Console
) -> None:
    """The selection table: each pick, its passage (with its document's title) and what it
    newly covers; one line when nothing was selected."""
    by_id = {p.id: p for p in result.topic.passages}
    title = f"Selection: {result.selection.selector}, k={len(result.selection)}"
    if not result.selection.steps:
        # An empty table is as narrow as its headers, and its title would wrap to fit them.
        console.print(
            f"[italic]{escape(title)}[/]: no passage selected (none in the pool cleared the "
            "coverage floor and the topic gate)",
            highlight=False,
        )
    else:
        table = Table(title=title)
        table.add_column("[n]", justify="right")
        table.add_column("passage")
        table.add_column("newly covers")
        for step in result.selection.steps:
            table.add_row(
                str(number[step.passage_id]),
                passage_cell(by_id[step.passage_id]),
                escape("\n".join(aspect_text[a] for a in step.newly_covered) or "-"),
            )
        console.print(table)


def print_evidence(result: AskResult, number: Mapping[str, int], console: Console) -> None:
    """The entries the check looked up for what the answer names (none: nothing printed)."""
    evidence = result.generation.evidence
    if not evidence:
        return
    table = Table(
        title="Looked up for the answer: entries defining what it names (not selected)",
        caption="the citation check read the answer against these too; the writer did not see them",
    )
    table.add_column("[n]", justify="right")
    table.add_column("passage")
    for p in evidence:
        table.add_row(str(number[p.id]), passage_cell(p))
    console.print(table)


def passage_cell(passage: Passage) -> str:
    """A passage as a table shows it: its first 220 characters, then (dimmed) its document's
    title, where it has one, and its id; escaped, so its brackets print as written."""
    title = passage.metadata.get("title")
    origin = f"{title}, " if title else ""
    more = "..." if len(passage.text) > 220 else ""
    return f"{escape(passage.text[:220])}{more} [dim]({escape(origin + passage.id)})[/]"


def answer_cell(sentences: Sequence[int]) -> str:
    """The plan table's answer cell: the answer sentences (1-based) that state the aspect."""
    if not sentences:
        return "[red]not in the answer[/]"
    return "sentence " + ", ".join(str(i + 1) for i in sentences)


def print_ask(result: AskResult, console: Console) -> None:
    """Show one ``covrag ask`` run: the plan table, the selection, the answer with its context
    numbers, the critiques and the costs."""
    topic = result.topic
    aspect_text = {a.id: a.text for a in topic.aspects}
    console.rule(f"[bold]{escape(result.query.request)}[/]")
    number = {pid: i for i, pid in enumerate(result.selection.passage_ids, start=1)}
    _print_plan(result, number, console)

    print_selection(result, number, aspect_text, console)
    for passage in result.generation.evidence:  # numbered after the context
        number.setdefault(passage.id, len(number) + 1)
    print_evidence(result, number, console)
    if result.uncovered:
        console.print("[bold]Not covered by the selection:[/]")
        for a in result.uncovered:
            console.print(f"  - {escape(a.text)}", highlight=False)
    else:
        console.print("Every aspect is covered by the selection.")

    for warning in result.warnings:
        console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    _print_answer(result, number, aspect_text, console)
    _print_costs(result, console)


def _print_plan(result: AskResult, number: Mapping[str, int], console: Console) -> None:
    """The plan table: each aspect, the selected passages that cover it and the answer
    sentences that state it."""
    topic = result.topic
    covering = covered_by(result, number)
    wanted = [a for a in topic.aspects if a.polarity != "exclude"]
    answered = sum(1 for a in wanted if covering.get(a.id))
    in_answer = {row.aspect_id: row for row in result.aspect_coverage}
    stated = sum(1 for row in in_answer.values() if row.in_answer)
    table = Table(
        title="Plan: the aspects a complete answer covers",
        caption=f"{answered} of {len(wanted)} wanted aspects are covered by the selected "
        f"passages, {stated} by the answer (a supported sentence cites a passage that covers "
        f"it; estimated probability >= {result.coverage.threshold_text()})",
    )
    table.add_column("id")
    table.add_column("aspect")
    table.add_column("kind")
    table.add_column("covered by")
    table.add_column("in the answer")
    for a in topic.aspects:
        kind = a.polarity if a.polarity != "neutral" else "sub-question"
        shown = (
            "(excluded)"
            if a.polarity == "exclude"
            else coverage_cell(result, number, a.id, covering.get(a.id, ()))
        )
        row = in_answer.get(a.id)
        said = "-" if row is None else answer_cell(row.answer_sentences)
        table.add_row(escape(a.id), escape(a.text), kind, shown, said)
    console.print(table)


def _print_answer(
    result: AskResult, number: Mapping[str, int], aspect_text: Mapping[str, str], console: Console
) -> None:
    """The final answer, a numbered sentence a line (a heading per aspect of a planned answer),
    then its problems not already warned of and each critique's feedback."""
    final = result.generation.drafts[-1]
    console.print(f"\n[bold]Answer[/] (after {len(result.generation.drafts) - 1} passes)")
    heading = None
    for i, sentence in enumerate(final.answer.sentences, start=1):
        if sentence.aspect_id is not None and sentence.aspect_id != heading:
            heading = sentence.aspect_id  # a paragraph per aspect: name the aspect first
            console.print(
                f"  [bold]{escape(aspect_text.get(heading, heading))}[/]", highlight=False
            )
        marks = "".join(f"[{number[p]}]" for p in sentence.passage_ids if p in number)
        body = escape(sentence.text)
        text = f"[italic]{body}[/]" if sentence.framing else f"{body} {escape(marks)}"
        if sentence.check is not None and not sentence.supported:
            text += " [red](unsupported: no passage holds this)[/]"
        console.print(f"  {i}. {text}", highlight=False)
    for problem in final.problems:
        # the run's warnings are printed above, some as logged ("answer to 8 passages: ...")
        if not any(problem in warning for warning in result.warnings):
            console.print(f"[yellow]warning:[/] {escape(problem)}", highlight=False)
    for i, critique in enumerate(result.generation.critiques, start=1):
        if critique.feedback:
            console.print(f"[dim]critique {i}:\n{escape(critique.feedback)}[/]", highlight=False)


def _print_costs(result: AskResult, console: Console) -> None:
    """The costs table: per stage, seconds, CPU seconds, LLM calls and tokens, pairs scored."""
    table = Table(title="Costs")
    columns = ("stage", "seconds", "CPU s", "LLM calls", "prompt tokens", "completion tokens")
    for column in (*columns, "pairs"):
        table.add_column(column, justify="right" if column != "stage" else "left")
    for stage, cost in result.costs.items():
        table.add_row(
            stage,
            f"{cost.seconds:.1f}",
            f"{cost.cpu_seconds:.1f}",
            f"{cost.llm.calls} (+{cost.llm.cached_calls} cached)",
            str(cost.llm.prompt_tokens),
            str(cost.llm.completion_tokens),
            str(cost.pairs_scored or "-"),
        )
    console.print(table)
