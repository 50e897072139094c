"""The report of a selection run: per topic, the heatmap, the trace, the gaps and the answer."""

from __future__ import annotations

import numpy as np

from covrag.report.answer_html import (
    AnswerView,
    costs_section,
    passage_anchor,
    passes_section,
    source_line,
    warnings_section,
)
from covrag.report.page import page
from covrag.report.runfile import RunFile, TopicRun
from covrag.report.svg import HeatmapRow, esc, heatmap_svg, scale_svg
from covrag.schema.ask import FiltersOut


def render_run(run: RunFile) -> str:
    """The HTML report of a run file."""
    sections = [_topic_section(i, t) for i, t in enumerate(run.topics)]
    nav = ""
    if len(run.topics) > 1:
        options = "".join(
            f'<option value="t{i}">{esc(t.topic.query_id)}: {esc(_short(t.topic.query, 90))}'
            "</option>"
            for i, t in enumerate(run.topics)
        )
        nav = (
            f'<nav><label>Topic ({len(run.topics)}): <select id="topic-picker">{options}'
            "</select></label></nav>"
        )
    facts = [
        ("dataset", run.dataset),
        ("selector", run.selector),
        ("coverage", run.coverage),
        ("budget", run.budget),
    ]
    subtitle = " \u00b7 ".join(f"{k}: {v}" for k, v in facts if v) or "covrag selection run"
    summary = _summary(run)
    return page("covrag coverage report", subtitle, summary + nav + "".join(sections))


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _wanted(run: TopicRun) -> list[str]:
    return [a.id for a in run.topic.aspects if a.polarity != "exclude"]


def _in_context(run: TopicRun) -> dict[str, int]:
    """Aspect id -> the pick (1-based) of the first selected passage that covers it: its
    probability reaches the coverage matrix's threshold, the one threshold every part of the
    report uses (the heatmap's dots, the answer's coverage)."""
    coverage = run.coverage
    if coverage is None:
        return {}
    row_of = {pid: i for i, pid in enumerate(coverage.passage_ids)}
    covered = np.asarray(coverage.probs) >= coverage.thresholds
    first: dict[str, int] = {}
    for r, step in enumerate(run.selection.steps, start=1):
        if step.passage_id not in row_of:
            continue
        for j in np.flatnonzero(covered[row_of[step.passage_id]]):
            first.setdefault(coverage.aspect_ids[j], r)
    return first


def _summary(run: RunFile) -> str:
    wanted = sum(len(_wanted(t)) for t in run.topics)
    covered = sum(len(set(_in_context(t)) & set(_wanted(t))) for t in run.topics)
    picked = sum(len(t.selection) for t in run.topics)
    return (
        '<section class="block"><h2>Summary</h2>'
        f"<p>{len(run.topics)} topic(s), {picked} passage(s) selected; the selections cover "
        f"<b>{covered}</b> of {wanted} wanted aspects under their coverage matrices.</p></section>"
    )


def _topic_section(ti: int, run: TopicRun) -> str:
    topic = run.topic
    index = {p.id: i for i, p in enumerate(topic.passages)}
    rank = {s.passage_id: r for r, s in enumerate(run.selection.steps, start=1)}
    labels = {a.id: f"A{j}" for j, a in enumerate(topic.aspects, start=1)}
    tokens = run.selection.tokens_used
    head = (
        f'<section class="topic" id="t{ti}"><h2>{esc(topic.query_id)}: {esc(topic.query)}</h2>'
        f'<p class="muted">selector <b>{esc(run.selection.selector)}</b> \u00b7 budget '
        f"{esc(run.budget or 'unknown')} \u00b7 {len(run.selection)} of {len(topic.passages)} "
        f"passages \u00b7 {tokens} tokens"
        + (f" \u00b7 coverage <b>{esc(run.coverage.source)}</b>" if run.coverage else "")
        + "</p>"
    )
    parts = [head]
    if run.ask is not None:
        parts.append(warnings_section(run.ask))
    parts.append(_aspects_table(run, labels))
    parts.append(_heatmap(ti, run, index, rank, labels))
    parts.append(_trace(ti, run, index, labels))
    if run.answer is not None:
        parts.append(AnswerView(ti, run, rank).section())
    if run.ask is not None:
        parts.append(passes_section(run.ask))
        parts.append(costs_section(run.ask))
    parts.append(_passages(ti, run, rank))
    parts.append("</section>")
    return "".join(parts)


def _aspects_table(run: TopicRun, labels: dict[str, str]) -> str:
    first = _in_context(run)
    answered = (
        {row.aspect_id: row.in_answer for row in run.ask.aspect_coverage}
        if run.ask is not None and run.ask.aspect_coverage
        else None
    )
    rows = []
    for aspect in run.topic.aspects:
        excluded = aspect.polarity == "exclude"
        if run.coverage is None:
            status = '<span class="muted">unknown (no coverage matrix)</span>'
        elif aspect.id in first and excluded:
            status = f'<span class="tag exclude">unwanted, covered by #{first[aspect.id]}</span>'
        elif aspect.id in first:
            status = f'<span class="in-context">covered by #{first[aspect.id]}</span>'
        elif excluded:
            status = '<span class="tag exclude">excluded, avoided</span>'
        else:
            status = '<span class="tag uncovered">uncovered</span>'
        in_answer = ""
        if answered is not None:
            state = answered.get(aspect.id)
            in_answer = (
                '<td class="muted">-</td>'
                if state is None
                else '<td class="in-answer">yes</td>'
                if state
                else '<td class="in-answer"><span class="tag uncovered">no</span></td>'
            )
        kind = "exclude" if excluded else ""
        rows.append(
            f'<tr class="aspect {kind}"><td>{esc(labels[aspect.id])}</td>'
            f'<td class="pid">{esc(aspect.id)}</td><td>{esc(aspect.text)}</td>'
            f"<td>{esc(aspect.polarity)}{' (vital)' if aspect.vital else ''}</td>"
            f"<td>{status}</td>{in_answer}</tr>"
        )
    uncovered = [a for a in run.topic.aspects if a.polarity != "exclude" and a.id not in first]
    note = ""
    if run.coverage is not None:
        note = (
            f"<p><b>Uncovered</b> by the context ({len(uncovered)}): "
            + (
                ", ".join(f'<span class="tag uncovered">{esc(a.text)}</span>' for a in uncovered)
                or "none"
            )
            + f" (covered: a selected passage's probability reaches the threshold "
            f"{esc(run.coverage.threshold_text())})</p>"
        )
    answer_head = "<th>in answer</th>" if answered is not None else ""
    return (
        "<h3>Aspects</h3><table><thead><tr><th></th><th>id</th><th>aspect</th><th>polarity</th>"
        f"<th>in context</th>{answer_head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"{note}"
    )


def _heatmap(
    ti: int,
    run: TopicRun,
    index: dict[str, int],
    rank: dict[str, int],
    labels: dict[str, str],
) -> str:
    coverage = run.coverage
    if coverage is None:
        return (
            '<h3>Coverage heatmap</h3><p class="muted">This selector read no coverage matrix, '
            "so there is none to show.</p>"
        )
    filters = run.ask.filters if run.ask is not None else None
    by_id = {a.id: a for a in run.topic.aspects}
    excluded = [by_id[a].polarity == "exclude" for a in coverage.aspect_ids]
    floor = filters.floor if filters is not None and filters.floor > 0 else None
    probs = np.asarray(coverage.probs)
    wanted = ~np.asarray(excluded, dtype=bool)
    support = probs[:, wanted].max(axis=1) if wanted.any() and len(probs) else np.zeros(len(probs))
    row_of = {pid: i for i, pid in enumerate(coverage.passage_ids)}
    selected = [s.passage_id for s in run.selection.steps if s.passage_id in row_of]
    rest = [pid for pid in coverage.passage_ids if pid not in rank]
    rows = [
        HeatmapRow(
            row_of[pid],
            pid,
            passage_anchor(ti, index[pid]),
            rank.get(pid, 0),
            floor is not None and pid not in rank and support[row_of[pid]] < floor,
        )
        for pid in [*selected, *rest]
    ]
    svg = heatmap_svg(coverage, rows, [labels[a] for a in coverage.aspect_ids], excluded)
    return (
        "<h3>Coverage heatmap</h3>"
        f'<p class="muted">Rows: passages, the {len(selected)} selected first (in pick order, '
        "highlighted), then the rest of the pool. Columns: aspects (red = excluded). Colour: "
        "estimated probability; a dot marks a covered pair (probability at or above the "
        f"threshold {coverage.threshold_text()}). An aspect is covered by the context only "
        f"through a selected row.</p>{_filters_note(filters)}"
        f"{scale_svg(coverage.threshold, floor)}"
        f'<div class="figure">{svg}</div>'
    )


def _filters_note(filters: FiltersOut | None) -> str:
    """What the coverage floor and the topic gate let through before selection."""
    if filters is None:
        return ""
    floor = (
        f"coverage floor <b>{filters.floor:g}</b>: {filters.cleared_floor} of {filters.pool} "
        f"passages reach it (best support {filters.best_support:.2f}; rows marked \u2715 fall "
        "below it on the sub-questions)"
        if filters.floor > 0
        else "no coverage floor"
    )
    best = filters.best_similarity
    gate = (
        f"topic gate <b>{filters.gate:g}</b>: {filters.cleared_gate} of {filters.pool} are "
        "that similar to the question" + (f" (best {best:.2f})" if best is not None else "")
        if filters.gate > 0
        else "no topic gate"
    )
    names = (
        f"; the name filter removed {filters.off_subject} passages of documents not about the "
        "names the question asks about"
        if filters.off_subject
        else ""
    )
    if filters.judged == "question":
        return (
            f'<p class="filters">Filters of the question: {floor}; {gate}{names}; '
            f"{filters.cleared} passages clear every filter, so the question is answered, and "
            f"the selector chose among the <b>{filters.kept}</b> the name filter keeps.</p>"
        )
    return (
        f'<p class="filters">Filters before selection: {floor}; {gate}{names}; '
        f"<b>{filters.kept}</b> clear every filter and are the only candidates the selector "
        "saw: a covered dot on any other row does not make its aspect covered.</p>"
    )


def _trace(ti: int, run: TopicRun, index: dict[str, int], labels: dict[str, str]) -> str:
    text = {a.id: a.text for a in run.topic.aspects}
    rows = []
    for r, step in enumerate(run.selection.steps, start=1):
        newly = "".join(
            f'<span class="tag">{esc(labels[a])}: {esc(_short(text[a], 70))}</span>'
            for a in step.newly_covered
        )
        score = "" if step.score != step.score else f"{step.score:.3f}"  # NaN: not recorded
        anchor = passage_anchor(ti, index[step.passage_id])
        rows.append(
            f'<tr><td class="num rank">#{r}</td><td><a class="pid" href="#{anchor}">'
            f'{esc(step.passage_id)}</a></td><td class="num">{score}</td>'
            f'<td class="num">{step.tokens}</td><td>{newly or "<span class=muted>-</span>"}</td>'
            "</tr>"
        )
    return (
        '<h3>Selection order</h3><table class="trace"><thead><tr><th>#</th><th>passage</th>'
        "<th>score</th><th>tokens</th><th>newly covered</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _passages(ti: int, run: TopicRun, rank: dict[str, int]) -> str:
    items = []
    for pi, passage in enumerate(run.topic.passages):
        r = rank.get(passage.id)
        badge = f'<span class="rank">#{r}</span> ' if r else ""
        tokens = f" \u00b7 {passage.tokens} tokens" if passage.tokens is not None else ""
        items.append(
            f'<li id="{passage_anchor(ti, pi)}" class="{"selected" if r else ""}">{badge}'
            f'<span class="pid">{esc(passage.id)}{tokens}</span>{source_line(passage)}<br>'
            f'<span class="ptext">{esc(passage.text)}</span></li>'
        )
    return f'<h3>Passages</h3><ol class="passages">{"".join(items)}</ol>'
