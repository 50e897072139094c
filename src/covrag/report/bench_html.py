"""The report of a bench: each measure against the budget, one line per method, optimum dashed.

Reads what ``covrag bench --out DIR`` writes as ``DIR/summary.json`` (and what ``--json``
prints): ``BenchResult.to_json`` of the bench pipeline. It reads the file, never the pipeline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from covrag.evaluation.headroom import ORACLE
from covrag.report.page import page
from covrag.report.svg import ORACLE_COLOR, PALETTE, Series, esc, line_chart_svg
from covrag.schema._base import read_model
from covrag.schema.bench import BenchSummary


@dataclass(frozen=True)
class BenchRow:
    """One method under one budget."""

    method: str
    budget: str
    x_kind: str  # "k" or "tokens"
    x: float
    means: Mapping[str, float]
    ci: Mapping[str, tuple[float, float]]
    headroom: Mapping[str, float]


def budget_axis(budget: str) -> tuple[str, float]:
    """The x axis of a budget: ``("tokens", T)`` when it limits tokens, else ``("k", K)``."""
    values: dict[str, float] = {}
    for part in budget.split(","):
        key, _, value = part.partition("=")
        try:
            values[key.strip()] = float(value)
        except ValueError:
            continue
    if "tokens" in values:
        return "tokens", values["tokens"]
    if "k" in values:
        return "k", values["k"]
    return "k", math.inf


def parse_bench(data: Mapping[str, Any]) -> list[BenchRow]:
    """Validate the ``results`` of a bench summary (:class:`covrag.schema.bench.BenchSummary`)
    into rows."""
    summary = read_model(BenchSummary, data)
    rows = []
    for item in summary.results:
        x_kind, x = budget_axis(item.budget)
        rows.append(
            BenchRow(
                method=item.method,
                budget=item.budget,
                x_kind=x_kind,
                x=x,
                means=item.means,
                ci=item.ci95,
                headroom=item.headroom,
            )
        )
    return rows


def _family(spec: str) -> tuple[str, str]:
    """``alpha-nDCG@10`` -> (``alpha-nDCG``, ``10``); a spec without a cutoff keeps it whole."""
    name, sep, cutoff = spec.rpartition("@")
    return (name, cutoff) if sep else (spec, "")


def _charts(rows: list[BenchRow]) -> str:
    methods = list(dict.fromkeys(r.method for r in rows if r.method != ORACLE))
    color = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(methods)}
    color[ORACLE] = ORACLE_COLOR
    charts = []
    for x_kind in ("k", "tokens"):
        group = [r for r in rows if r.x_kind == x_kind and math.isfinite(r.x)]
        families: dict[str, set[str]] = {}
        for row in group:
            for spec in row.means:
                name, cutoff = _family(spec)
                families.setdefault(name, set()).add(cutoff)
        for name, cutoffs in families.items():
            series = []
            for method in [*methods, ORACLE]:
                points = tuple(
                    (r.x, value)
                    for r in group
                    if r.method == method
                    for spec, value in r.means.items()
                    if _family(spec)[0] == name
                )
                if points:
                    series.append(Series(method, points, color[method], oracle=method == ORACLE))
            title = f"{name}@{next(iter(cutoffs))}" if len(cutoffs) == 1 else f"{name}@{x_kind}"
            x_label = "k (passages)" if x_kind == "k" else "budget (tokens)"
            charts.append(line_chart_svg(title, x_label, series))
    legend = "".join(
        f'<span class="swatch{" oracle" if m == ORACLE else ""}" '
        f'style="background:{color[m]}"></span>{esc(m)}'
        for m in [*methods, ORACLE]
        if any(r.method == m for r in rows)
    )
    return f'<p class="legend">{legend}</p><div class="charts">{"".join(charts)}</div>'


def _tables(rows: list[BenchRow]) -> str:
    blocks = []
    for budget in dict.fromkeys(r.budget for r in rows):
        block = [r for r in rows if r.budget == budget]
        specs = list(dict.fromkeys(s for r in block for s in r.means))
        head = "".join(f"<th>{esc(s)}</th>" for s in specs)
        body = []
        for row in block:
            cells = []
            for spec in specs:
                mean = row.means.get(spec, math.nan)
                low, high = row.ci.get(spec, (math.nan, math.nan))
                half = (high - low) / 2
                ci = f" <span class=muted>\u00b1{half:.2f}</span>" if math.isfinite(half) else ""
                cells.append(f'<td class="num">{mean:.3f}{ci}</td>')
            room = ", ".join(f"{v:.3f}" for v in row.headroom.values() if math.isfinite(v))
            name = f"<b>{esc(row.method)}</b>" if row.method == ORACLE else esc(row.method)
            body.append(f"<tr><td>{name}</td>{''.join(cells)}<td class=num>{room or '-'}</td></tr>")
        blocks.append(
            f"<h3>Budget {esc(budget)}</h3><table><thead><tr><th>method</th>{head}"
            f"<th>headroom</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
        )
    return "".join(blocks)


def render_bench(data: Mapping[str, Any]) -> str:
    """The HTML report of a bench summary."""
    rows = parse_bench(data)
    dataset = data.get("dataset", "")
    topics = data.get("topics", "")
    baseline = data.get("baseline", "")
    subtitle = f"dataset: {dataset} \u00b7 {topics} topics \u00b7 baseline: {baseline}"
    body = (
        '<section class="block"><h2>Measures against the budget</h2>'
        '<p class="muted">Mean over topics per method; the dashed black line is the exact '
        f"optimum on the gold labels ({esc(ORACLE)}), the most any selection can cover."
        f"</p>{_charts(rows)}</section>"
        f'<section class="block"><h2>Tables</h2>{_tables(rows)}<p class="muted">'
        "\u00b1 half-width of the 95% bootstrap CI; headroom = optimum minus method on the "
        "coverage measure.</p></section>"
    )
    return page("covrag bench report", subtitle, body)
