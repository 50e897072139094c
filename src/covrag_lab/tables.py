"""Tables the benchmarks print: the answer benchmarks' variants side by side."""

from __future__ import annotations

import math
from collections.abc import Sequence

from covrag.evaluation.answer_stats import VariantSummary

__all__ = ["markdown_table"]


def markdown_table(summaries: Sequence[VariantSummary], measures: Sequence[str]) -> str:
    """The summaries as a markdown table; ``*`` marks p < 0.05 against the baseline (Holm)."""
    head = "| variant | topics | " + " | ".join(measures) + " |"
    rule = "|---|---|" + "---|" * len(measures)
    rows = [head, rule]
    for s in summaries:
        cells = []
        for m in measures:
            mean = s.means.get(m, math.nan)
            p = s.p_values.get(m)
            text = "-" if math.isnan(mean) else f"{mean:.3f}"
            if p is not None:
                text += f"{'*' if p < 0.05 else ''} (p={p:.2f})"
            cells.append(text)
        rows.append(f"| {s.name} | {s.topics} | " + " | ".join(cells) + " |")
    return "\n".join(rows)
