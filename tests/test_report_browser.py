"""The report in a real browser: Debian's headless Chromium driven by Playwright.

``make test`` installs Chromium (``apt-get install chromium``) when it is missing and it runs as
root; Playwright never downloads a browser here (``executable_path`` points at Debian's).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from covrag.report import render_report
from test_report import bench_summary, run_by_aspect, run_data
from test_report_answer import ask_run

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

sync_api = pytest.importorskip("playwright.sync_api")
if not CHROMIUM.exists():  # pragma: no cover - make test installs it
    pytest.skip(f"{CHROMIUM} is missing: apt-get install chromium", allow_module_level=True)


class Browser:
    """One page of a fresh Chromium profile, recording console errors and every request."""

    def __init__(self, context: Any) -> None:
        self.context = context
        self.page = context.new_page()
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda exc: self.errors.append(f"pageerror: {exc}"))
        self.page.on("request", lambda request: self.requests.append(request.url))

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def open(self, html: str, path: Path) -> Any:
        path.write_text(html, encoding="utf-8")
        self.page.goto(path.as_uri())
        self.page.wait_for_load_state("load")
        return self.page


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Browser]:
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh --user-data-dir
            executable_path=str(CHROMIUM),
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield Browser(context)
        finally:
            context.close()


def save(page: Any, tmp_path: Path, name: str) -> Path:
    shot = tmp_path / name
    page.screenshot(path=str(shot), full_page=True)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(shot, ARTIFACTS / name)
    return shot


def two_topics() -> dict[str, Any]:
    data = run_data()
    second = dict(data["topics"][0], query_id="q2", query="A second question?")
    second.pop("answer")
    data["topics"].append(second)
    return data


def test_run_report_renders_heatmap_and_citations_without_errors(
    browser: Browser, tmp_path: Path
) -> None:
    page = browser.open(render_report(two_topics()), tmp_path / "report.html")
    first = page.locator("section#t0")
    assert first.is_visible() and not page.locator("section#t1").is_visible()

    cells = first.locator("svg.heatmap rect.cell")
    assert cells.count() == 3 * 3  # passages x aspects
    box = first.locator("svg.heatmap").bounding_box()
    assert box is not None and box["width"] > 200 and box["height"] > 50
    covered = first.locator("svg.heatmap rect.cell.covered")
    assert covered.count() == 2
    assert covered.first.evaluate("e => getComputedStyle(e).fill") == "rgb(8, 48, 107)"
    assert first.locator("svg.heatmap rect.sel").count() == 2  # selected rows marked
    assert first.locator("svg.scale text.threshold").text_content() == "threshold 0.5"

    citations = first.locator(".answer a.cite")
    assert citations.count() == 3
    citations.nth(1).click()
    assert page.evaluate("location.hash") == "#t0-p1"
    assert "Car bans hurt shops." in page.locator(":target").inner_text()

    # the hostile passage is shown as text and never runs or loads anything
    assert "window.__pwned" in page.locator("#t0-p2").inner_text()
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.locator("img").count() == 0

    shot = save(page, tmp_path, "report.png")
    assert shot.stat().st_size > 10_000

    page.select_option("#topic-picker", "t1")
    assert page.locator("section#t1").is_visible() and not first.is_visible()
    assert page.locator("section#t1 svg.heatmap rect.cell").count() == 9

    assert browser.errors == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in browser.requests)


def test_bench_report_draws_measures_against_k_with_the_optimum(
    browser: Browser, tmp_path: Path
) -> None:
    page = browser.open(render_report(bench_summary()), tmp_path / "bench.html")
    charts = page.locator("svg.chart")
    assert charts.count() == 2
    for i in range(2):
        chart = charts.nth(i)
        assert chart.locator("g.series.method polyline").count() == 2
        oracle = chart.locator("g.series.oracle polyline")
        assert oracle.get_attribute("stroke-dasharray") == "6 4"
        box = oracle.bounding_box()
        assert box is not None and box["width"] > 100  # a line across the three budgets
    save(page, tmp_path, "bench-report.png")
    assert browser.errors == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in browser.requests)


def test_answer_by_aspect_sits_beside_its_aspect_and_cited_passages(
    browser: Browser, tmp_path: Path
) -> None:
    page = browser.open(render_report(run_by_aspect()), tmp_path / "by-aspect.html")
    table = page.locator("table.answer-by-aspect")
    assert table.is_visible()
    rows = table.locator("tr.paragraph")
    assert rows.count() == 3
    # Each paragraph row: the aspect, the paragraph and its cited passages side by side.
    cells = [rows.nth(1).locator("td").nth(i).bounding_box() for i in range(3)]
    assert all(c is not None for c in cells)
    left, middle, right = cells
    assert left is not None and middle is not None and right is not None
    assert left["x"] < middle["x"] < right["x"] and abs(left["y"] - right["y"]) < 2
    assert "economy" in rows.nth(1).locator("td").nth(0).inner_text()
    assert rows.nth(1).locator("ul.cited li").count() == 2
    framing = table.locator("tr.framing")
    assert "not answered" in framing.inner_text() and framing.locator("a").count() == 0
    # A paragraph's citation and its passage link both lead to the passage.
    rows.nth(0).locator("a.cite").first.click()
    assert page.evaluate("location.hash") == "#t0-p0"
    rows.nth(1).locator("ul.cited a.pid").first.click()
    assert "Car bans hurt shops." in page.locator(":target").inner_text()
    save(page, tmp_path, "report-by-aspect.png")
    assert browser.errors == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in browser.requests)


def test_the_reports_support_highlight_works_in_chromium(browser: Browser, tmp_path: Path) -> None:
    data = ask_run()  # a real ask run: its first sentence is aligned to a span of passage c1
    topic = data["topics"][0]
    check = topic["answer"]["sentences"][0]["check"]
    text = next(p["text"] for p in topic["passages"] if p["id"] == check["passage_id"])
    start, end = check["span"]
    page = browser.open(render_report(data), tmp_path / "ask.html")
    panel = page.locator("#t0-s0")
    assert not panel.is_visible()  # shown only when a citation leads to it
    page.locator("a.cite.supported").first.click()
    assert page.evaluate("location.hash") == "#t0-s0"
    assert panel.is_visible() and panel.get_attribute("data-passage") == check["passage_id"]
    marks = page.locator(":target mark")
    assert marks.count() == 1
    assert marks.first.evaluate("e => e.textContent") == text[start:end]
    assert marks.first.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 224, 102)"
    # the whole passage is there around the span, its hostile markup shown as text
    quoted = page.locator(":target blockquote").evaluate("e => e.textContent")
    assert quoted == text and "<script>" in quoted
    assert (
        page.evaluate("typeof window.__pwned") == "undefined" and page.locator("img").count() == 0
    )
    # the support table's passage link opens the same panel; the passage list still links
    page.locator("table.support a.pid").first.click()
    assert page.evaluate("location.hash") == "#t0-s0"
    page.locator(":target a.pid").click()
    assert page.locator(":target").get_attribute("id") == "t0-p2" and not panel.is_visible()
    save(page, tmp_path, "report-ask.png")
    assert browser.errors == []
    assert all(url.startswith(("file:", "data:", "about:")) for url in browser.requests)
