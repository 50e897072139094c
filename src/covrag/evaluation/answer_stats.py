"""Answer measures across variants: means, and paired tests against a baseline, Holm-corrected.

A *variant* is one way of producing answers for the same topics (0, 1 or 2 critique passes; two
feedback modes; two generators). For each measure, each variant is compared with the baseline by a
paired randomization test over the topics where both values are defined, and the p-values of all
comparisons of that measure are adjusted with Holm's method.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from covrag.errors import ConfigError
from covrag.evaluation.answers import AnswerEvaluation
from covrag.evaluation.stats import holm, paired_randomization_test

#: The measures reported by default (``~ce`` = judged by the coverage cross-encoder).
ANSWER_MEASURES = (
    "answer_strecall",
    "transfer_rate",
    "v_strict",
    "citation_precision",
    "answer_strecall~ce",
    "transfer_rate~ce",
    "cited_share",
    "copy_rate",
)


@dataclass(frozen=True)
class VariantSummary:
    """One variant's means, and its adjusted p-values against the baseline.

    Attributes:
        name: The variant.
        topics: Topics evaluated.
        means: Measure -> mean over the topics where it is defined.
        defined: Measure -> number of topics where it is defined.
        p_values: Measure -> Holm-adjusted p-value against the baseline (absent for the
            baseline itself, and where fewer than 2 topics are paired).
    """

    name: str
    topics: int
    means: Mapping[str, float]
    defined: Mapping[str, int]
    p_values: Mapping[str, float] = field(default_factory=dict)


def compare_variants(
    variants: Mapping[str, Sequence[AnswerEvaluation]],
    *,
    baseline: str | None = None,
    measures: Sequence[str] = ANSWER_MEASURES,
    seed: int = 0,
) -> list[VariantSummary]:
    """Summaries of every variant, in the given order, the baseline (default: first) tested
    against each other one."""
    if not variants:
        raise ConfigError("no variants to compare")
    names = list(variants)
    baseline = baseline or names[0]
    if baseline not in variants:
        raise ConfigError(f"baseline {baseline!r} is not one of the variants {names}")
    values: dict[str, dict[str, dict[str, float]]] = {
        name: {e.query_id: e.measures() for e in evaluations}
        for name, evaluations in variants.items()
    }
    raw: dict[str, dict[str, float]] = {name: {} for name in names}
    for measure in measures:
        tested: list[tuple[str, float]] = []
        for name in names:
            if name == baseline:
                continue
            shared = [
                q
                for q in values[name]
                if q in values[baseline]
                and not math.isnan(values[name][q].get(measure, math.nan))
                and not math.isnan(values[baseline][q].get(measure, math.nan))
            ]
            if len(shared) < 2:
                continue
            a = [values[name][q][measure] for q in shared]
            b = [values[baseline][q][measure] for q in shared]
            tested.append((name, paired_randomization_test(a, b, seed=seed).p_value))
        if tested:
            adjusted = holm([p for _, p in tested])
            for (name, _), p in zip(tested, adjusted, strict=True):
                raw[name][measure] = float(p)
    summaries = []
    for name in names:
        means: dict[str, float] = {}
        defined: dict[str, int] = {}
        for measure in measures:
            column = [v[measure] for v in values[name].values() if not math.isnan(v[measure])]
            means[measure] = float(np.mean(column)) if column else math.nan
            defined[measure] = len(column)
        summaries.append(VariantSummary(name, len(values[name]), means, defined, raw[name]))
    return summaries
