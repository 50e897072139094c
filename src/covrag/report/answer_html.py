"""The answer part of a run report: the answer with its citations and each sentence's support
(the cited passage with the supporting characters marked), the sentences the citation check
dropped, every pass (draft, what its rewrite changed, its critique), the warnings and the costs.

A citation of the passage that holds a sentence's supporting span links to a panel
(``#t0-s3``) that shows that passage with the span in a ``<mark>``; the panel is hidden until it
is the page's target (CSS ``:target``), so it needs no script. Spans are cut here, in Python, so
their offsets are the run file's (code points), whatever characters the passage holds.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from covrag.report.askview import AskView, CritiqueView, DraftView
from covrag.report.runfile import TopicRun
from covrag.report.svg import esc
from covrag.types import Answer, Citation, Passage

_DOT = " \u00b7 "


def passage_anchor(topic_index: int, passage_index: int) -> str:
    return f"t{topic_index}-p{passage_index}"


def support_anchor(topic_index: int, sentence_index: int) -> str:
    return f"t{topic_index}-s{sentence_index}"


def source_line(passage: Passage) -> str:
    """What a passage says of its document (title, document id, file), when recorded."""
    facts = [
        str(value)
        for name in ("title", "doc_id", "source")
        if (value := getattr(passage, name, None) or passage.metadata.get(name))
    ]
    return f' <span class="muted source">{esc(_DOT.join(facts))}</span>' if facts else ""


class AnswerView:
    """Renders one topic's answer; ``ti`` numbers the topic in anchors."""

    def __init__(self, ti: int, run: TopicRun, rank: Mapping[str, int]) -> None:
        self.ti = ti
        self.run = run
        self.rank = rank
        self.index = {p.id: i for i, p in enumerate(run.topic.passages)}
        self.passages = {p.id: p for p in run.topic.passages}

    def cites(self, j: int | None, s: Citation) -> str:
        """The citation marks of sentence ``j`` (None: a sentence without support panels)."""
        held = s.check.passage_id if s.check is not None and j is not None else None
        out = []
        for pid in s.passage_ids:
            if pid not in self.index:
                continue
            label = self.rank[pid] if pid in self.rank else esc(pid)
            if pid == held and j is not None:
                href, kind = support_anchor(self.ti, j), "cite supported"
            else:
                href, kind = passage_anchor(self.ti, self.index[pid]), "cite"
            out.append(f'<a class="{kind}" href="#{href}" title="{esc(pid)}">[{label}]</a>')
        return "".join(out)

    def sentence(self, j: int, s: Citation) -> str:
        check = s.check
        mark = ""
        if check is not None and check.verified == "unsupported":
            mark = '<span class="tag uncovered">unsupported</span>'
        text = f'<span class="sentence" id="t{self.ti}-a{j}">{esc(s.text)}</span>'
        return f"{text}{mark}{self.cites(j, s)}"

    def section(self) -> str:
        """The answer, its support table and panels, and the dropped sentences."""
        answer = self.run.answer
        assert answer is not None
        numbered = list(enumerate(answer.sentences))
        if any(s.aspect_id is not None or s.framing for s in answer.sentences):
            body = self.by_aspect(numbered)
        else:
            text = " ".join(self.sentence(j, s) for j, s in numbered)
            body = f'<div class="answer"><p>{text}</p></div>'
        return f"<h3>Answer</h3>{body}{self.support()}{self.dropped(answer)}"

    def by_aspect(self, numbered: list[tuple[int, Citation]]) -> str:
        """One row per paragraph: the aspect it covers, its sentences, the passages it cites."""
        aspects = {a.id: a for a in self.run.topic.aspects}
        labels = {a.id: f"A{j}" for j, a in enumerate(self.run.topic.aspects, start=1)}
        groups: dict[str | None, list[tuple[int, Citation]]] = {}
        framing: list[Citation] = []
        for j, s in numbered:
            if s.framing:
                framing.append(s)
            else:
                groups.setdefault(s.aspect_id, []).append((j, s))
        rows = []
        for aspect_id, group in groups.items():
            aspect = aspects.get(aspect_id or "")
            head = (
                f'<span class="tag">{esc(labels[aspect.id])}</span> {esc(aspect.text)}'
                if aspect is not None
                else '<span class="muted">no aspect</span>'
            )
            text = " ".join(self.sentence(j, s) for j, s in group)
            cited = dict.fromkeys(p for _, s in group for p in s.passage_ids if p in self.index)
            sources = "".join(
                f'<li><a class="pid" href="#{passage_anchor(self.ti, self.index[p])}">'
                f"[{self.rank.get(p, '-')}] {esc(p)}</a>{source_line(self.passages[p])}</li>"
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
            '<table class="answer-by-aspect"><thead><tr><th>aspect</th>'
            f"<th>paragraph</th><th>cited passages</th></tr></thead><tbody>{''.join(rows)}"
            "</tbody></table>"
        )

    def support(self) -> str:
        """Per checked sentence: how it was verified, its score, the passage holding its
        support; and a panel per supported sentence with the span marked."""
        answer = self.run.answer
        assert answer is not None
        rows, panels = [], []
        for j, s in enumerate(answer.sentences):
            check = s.check
            if check is None:
                continue
            holder = ""
            if check.passage_id is not None and check.passage_id in self.passages:
                holder = (
                    f'<a class="pid" href="#{support_anchor(self.ti, j)}">'
                    f"{esc(check.passage_id)}</a>"
                )
                panels.append(self.panel(j, s))
            repaired = (
                f"cited {esc(', '.join(check.written) or 'nothing')} as written"
                if check.repaired
                else ""
            )
            rows.append(
                f'<tr class="support-row {esc(check.verified)}"><td class="num">{j + 1}</td>'
                f"<td>{esc(s.text)}</td><td>{esc(check.verified)}</td>"
                f'<td class="num">{check.score:.2f}</td><td>{holder}</td>'
                f'<td class="muted">{repaired}</td></tr>'
            )
        if not rows:
            return ""
        return (
            '<h3>Support</h3><p class="muted">How each sentence was checked against the passages: '
            "<b>aligned</b> (the passage holds its words; score = share aligned), <b>judged</b> "
            "(a judge says the passage supports it; score = its probability), <b>composed</b> "
            "(a command line whose every option the cited passages write; the span shown is its "
            "first option's) or <b>unsupported</b>. Click a citation or a passage id to see the "
            "supporting span.</p>"
            '<table class="support"><thead><tr><th>#</th><th>sentence</th><th>verified</th>'
            f"<th>score</th><th>passage</th><th></th></tr></thead><tbody>{''.join(rows)}"
            f'</tbody></table><div class="panels">{"".join(panels)}</div>'
        )

    def panel(self, j: int, s: Citation) -> str:
        check = s.check
        assert check is not None and check.passage_id is not None and check.span is not None
        passage = self.passages[check.passage_id]
        start, end = check.span
        text = passage.text
        label = self.rank.get(passage.id, "-")
        return (
            f'<div class="support-panel" id="{support_anchor(self.ti, j)}" '
            f'data-passage="{esc(passage.id)}"><p><b>Sentence {j + 1}</b> \u201c{esc(s.text)}'
            f"\u201d is {esc(check.verified)} ({check.score:.2f}) by passage "
            f'<a class="pid" href="#{passage_anchor(self.ti, self.index[passage.id])}">'
            f"[{label}] {esc(passage.id)}</a>{source_line(passage)}, characters "
            f"{start}\u2013{end}:</p><blockquote>{esc(text[:start])}<mark>"
            f"{esc(text[start:end])}</mark>{esc(text[end:])}</blockquote></div>"
        )

    def dropped(self, answer: Answer) -> str:
        if not answer.dropped:
            return ""
        items = "".join(
            f"<li>{esc(s.text)} <span class='muted'>(cited "
            f"{esc(', '.join(s.passage_ids) or 'nothing')}"
            + (f"; best score {s.check.score:.2f}" if s.check is not None else "")
            + ")</span></li>"
            for s in answer.dropped
        )
        return (
            '<h3>Dropped by the citation check</h3><p class="muted">No passage supports these '
            f'sentences, so the answer leaves them out.</p><ul class="dropped">{items}</ul>'
        )


def passes_section(ask: AskView) -> str:
    """Every pass: its draft, the sentences its rewrite added and removed, its critique."""
    if not ask.drafts:
        return ""
    items = []
    previous: DraftView | None = None
    for i, draft in enumerate(ask.drafts):
        critique = ask.critiques[i - 1] if 0 < i <= len(ask.critiques) else None
        head = "first draft" if i == 0 else f"pass {i}: rewrite"
        parts = [f'<li class="pass"><b>{head}</b>{_cost_note(draft.cost)}']
        if critique is not None:
            parts.append(_critique(critique))
        text = " ".join(esc(s.text) for s in draft.answer.sentences)
        parts.append(f'<p class="draft">{text or "<i>empty</i>"}</p>')
        if previous is not None:
            parts.append(_changes(previous.answer, draft.answer))
        if draft.fallback:
            parts.append(f'<p class="muted">fallback: {esc(draft.fallback)}</p>')
        if draft.problems:
            problems = "".join(f"<li>{esc(p)}</li>" for p in draft.problems)
            parts.append(f'<ul class="problems">{problems}</ul>')
        parts.append("</li>")
        items.append("".join(parts))
        previous = draft
    return f'<h3>Passes</h3><ol class="passes">{"".join(items)}</ol>'


def _critique(critique: CritiqueView) -> str:
    verdict = critique.verdict or "not recorded"
    missing = ", ".join(critique.missing_aspects)
    return (
        f'<div class="critique"><p>critique ({esc(critique.mode or "?")})'
        f"{_cost_note(critique.cost)}"
        f' \u2192 verdict <b class="verdict">{esc(verdict)}</b>'
        + (f"; missing aspects: {esc(missing)}" if missing else "")
        + "</p>"
        + (f'<pre class="feedback">{esc(critique.feedback)}</pre>' if critique.feedback else "")
        + "</div>"
    )


def _changes(before: Answer, after: Answer) -> str:
    old = [s.text for s in before.sentences]
    new = [s.text for s in after.sentences]
    added = [t for t in new if t not in old]
    removed = [t for t in old if t not in new]
    if not added and not removed:
        return '<p class="changes muted">the rewrite changed no sentence</p>'
    lines = [f'<li class="added">+ {esc(t)}</li>' for t in added]
    lines += [f'<li class="removed">\u2212 {esc(t)}</li>' for t in removed]
    return f'<ul class="changes">{"".join(lines)}</ul>'


def _number(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return ""
    return f"{value:.2f}" if isinstance(value, float) else str(value)


def _cost_note(cost: Mapping[str, Any]) -> str:
    if not cost:
        return ""
    calls, seconds = _number(cost.get("calls")), _number(cost.get("seconds"))
    tokens = [_number(cost.get(k)) for k in ("prompt_tokens", "completion_tokens")]
    return (
        f' <span class="muted">{calls or "?"} call(s), {tokens[0] or "?"}+{tokens[1] or "?"} '
        f"tokens, {seconds or '?'} s</span>"
    )


def warnings_section(ask: AskView) -> str:
    if not ask.warnings:
        return ""
    items = "".join(f"<li>{esc(w)}</li>" for w in ask.warnings)
    return f'<h3>Warnings</h3><ul class="warnings">{items}</ul>'


def costs_section(ask: AskView) -> str:
    """The cost of each stage: time, model calls and tokens, coverage pairs scored."""
    if not ask.costs:
        return ""
    rows = []
    for stage, cost in ask.costs.items():
        llm = cost.get("llm") if isinstance(cost.get("llm"), Mapping) else {}
        assert isinstance(llm, Mapping)
        cells = [
            _number(cost.get("seconds")),
            _number(llm.get("calls")),
            _number(llm.get("prompt_tokens")),
            _number(llm.get("completion_tokens")),
            _number(cost.get("pairs_scored")),
        ]
        rows.append(
            f"<tr><td>{esc(stage)}</td>"
            + "".join(f'<td class="num">{c}</td>' for c in cells)
            + "</tr>"
        )
    return (
        '<h3>Costs</h3><table class="costs"><thead><tr><th>stage</th><th>seconds</th>'
        "<th>LLM calls</th><th>prompt tokens</th><th>completion tokens</th>"
        f"<th>pairs scored</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )
