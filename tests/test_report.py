from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conftest import topic_record
from covrag.cli import main
from covrag.coverage import parse_estimator
from covrag.errors import DataError
from covrag.evaluation.bench_results import ORACLE
from covrag.pipeline import PrepareConfig, prepare
from covrag.report import parse_run_file, render_report, run_file_record, topic_run_record
from covrag.report.bench_html import budget_axis
from covrag.selectors import parse_selector
from covrag.types import Answer, Aspect, Budget, Citation, Passage, Topic

HOSTILE = '<script>window.__pwned = 1</script><img src="https://example.invalid/x.png">'


def make_topic() -> Topic:
    """The conftest topic, with a hostile passage and an excluded aspect with markup in it."""
    return Topic(
        query_id="q1",
        query="Should cities ban cars?",
        passages=(
            Passage("p1", "Cars pollute the air."),
            Passage("p2", "Car bans hurt shops."),
            Passage("p3", HOSTILE),
        ),
        aspects=(
            Aspect("a1", "pollution"),
            Aspect("a2", "economy"),
            Aspect("a3", "noise & <b>health</b>", polarity="exclude"),
        ),
        labels={"p1": frozenset({"a1"}), "p2": frozenset({"a2"}), "p3": frozenset()},
    )


def run_data(answer: bool = True) -> dict[str, Any]:
    topic = make_topic()
    candidates = prepare(topic, parse_estimator("gold"), PrepareConfig(relevance="order"))
    selection = parse_selector("greedy-coverage").select(
        candidates.candidates, Budget(max_passages=2)
    )
    reply = Answer(
        (
            Citation("Cars pollute.", ("p1",)),
            Citation("Shops suffer & <i>complain</i>.", ("p2", "p3")),
        )
    )
    record = topic_run_record(
        topic, selection, candidates.candidates.coverage, reply if answer else None
    )
    return run_file_record([record], dataset="inline", selector="greedy-coverage", budget="k=2")


def test_run_file_round_trips_through_json() -> None:
    data = json.loads(json.dumps(run_data()))
    run = parse_run_file(data)
    (topic_run,) = run.topics
    assert topic_run.topic.passage_ids == ("p1", "p2", "p3")
    assert topic_run.selection.passage_ids == ("p1", "p2")
    assert [s.newly_covered for s in topic_run.selection.steps] == [("a1",), ("a2",)]
    assert topic_run.coverage is not None and topic_run.coverage.threshold == 0.5
    assert topic_run.coverage.covered.sum() == 2
    assert topic_run.answer is not None and topic_run.answer.sentences[1].passage_ids == (
        "p2",
        "p3",
    )
    assert run.selector == "greedy-coverage" and topic_run.budget == "k=2"


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("selection", "steps", 0, "passage_id"), "p9", "topics[0].selection.steps[0].passage_id"),
        (("coverage", "probs"), [[0.5]], "topics[0].coverage.probs"),
        (("passages", 1, "text"), 7, "topics[0].passages[1].text"),
        (("aspects", 0, "polarity"), "maybe", "topics[0].aspects[0].polarity"),
        (("answer", "sentences", 0, "passage_ids"), ["zz"], "topics[0].answer.sentences[0]"),
    ],
)
def test_malformed_run_files_name_the_field(path: tuple[Any, ...], value: Any, field: str) -> None:
    data = run_data()
    target: Any = data["topics"][0]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(DataError, match=re.escape(field)):
        parse_run_file(data, "run.json")


def test_report_escapes_untrusted_text_and_loads_nothing_external() -> None:
    page = render_report(run_data())
    assert "window.__pwned" in page  # the text is shown ...
    assert "<script>window.__pwned" not in page and "<img" not in page  # ... but never as markup
    assert "&lt;b&gt;health&lt;/b&gt;" in page and "<b>health</b>" not in page
    assert page.count("<script>") == 1  # covrag's own switcher only
    assert "default-src 'none'" in page
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)


def test_report_draws_every_cell_marks_selected_rows_and_links_citations() -> None:
    page = render_report(run_data())
    assert len(re.findall(r'<rect class="cell', page)) == 3 * 3
    assert len(re.findall(r'<rect class="cell covered', page)) == 2
    assert len(re.findall(r'<rect class="sel"', page)) == 2
    assert "threshold 0.5" in page
    cites = re.findall(r'<a class="cite" href="#([^"]+)"', page)
    assert cites == ["t0-p0", "t0-p1", "t0-p2"]
    for anchor in cites:
        assert f'id="{anchor}"' in page
    assert "excluded, avoided" in page  # a3 is excluded and no selected passage covers it


def test_report_without_coverage_or_answer_still_renders() -> None:
    data = run_data(answer=False)
    data["topics"][0]["coverage"] = None
    page = render_report(data)
    assert "no coverage matrix" in page and 'class="cell' not in page
    assert "<h3>Answer</h3>" not in page


def bench_summary() -> dict[str, Any]:
    def row(method: str, budget: str, value: float) -> dict[str, Any]:
        k = budget.split("=")[1]
        return {
            "method": method,
            "budget": budget,
            "means": {f"alpha-nDCG@{k}": value, f"StRecall@{k}": value / 2},
            "ci95": {f"alpha-nDCG@{k}": [value - 0.1, value + 0.1]},
            "headroom": {f"StRecall@{k}": 0.1},
        }

    rows = [
        row(m, b, v)
        for m, base in (("topk", 0.3), ("greedy-coverage @ gold", 0.6), (ORACLE, 0.8))
        for b, v in (("k=2", base), ("k=5", base + 0.1), ("k=10", base + 0.15))
    ]
    return {"dataset": "x<y>", "topics": 3, "baseline": "topk", "results": rows}


def test_bench_report_plots_each_measure_against_k_with_the_optimum() -> None:
    page = render_report(bench_summary())
    charts = re.findall(r'<svg class="chart".*?</svg>', page)
    assert len(charts) == 2  # alpha-nDCG and StRecall, each against k
    for chart in charts:
        assert chart.count('class="series method"') == 2
        assert chart.count('class="series oracle"') == 1
        assert 'stroke-dasharray="6 4"' in chart
        assert chart.count("<circle") == 9
    assert "x&lt;y&gt;" in page


def test_budget_axis() -> None:
    assert budget_axis("k=10") == ("k", 10.0)
    assert budget_axis("tokens=512") == ("tokens", 512.0)
    assert budget_axis("k=10,tokens=512") == ("tokens", 512.0)


def test_cli_select_writes_the_run_file_and_report_renders_it(
    write_jsonl: Any, tmp_path: Path
) -> None:
    data = write_jsonl([topic_record()])
    run_json = tmp_path / "run.json"
    args = ["select", "--dataset", str(data), "--selector", "greedy-coverage"]
    args += ["--coverage", "gold", "--k", "2", "--relevance", "order"]
    assert main([*args, "--out", str(tmp_path / "r.trec"), "--run-json", str(run_json)]) == 0
    run = json.loads(run_json.read_text())
    topic = run["topics"][0]
    assert [p["id"] for p in topic["passages"]] == ["p1", "p2", "p3"]
    assert all(p["tokens"] > 0 for p in topic["passages"])
    assert topic["coverage"]["probs"] == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    assert [s["newly_covered"] for s in topic["selection"]["steps"]] == [["a1"], ["a2"]]
    out = tmp_path / "report.html"
    assert main(["report", str(run_json), "-o", str(out)]) == 0
    assert out.read_text().count('<rect class="cell') == 6


def test_cli_report_reads_a_bench_folder_and_refuses_other_json(tmp_path: Path) -> None:
    folder = tmp_path / "bench-out"
    folder.mkdir()
    (folder / "summary.json").write_text(json.dumps(bench_summary()))
    assert main(["report", str(folder), "-o", str(tmp_path / "b.html")]) == 0
    assert '<svg class="chart"' in (tmp_path / "b.html").read_text()
    (tmp_path / "other.json").write_text('{"hello": 1}')
    assert main(["report", str(tmp_path / "other.json"), "-o", str(tmp_path / "o.html")]) == 2
    assert not (tmp_path / "o.html").exists()


def run_by_aspect() -> dict[str, Any]:
    """The run of :func:`run_data` answered by aspect: a paragraph per aspect, and a framing
    sentence naming what the corpus does not answer; one passage carries its document."""
    data = run_data(answer=False)
    topic = data["topics"][0]
    topic["passages"][1]["title"] = "Shops & cars"  # an indexed document's fields (extra keys)
    topic["answer"] = {
        "sentences": [
            {"text": "Exhaust fouls the air.", "passage_ids": ["p1"], "aspect_id": "a1"},
            {"text": "Streets empty of cars lose trade.", "passage_ids": ["p2"], "aspect_id": "a2"},
            {"text": "Shoppers go elsewhere.", "passage_ids": ["p2", "p1"], "aspect_id": "a2"},
            {"text": 'The corpus does not answer: "noise".', "passage_ids": [], "framing": True},
        ]
    }
    return data


def test_report_shows_each_paragraph_next_to_its_aspect_and_cited_passages() -> None:
    html = render_report(run_by_aspect())
    table = html[html.index('class="answer-by-aspect"') :]
    rows = re.findall(r'<tr class="paragraph[^"]*">(.*?)</tr>', table)
    assert len(rows) == 3  # a1, a2 (two sentences), the framing
    assert ">A1</span> pollution" in rows[0] and "Exhaust fouls the air." in rows[0]
    assert "Streets empty of cars lose trade." in rows[1] and "Shoppers go elsewhere." in rows[1]
    # The cited passages, each once, linked to the passage list.
    assert rows[1].count('class="pid" href="#t0-p1"') == 1
    assert rows[1].count('class="pid" href="#t0-p0"') == 1
    assert "Shops &amp; cars" in rows[1]  # the document's title, escaped
    assert "not answered" in rows[2] and "cites nothing" in rows[2]
    parsed = parse_run_file(run_by_aspect(), "inline")
    answer = parsed.topics[0].answer
    assert answer is not None and answer.sentences[3].framing
    assert answer.sentences[0].aspect_id == "a1"
