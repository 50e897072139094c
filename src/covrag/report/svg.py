"""Inline SVG for the report: the coverage heatmap and line charts. No external resources.

Every string that comes from the data (ids, texts, method names) goes through :func:`esc`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from covrag.types import CoverageMatrix

PALETTE = (
    "#0072b2",
    "#e69f00",
    "#009e73",
    "#cc79a7",
    "#56b4e9",
    "#d55e00",
    "#8c6d31",
    "#7f7f7f",
)
ORACLE_COLOR = "#111111"


def esc(text: object) -> str:
    """HTML/SVG-escaped text, quotes included (safe in text and in attribute values)."""
    return html.escape(str(text), quote=True)


def shade(p: float) -> str:
    """A colour from near-white (0) to dark blue (1)."""
    p = min(max(p, 0.0), 1.0)
    low, high = (247, 251, 255), (8, 48, 107)
    r, g, b = (round(lo + (hi - lo) * p) for lo, hi in zip(low, high, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


@dataclass(frozen=True)
class HeatmapRow:
    """One passage row: its index in the matrix, its anchor id, its rank (0 = not selected) and
    whether the coverage floor removed it from the pool before selection."""

    index: int
    passage_id: str
    anchor: str
    rank: int
    below_floor: bool = False


def heatmap_svg(
    coverage: CoverageMatrix,
    rows: Sequence[HeatmapRow],
    aspect_labels: Sequence[str],
    excluded: Sequence[bool],
) -> str:
    """Passages (rows) x aspects (columns); colour = probability, a dot = covered (>= threshold).

    Selected rows carry their rank in a band on the left; excluded aspects have red labels.
    """
    cell_w, cell_h = 30, 16
    left, top = 190, 34
    width = left + cell_w * len(aspect_labels) + 12
    height = top + cell_h * len(rows) + 12
    parts = [
        f'<svg class="heatmap" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="coverage heatmap: {len(rows)} passages by {len(aspect_labels)} aspects, '
        f'threshold {esc(coverage.threshold_text())}">'
    ]
    for j, label in enumerate(aspect_labels):
        x = left + j * cell_w + cell_w / 2
        color = "#c62828" if excluded[j] else "#333"
        parts.append(
            f'<text class="col" x="{x:.1f}" y="{top - 10}" text-anchor="middle" fill="{color}">'
            f"{esc(label)}<title>{esc(coverage.aspect_ids[j])}</title></text>"
        )
    probs = coverage.probs
    thresholds = coverage.thresholds  # one per aspect column
    previous_selected = True
    for r, row in enumerate(rows):
        y = top + r * cell_h
        selected = row.rank > 0
        if previous_selected and not selected and r:
            parts.append(
                f'<line x1="4" x2="{width - 4}" y1="{y}" y2="{y}" stroke="#999" '
                'stroke-dasharray="4 3"/>'
            )
        previous_selected = selected
        if selected:
            parts.append(
                f'<rect class="sel" x="4" y="{y + 1}" width="{left - 8}" height="{cell_h - 2}" '
                'rx="3" fill="#fff3c4"/>'
                f'<text x="10" y="{y + cell_h - 4}" font-weight="bold">#{row.rank}</text>'
            )
        if row.below_floor:
            parts.append(
                f'<text class="below-floor" x="30" y="{y + cell_h - 4}" fill="#6a3d9a">'
                "\u2715<title>below the coverage floor: not a candidate</title></text>"
            )
        label = row.passage_id if len(row.passage_id) <= 20 else row.passage_id[:19] + "\u2026"
        parts.append(
            f'<a href="#{esc(row.anchor)}"><text class="row" x="{left - 6}" '
            f'y="{y + cell_h - 4}" text-anchor="end">{esc(label)}'
            f"<title>{esc(row.passage_id)}</title></text></a>"
        )
        parts.append(f'<g transform="translate(0,{y})">')
        parts += _cells(coverage, row, [float(probs[row.index, j]) for j in range(len(thresholds))])
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)


def _cells(coverage: CoverageMatrix, row: HeatmapRow, probs: Sequence[float]) -> list[str]:
    """One heatmap row's cells (at y = 0): colour by probability, a dot where covered."""
    cell_w, cell_h, left = 30, 16, 190
    thresholds = coverage.thresholds
    parts = []
    for j, p in enumerate(probs):
        covered = p >= thresholds[j]
        x = left + j * cell_w
        # A tooltip only where there is something to read keeps large pools small.
        tip = (
            f"<title>{esc(row.passage_id)} \u00d7 {esc(coverage.aspect_ids[j])}: {p:.2f}"
            f"{' (covered)' if covered else ''}</title>"
            if p > 0
            else ""
        )
        parts.append(
            f'<rect class="cell{" covered" if covered else ""}" x="{x}" '
            f'width="{cell_w - 1}" height="{cell_h - 1}" fill="{shade(p)}">{tip}</rect>'
        )
        if covered:
            dot = "#fff" if p > 0.55 else "#08306b"
            parts.append(
                f'<circle cx="{x + cell_w / 2 - 0.5:.1f}" cy="{cell_h / 2 - 0.5:.1f}" r="3" '
                f'fill="{dot}" pointer-events="none"/>'
            )
    return parts


def scale_svg(threshold: float, floor: float | None = None) -> str:
    """The colour scale 0..1 with the coverage threshold marked, and the floor when given."""
    width, bar = 260, 200
    height = 46 if floor is None else 60
    stops = "".join(
        f'<stop offset="{t / 10:.1f}" stop-color="{shade(t / 10)}"/>' for t in range(11)
    )
    x = 10 + bar * threshold
    marks = ""
    if floor is not None:
        fx = 10 + bar * min(max(floor, 0.0), 1.0)
        marks = (
            f'<line x1="{fx:.1f}" x2="{fx:.1f}" y1="3" y2="25" stroke="#6a3d9a" '
            f'stroke-width="2" stroke-dasharray="3 2"/><text class="floor" x="{fx:.1f}" y="54" '
            f'text-anchor="middle" fill="#6a3d9a">floor {floor:g}</text>'
        )
    return (
        f'<svg class="scale" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="probability '
        f'scale, threshold {threshold:g}"><defs><linearGradient id="covrag-scale">{stops}'
        f'</linearGradient></defs><rect x="10" y="8" width="{bar}" height="12" '
        f'fill="url(#covrag-scale)" stroke="#999"/><line x1="{x:.1f}" x2="{x:.1f}" y1="3" '
        f'y2="25" stroke="#c62828" stroke-width="2"/>{marks}<text x="10" y="40">0</text>'
        f'<text x="{10 + bar}" y="40" text-anchor="end">1</text><text class="threshold" '
        f'x="{x:.1f}" y="40" text-anchor="middle" fill="#c62828">threshold {threshold:g}</text>'
        "</svg>"
    )


@dataclass(frozen=True)
class Series:
    """One line of a chart: a name, (x, y) points, and whether it is the exact optimum."""

    name: str
    points: tuple[tuple[float, float], ...]
    color: str
    oracle: bool = False


def _nice_top(value: float) -> float:
    if value <= 1.0:
        return max(0.1, math.ceil(value * 10 - 1e-9) / 10)
    magnitude = 10.0 ** math.floor(math.log10(value))
    return float(math.ceil(value / magnitude) * magnitude)


def line_chart_svg(title: str, x_label: str, series: Sequence[Series]) -> str:
    """A line chart of a measure against the budget, one line per method (optimum dashed)."""
    width, height = 460, 280
    left, right, top, bottom = 52, 16, 28, 46
    xs = sorted({x for s in series for x, _ in s.points})
    ys = [y for s in series for _, y in s.points if math.isfinite(y)]
    y_top = _nice_top(max(ys, default=1.0))
    x_lo, x_hi = (xs[0], xs[-1]) if xs else (0.0, 1.0)
    span = x_hi - x_lo

    def px(x: float) -> float:
        inner = width - left - right
        return left + (inner / 2 if span == 0 else (x - x_lo) / span * inner)

    def py(y: float) -> float:
        return top + (1 - y / y_top) * (height - top - bottom)

    parts = [
        f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{esc(title)} against {esc(x_label)}">',
        f'<text x="{width / 2}" y="16" text-anchor="middle" font-weight="bold">{esc(title)}</text>',
    ]
    for i in range(6):
        value = y_top * i / 5
        y = py(value)
        parts.append(
            f'<line x1="{left}" x2="{width - right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e4e4e4"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{value:.2f}</text>'
        )
    for x in xs:
        parts.append(
            f'<text x="{px(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:g}</text>'
        )
    parts.append(
        f'<text x="{(left + width - right) / 2}" y="{height - 8}" text-anchor="middle">'
        f"{esc(x_label)}</text>"
        f'<line x1="{left}" x2="{left}" y1="{top}" y2="{height - bottom}" stroke="#666"/>'
        f'<line x1="{left}" x2="{width - right}" y1="{height - bottom}" y2="{height - bottom}" '
        'stroke="#666"/>'
    )
    for s in series:
        points = sorted(p for p in s.points if math.isfinite(p[1]))
        coords = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
        dash = ' stroke-dasharray="6 4"' if s.oracle else ""
        stroke = 2.5 if s.oracle else 1.8
        kind = "oracle" if s.oracle else "method"
        parts.append(
            f'<g class="series {kind}" data-name="{esc(s.name)}"><title>{esc(s.name)}</title>'
            f'<polyline points="{coords}" fill="none" stroke="{s.color}" '
            f'stroke-width="{stroke}"{dash}/>'
        )
        for x, y in points:
            parts.append(
                f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.2" fill="{s.color}">'
                f"<title>{esc(s.name)}: {y:.3f} at {x:g}</title></circle>"
            )
        parts.append("</g>")
    parts.append("</svg>")
    return "".join(parts)
