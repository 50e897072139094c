"""The report of a selection run: per topic, the heatmap, the trace, the gaps and the answer."""

from __future__ import annotations

from covrag.report.page import page
from covrag.report.runfile import RunFile, TopicRun
from covrag.report.svg import HeatmapRow, esc, heatmap_svg, scale_svg
from covrag.types import Citation, Passage

_DOT = " \u00b7 "


def passage_anchor(topic_index: int, passage_index: int) -> str:
    return f"t{topic_index}-p{passage_index}"


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


def _summary(run: RunFile) -> str:
    wanted = sum(len(_wanted(t)) for t in run.topics)
    covered = sum(len(set(t.selection.covered) & set(_wanted(t))) for t in run.topics if t.coverage)
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
    parts = [head, _aspects_table(run, labels)]
    parts.append(_heatmap(ti, run, index, rank, labels))
    parts.append(_trace(ti, run, index, labels))
    if run.answer is not None:
        parts.append(_answer(ti, run, index, rank))
    parts.append(_passages(ti, run, rank))
    parts.append("</section>")
    return "".join(parts)


def _aspects_table(run: TopicRun, labels: dict[str, str]) -> str:
    first: dict[str, int] = {}
    for r, step in enumerate(run.selection.steps, start=1):
        for aspect_id in step.newly_covered:
            first.setdefault(aspect_id, r)
    rows = []
    for aspect in run.topic.aspects:
        excluded = aspect.polarity == "exclude"
        if run.coverage is None:
            status = '<span class="muted">unknown (no coverage matrix)</span>'
        elif aspect.id in first and excluded:
            status = f'<span class="tag exclude">unwanted, covered by #{first[aspect.id]}</span>'
        elif aspect.id in first:
            status = f"covered by #{first[aspect.id]}"
        elif excluded:
            status = '<span class="tag exclude">excluded, avoided</span>'
        else:
            status = '<span class="tag uncovered">uncovered</span>'
        kind = "exclude" if excluded else ""
        rows.append(
            f'<tr class="aspect {kind}"><td>{esc(labels[aspect.id])}</td>'
            f'<td class="pid">{esc(aspect.id)}</td><td>{esc(aspect.text)}</td>'
            f"<td>{esc(aspect.polarity)}{' (vital)' if aspect.vital else ''}</td>"
            f"<td>{status}</td></tr>"
        )
    uncovered = [a for a in run.topic.aspects if a.polarity != "exclude" and a.id not in first]
    note = ""
    if run.coverage is not None:
        note = (
            f"<p><b>Uncovered</b> ({len(uncovered)}): "
            + (
                ", ".join(f'<span class="tag uncovered">{esc(a.text)}</span>' for a in uncovered)
                or "none"
            )
            + "</p>"
        )
    return (
        "<h3>Aspects</h3><table><thead><tr><th></th><th>id</th><th>aspect</th><th>polarity</th>"
        f"<th>status</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{note}"
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
    row_of = {pid: i for i, pid in enumerate(coverage.passage_ids)}
    selected = [s.passage_id for s in run.selection.steps if s.passage_id in row_of]
    rest = [pid for pid in coverage.passage_ids if pid not in rank]
    rows = [
        HeatmapRow(row_of[pid], pid, passage_anchor(ti, index[pid]), rank.get(pid, 0))
        for pid in [*selected, *rest]
    ]
    by_id = {a.id: a for a in run.topic.aspects}
    excluded = [by_id[a].polarity == "exclude" for a in coverage.aspect_ids]
    svg = heatmap_svg(coverage, rows, [labels[a] for a in coverage.aspect_ids], excluded)
    return (
        "<h3>Coverage heatmap</h3>"
        f'<p class="muted">Rows: passages, the {len(selected)} selected first (in pick order, '
        "highlighted), then the rest of the pool. Columns: aspects (red = excluded). Colour: "
        "estimated probability; a dot marks a covered pair (probability at or above the "
        f"threshold {coverage.threshold_text()}).</p>{scale_svg(coverage.threshold)}"
        f'<div class="figure">{svg}</div>'
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


def _cites(ti: int, pids: tuple[str, ...], index: dict[str, int], rank: dict[str, int]) -> str:
    return "".join(
        f'<a class="cite" href="#{passage_anchor(ti, index[pid])}" '
        f'title="{esc(pid)}">[{rank[pid] if pid in rank else esc(pid)}]</a>'
        for pid in pids
        if pid in index
    )


def _answer(ti: int, run: TopicRun, index: dict[str, int], rank: dict[str, int]) -> str:
    assert run.answer is not None
    sentences = run.answer.sentences
    if any(s.aspect_id is not None or s.framing for s in sentences):
        return _answer_by_aspect(ti, run, index, rank)
    body = " ".join(f"{esc(s.text)}{_cites(ti, s.passage_ids, index, rank)}" for s in sentences)
    return f'<h3>Answer</h3><div class="answer"><p>{body}</p></div>'


def _source(passage: Passage) -> str:
    """What a passage says of its document, when the index recorded it."""
    facts = [
        str(value)
        for name in ("title", "doc_id", "source")
        if (value := getattr(passage, name, None) or passage.metadata.get(name))
    ]
    return f' <span class="muted">{esc(_DOT.join(facts))}</span>' if facts else ""


def _answer_by_aspect(ti: int, run: TopicRun, index: dict[str, int], rank: dict[str, int]) -> str:
    """One row per paragraph: the aspect it covers, its sentences, the passages it cites."""
    assert run.answer is not None
    aspects = {a.id: a for a in run.topic.aspects}
    labels = {a.id: f"A{j}" for j, a in enumerate(run.topic.aspects, start=1)}
    passages = {p.id: p for p in run.topic.passages}
    groups: dict[str | None, list[Citation]] = {}
    framing: list[Citation] = []
    for s in run.answer.sentences:
        (framing if s.framing else groups.setdefault(s.aspect_id, [])).append(s)
    rows = []
    for aspect_id, group in groups.items():
        aspect = aspects.get(aspect_id or "")
        head = (
            f'<span class="tag">{esc(labels[aspect.id])}</span> {esc(aspect.text)}'
            if aspect is not None
            else '<span class="muted">no aspect</span>'
        )
        text = " ".join(f"{esc(s.text)}{_cites(ti, s.passage_ids, index, rank)}" for s in group)
        cited = dict.fromkeys(p for s in group for p in s.passage_ids if p in passages)
        sources = "".join(
            f'<li><a class="pid" href="#{passage_anchor(ti, index[p])}">'
            f"[{rank.get(p, '-')}] {esc(p)}</a>{_source(passages[p])}</li>"
            for p in cited
        )
        rows.append(
            f'<tr class="paragraph"><td class="aspect-cell">{head}</td><td><p>{text}</p></td>'
            f'<td><ul class="cited">{sources}</ul></td></tr>'
        )
    for s in framing:
        rows.append(
            '<tr class="paragraph framing"><td><span class="tag uncovered">not answered'
            f'</span></td><td><p><i>{esc(s.text)}</i></p></td><td class="muted">'
            "the writer's framing: cites nothing</td></tr>"
        )
    return (
        '<h3>Answer</h3><table class="answer-by-aspect"><thead><tr><th>aspect</th>'
        f"<th>paragraph</th><th>cited passages</th></tr></thead><tbody>{''.join(rows)}"
        "</tbody></table>"
    )


def _passages(ti: int, run: TopicRun, rank: dict[str, int]) -> str:
    items = []
    for pi, passage in enumerate(run.topic.passages):
        r = rank.get(passage.id)
        badge = f'<span class="rank">#{r}</span> ' if r else ""
        tokens = f" \u00b7 {passage.tokens} tokens" if passage.tokens is not None else ""
        items.append(
            f'<li id="{passage_anchor(ti, pi)}" class="{"selected" if r else ""}">{badge}'
            f'<span class="pid">{esc(passage.id)}{tokens}</span><br>{esc(passage.text)}</li>'
        )
    return f'<h3>Passages</h3><ol class="passages">{"".join(items)}</ol>'
