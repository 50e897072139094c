"""The report of an ``ask`` run: passes, support spans, dropped sentences, warnings, costs,
filters and per-aspect coverage, rendered from a real run record (the pipeline with a scripted
LLM and keyword coverage; the support judge is the real cross-encoder)."""

from __future__ import annotations

import copy
import functools
import html
import json
import re
from typing import Any

import pytest

from covrag.errors import DataError
from covrag.pipeline import AskConfig, ask
from covrag.report import parse_run_file, render_report
from covrag.retrieve import BM25Retriever
from covrag.types import Aspect, Passage
from generate_support import KeywordCoverage
from llm_support import ScriptedLLM
from test_report import run_data

HOSTILE = '<script>window.__pwned = 1</script><img src="https://example.invalid/x.png">'
CORPUS = (
    Passage(
        "c1",
        f"School uniforms reduce bullying between pupils. {HOSTILE}",
        metadata={"title": "Uniforms & <b>bullying</b>", "source": "docs/uniforms.md"},
    ),
    Passage("c2", "Uniforms cost parents a lot of money each year."),
    Passage("c3", "School uniforms stop pupils who want to express their identity."),
    Passage("c4", "Uniforms make religion visible or invisible in school."),
    Passage("c5", "Trains are faster than buses."),
)
ASPECTS = (
    Aspect("sq1", "bullying at school"),
    Aspect("sq2", "cost of uniforms"),
    Aspect("sq3", "express identity"),
    Aspect("exc1", "religion", polarity="exclude"),
)
CRITIQUE = json.dumps({"underused": [2], "missing": "The cost is <missing>."})


@functools.cache
def _ask_run_json() -> str:
    llm = ScriptedLLM(
        ["Uniforms reduce bullying [1].", CRITIQUE, "Uniforms reduce bullying [1]. They cost [2]."]
    )
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        # the coverage selection behind floor and gate by passage (the report's filter note)
        AskConfig(
            pool=4,
            k=2,
            passes=1,
            writer="extractive",
            selector="expected-coverage",
            relevance="score",
            filters="passages",
        ),
        exclude=["religion"],
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )
    return json.dumps(result.run_record())


def ask_run() -> dict[str, Any]:
    """A fresh copy of the run file of one real ``ask`` (two passes, a support check)."""
    data: dict[str, Any] = json.loads(_ask_run_json())
    return data


def _topic(data: dict[str, Any]) -> dict[str, Any]:
    topic: dict[str, Any] = data["topics"][0]
    return topic


def _section(page: str, title: str) -> str:
    """The HTML from the ``<h3>`` named ``title`` to the next ``<h3>``."""
    start = page.index(f"<h3>{title}</h3>")
    end = page.find("<h3>", start + 4)
    return page[start : end if end > 0 else len(page)]


def test_the_report_shows_warnings_passes_critiques_dropped_sentences_and_costs() -> None:
    data = ask_run()
    record = _topic(data)
    page = render_report(data)
    warnings = _section(page, "Warnings")
    assert record["warnings"] and all(html.escape(w) in warnings for w in record["warnings"])

    passes = _section(page, "Passes")
    drafts, critiques = record["generation"]["drafts"], record["generation"]["critiques"]
    assert passes.count('<li class="pass">') == len(drafts) == 2
    assert "first draft" in passes and "pass 1: rewrite" in passes
    (critique,) = critiques
    assert f'<b class="verdict">{critique["verdict"]}</b>' in passes
    assert html.escape(critique["feedback"]) in passes and "&lt;missing&gt;" in passes
    assert all(html.escape(p) in passes for d in drafts for p in d["problems"])

    (dropped,) = record["answer"]["dropped"]
    assert html.escape(dropped["text"]) in _section(page, "Dropped by the citation check")

    costs = _section(page, "Costs")
    rows = re.findall(r"<tr><td>(\w+)</td>", costs)
    assert rows == list(record["costs"]) == ["plan", "retrieve", "estimate", "select", "generate"]
    generate = re.search(r"<tr><td>generate</td>(.*?)</tr>", costs)
    assert generate is not None
    calls = record["costs"]["generate"]["llm"]["calls"]
    assert re.findall(r'<td class="num">([^<]*)</td>', generate.group(1))[1] == str(calls)


def test_each_sentence_shows_its_support_and_its_citation_opens_the_marked_span() -> None:
    data = ask_run()
    record = _topic(data)
    page = render_report(data)
    texts = {p["id"]: p["text"] for p in record["passages"]}
    support = _section(page, "Support")
    checked = [(j, s) for j, s in enumerate(record["answer"]["sentences"]) if "check" in s]
    assert checked and support.count('<tr class="support-row') == len(checked)
    for j, sentence in checked:
        check = sentence["check"]
        row = re.search(rf'<tr class="support-row (\w+)"><td class="num">{j + 1}</td>', support)
        assert row is not None and row.group(1) == check["verified"]
        start, end = check["span"]
        panel = re.search(rf'<div class="support-panel" id="t0-s{j}"[^>]*>(.*?)</div>', page)
        assert panel is not None
        marked = re.findall(r"<mark>(.*?)</mark>", panel.group(1))
        assert marked == [html.escape(texts[check["passage_id"]][start:end])]
        assert f'href="#t0-s{j}"' in _section(page, "Answer")  # the citation leads to it


def test_passages_name_their_document_and_hostile_text_stays_text() -> None:
    page = render_report(ask_run())
    passages = _section(page, "Passages")
    assert "Uniforms &amp; &lt;b&gt;bullying&lt;/b&gt; \u00b7 docs/uniforms.md" in passages
    assert page.count("<script") == 1 and "<img" not in page and "<b>bullying" not in page
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in passages
    panel = page[page.index('<div class="support-panel"') :]
    assert "&lt;img src=&quot;https://example.invalid/x.png&quot;&gt;" in panel


def test_filters_and_aspect_coverage_use_one_threshold() -> None:
    data = ask_run()
    record = _topic(data)
    page = render_report(data)
    filters = record["filters"]
    note = re.search(r'<p class="filters">(.*?)</p>', page)
    assert note is not None
    assert f"coverage floor <b>{filters['floor']:g}</b>: {filters['cleared_floor']} of" in note[1]
    assert f"<b>{filters['kept']}</b> clear every filter" in note[1]
    # filters that judged the question say so, and what the selector chose among
    data["topics"][0]["filters"] = {**filters, "judged": "question", "cleared": 1, "kept": 4}
    judged = re.search(r'<p class="filters">(.*?)</p>', render_report(data))
    assert judged is not None and judged[1].startswith("Filters of the question")
    assert "1 passages clear every filter, so the question is answered" in judged[1]
    assert "chose among the <b>4</b> the name filter keeps" in judged[1]
    assert f"floor {filters['floor']:g}</text>" in page  # drawn on the scale
    # Per wanted aspect: in context and in answer, as the run recorded them.
    aspects = _section(page, "Aspects")
    for row in record["aspect_coverage"]:
        cells = re.search(rf'<td class="pid">{row["aspect_id"]}</td>.*?</tr>', aspects)
        assert cells is not None
        assert ("covered by #" in cells[0]) == row["in_context"]
        assert ('<td class="in-answer">yes</td>' in cells[0]) == row["in_answer"]
    # A selected pair under the matrix's threshold is neither a heatmap dot nor "covered".
    coverage = record["coverage"]
    first = record["selection"]["steps"][0]
    i = coverage["passage_ids"].index(first["passage_id"])
    j = coverage["aspect_ids"].index(first["newly_covered"][0])
    coverage["probs"][i][j] = 0.6
    coverage["threshold"] = 0.7
    page = render_report(data)
    label = f"A{j + 1}"
    assert f"<td>{label}</td>" in page
    row = re.search(rf"<td>{label}</td>.*?</tr>", _section(page, "Aspects"))
    assert row is not None and "uncovered" in row[0] and "covered by" not in row[0]
    assert f"{first['passage_id']} \u00d7 {coverage['aspect_ids'][j]}: 0.60</title>" in page


def test_a_rewrite_lists_the_sentences_it_added_and_removed() -> None:
    data = ask_run()
    drafts = _topic(data)["generation"]["drafts"]
    drafts[1]["sentences"] = [
        {"text": "Pupils <em>bully</em> less.", "passage_ids": ["c1"]},
        *drafts[1]["sentences"][1:],
    ]
    passes = _section(render_report(data), "Passes")
    removed = html.escape(drafts[0]["sentences"][0]["text"])
    assert '<li class="added">+ Pupils &lt;em&gt;bully&lt;/em&gt; less.</li>' in passes
    assert f'<li class="removed">\u2212 {removed}</li>' in passes


def test_old_run_files_and_ask_runs_without_the_new_blocks_still_render() -> None:
    old = render_report(run_data())
    assert "<h3>Answer</h3>" in old and "<h3>Passes</h3>" not in old and "in answer" not in old
    assert parse_run_file(run_data()).topics[0].ask is None
    data = ask_run()
    for key in ("filters", "aspect_coverage", "costs", "warnings"):
        del _topic(data)[key]
    page = render_report(data)
    assert "<h3>Passes</h3>" in page and 'class="filters"' not in page
    assert "<th>in answer</th>" not in page and "<h3>Costs</h3>" not in page


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda t: t["filters"].update(kept="many"), "topics[0].filters.kept"),
        (lambda t: t.update(warnings="none"), "topics[0].warnings"),
        (
            lambda t: t["generation"]["drafts"][0]["sentences"][0]["check"].update(
                span=[0, 10_000]
            ),
            "topics[0].generation.drafts[0].sentences[0].check.span",
        ),
        (
            lambda t: t["generation"]["drafts"][1]["sentences"][0].update(passage_ids=["zz"]),
            "topics[0].generation.drafts[1].sentences[0].passage_ids",
        ),
    ],
)
def test_a_malformed_ask_block_names_its_field(edit: Any, field: str) -> None:
    data = copy.deepcopy(ask_run())
    edit(_topic(data))
    with pytest.raises(DataError) as caught:
        render_report(data, "ask.json")
    assert caught.value.field == field and "ask.json" in str(caught.value)
