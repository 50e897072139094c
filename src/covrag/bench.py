"""``covrag bench``: selectors x coverage sources x budgets on one dataset, measured honestly.

For every method (a selector, with a coverage source when it uses one) and budget, the bench
records per-topic values of each measure, their means with bootstrap confidence intervals, a paired
randomization test against a baseline (Holm-corrected across the methods compared), the headroom
to the exact optimum on the gold labels, and what selecting cost (seconds per topic; coverage
pairs scored and seconds).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from covrag.coverage.base import CoverageEstimator, parse_estimator
from covrag.coverage.gold import GoldCoverage
from covrag.errors import ConfigError
from covrag.evaluate import Judgments, Measure, evaluate, parse_measures
from covrag.evaluate.headroom import ORACLE as ORACLE  # re-exported
from covrag.evaluate.headroom import gap_closed
from covrag.evaluate.stats import bootstrap_ci, holm, paired_randomization_test
from covrag.pipeline import PrepareConfig, attach_coverage, config_for, prepare
from covrag.plan.sources import AspectSource, GoldAspects
from covrag.select.base import Candidates, Selector, parse_selector
from covrag.select.exact import ExactSelector
from covrag.tokens import with_token_costs
from covrag.types import Budget, Selection, Topic

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Method:
    """A selector, the coverage source it reads (None for selectors that read none), and the
    aspects coverage is estimated against (``gold``, ``llm``, ``pool``; see
    :mod:`covrag.plan.sources`)."""

    selector: Selector
    coverage: CoverageEstimator | None
    aspects: str = "gold"

    @property
    def name(self) -> str:
        name = repr(self.selector) + (f" @ {self.coverage!r}" if self.coverage else "")
        return name + (f" on {self.aspects} aspects" if self.aspects != "gold" else "")

    @property
    def coverage_key(self) -> tuple[str, str] | None:
        return (self.aspects, repr(self.coverage)) if self.coverage else None


@dataclass
class MethodResult:
    method: str
    budget: Budget
    selections: list[Selection]
    values: dict[str, dict[str, float]]  # measure -> query id -> value
    means: dict[str, float]
    ci: dict[str, tuple[float, float]]
    p_values: dict[str, float] = field(default_factory=dict)  # Holm-corrected, vs baseline
    headroom: dict[str, float] = field(default_factory=dict)  # optimum - method
    gap_closed: dict[str, float] = field(default_factory=dict)  # share of baseline->optimum gap
    select_seconds: float = 0.0  # mean per topic
    coverage_pairs: float = 0.0  # mean per topic
    coverage_seconds: float = 0.0  # mean per topic
    aspects_seconds: float = 0.0  # mean per topic spent finding the aspects (LLM, pool)


@dataclass
class BenchResult:
    dataset: str
    topics: int
    baseline: str
    measures: dict[str, list[str]]  # budget -> measure specs
    results: list[MethodResult]

    def for_budget(self, budget: Budget) -> list[MethodResult]:
        return [r for r in self.results if r.budget == budget]

    def to_json(self) -> dict[str, Any]:
        return {
            "dataset": self.dataset,
            "topics": self.topics,
            "baseline": self.baseline,
            "oracle": ORACLE,
            "results": [
                {
                    "method": r.method,
                    "budget": str(r.budget),
                    "means": r.means,
                    "ci95": {k: list(v) for k, v in r.ci.items()},
                    "p_vs_baseline_holm": r.p_values,
                    "headroom": r.headroom,
                    "gap_closed": r.gap_closed,
                    "select_seconds_per_topic": r.select_seconds,
                    "coverage_pairs_per_topic": r.coverage_pairs,
                    "coverage_seconds_per_topic": r.coverage_seconds,
                    "aspects_seconds_per_topic": r.aspects_seconds,
                    "per_query": r.values,
                }
                for r in self.results
            ],
        }


def default_measures(budget: Budget, excluded: bool = False) -> list[str]:
    """Rank measures at k for passage budgets; RVC/RVC2 (and alpha-nDCG@10) for token budgets;
    and ``Excl@k`` when topics exclude aspects."""
    specs: list[str] = []
    if budget.max_tokens is not None:
        specs += [f"RVC@{budget.max_tokens}", f"RVC2@{budget.max_tokens}"]
    k = budget.max_passages or 10
    specs += [f"alpha-nDCG@{k}", f"StRecall@{k}"]
    if budget.max_tokens is None:
        specs += [f"P@{k}", f"nDCG@{k}"]
    if excluded:
        specs.append(f"Excl@{k}")
    return specs


def headroom_measure(budget: Budget) -> str:
    """The measure the exact optimum maximises under this budget (its coverage share)."""
    if budget.max_tokens is not None:
        return f"RVC@{budget.max_tokens}"
    return f"StRecall@{budget.max_passages or 10}"


def uses_coverage(selector: Selector) -> bool:
    return bool(getattr(selector, "uses_coverage", False))


def build_methods(
    selectors: Sequence[str], coverages: Sequence[str], aspects: Sequence[str] = ("gold",)
) -> list[Method]:
    """Selectors that read coverage run once per coverage source and aspect source; the others
    run once. The ``gold`` estimator reads the gold labels, so it only pairs with gold aspects."""
    estimators = [parse_estimator(c) for c in coverages]
    methods: list[Method] = []
    for spec in selectors:
        selector = parse_selector(spec)
        if uses_coverage(selector):
            if not estimators:
                raise ConfigError(f"selector {selector!r} needs a coverage source (--coverage)")
            for source in aspects:
                for estimator in estimators:
                    if isinstance(estimator, GoldCoverage) and source != "gold":
                        if len(aspects) == 1:
                            raise ConfigError(
                                f"coverage 'gold' reads the gold labels: it cannot be estimated "
                                f"against {source} aspects (choose e.g. --coverage cross-encoder)"
                            )
                        continue
                    methods.append(Method(selector, estimator, source))
        else:
            methods.append(Method(selector, None))
    names = [m.name for m in methods]
    if len(set(names)) != len(names):
        raise ConfigError("the same method is listed twice")
    return methods


def run_bench(
    dataset: str,
    topics: Sequence[Topic],
    methods: Sequence[Method],
    budgets: Sequence[Budget],
    *,
    measures: Sequence[str] | None = None,
    baseline: str | None = None,
    exact: bool = True,
    config: PrepareConfig | None = None,
    seed: int = 0,
    n_resamples: int = 10_000,
    progress: Callable[[str], None] | None = None,
    aspect_sources: Mapping[str, AspectSource] | None = None,
) -> BenchResult:
    """Run every method under every budget on every topic, then measure and compare.

    Args:
        dataset: Name shown in the results.
        topics: Topics with gold labels (for the measures and the oracle).
        methods: What to compare (see :func:`build_methods`).
        budgets: Budgets to run each method under.
        measures: Measure specs; None = :func:`default_measures` per budget.
        baseline: Method name to test the others against (default: the first method).
        exact: Also run the exact optimum on the gold labels and report headroom.
        config: How topics become selector inputs.
        seed: Seed of the bootstrap and randomization tests.
        n_resamples: Resamples for both.
        progress: Called with a short label after each topic's selections.
        aspect_sources: The aspect sources the methods name, by name (``gold`` is built in).
    """
    if not methods:
        raise ConfigError("nothing to bench: give at least one selector")
    config = config or config_for([m.selector for m in methods])
    topics = [with_token_costs(t, config.counter) for t in topics]
    all_methods = list(methods)
    names = [m.name for m in all_methods]
    if exact:
        # Excluded aspects are no gain to the measures, so none to the optimum either.
        oracle = ExactSelector(exclude="penalize", penalty=0.0)
        all_methods.append(Method(oracle, GoldCoverage()))
        names.append(ORACLE)
    baseline = baseline or names[0]
    if baseline not in names:
        raise ConfigError(f"baseline {baseline!r} is not one of the methods: {', '.join(names)}")
    sources: dict[str, AspectSource] = {"gold": GoldAspects(), **(aspect_sources or {})}
    for method in all_methods:
        if method.aspects not in sources:
            raise ConfigError(f"method {method.name!r} needs the aspect source {method.aspects!r}")

    selections: dict[tuple[str, Budget], list[Selection]] = {}
    select_seconds: dict[tuple[str, Budget], float] = {}
    coverage_cost: dict[tuple[str, str], list[tuple[int, float]]] = {}
    aspect_seconds: dict[str, float] = {}
    estimators = {
        m.coverage_key: m.coverage
        for m in all_methods
        if m.coverage is not None and m.coverage_key is not None
    }
    for topic in topics:
        prepared: dict[tuple[str, str] | None, Candidates] = {}
        base = prepare(topic, None, config).candidates
        prepared[None] = base
        found = {s: sources[s].timed(topic) for s in {key[0] for key in estimators}}
        for s, sourced in found.items():
            aspect_seconds[s] = aspect_seconds.get(s, 0.0) + sourced.seconds
        estimated = {s: sourced.topic for s, sourced in found.items()}
        for key, estimator in estimators.items():
            matrix = estimator.estimate(estimated[key[0]])
            coverage_cost.setdefault(key, []).append((matrix.pairs_scored, matrix.seconds))
            prepared[key] = attach_coverage(base, matrix, estimated[key[0]])
        for method, name in zip(all_methods, names, strict=True):
            candidates = prepared[method.coverage_key]
            for budget in budgets:
                started = time.perf_counter()
                selection = method.selector.select(candidates, budget)
                elapsed = time.perf_counter() - started
                selections.setdefault((name, budget), []).append(selection)
                select_seconds[(name, budget)] = select_seconds.get((name, budget), 0.0) + elapsed
        if progress is not None:
            progress(topic.query_id)

    judgments = Judgments.from_topics(topics)
    excludes = any(j.excluded for j in judgments.values())
    measure_specs: dict[str, list[str]] = {}
    results: list[MethodResult] = []
    for budget in budgets:
        chosen: tuple[Measure, ...] = parse_measures(
            list(measures or default_measures(budget, excludes))
        )
        specs = [repr(m) for m in chosen]
        measure_specs[str(budget)] = specs
        block: list[MethodResult] = []
        for method, name in zip(all_methods, names, strict=True):
            picked = selections[(name, budget)]
            run = {s.query_id: s.passage_ids for s in picked}
            scores = evaluate(judgments, run, chosen)
            values = {repr(m): scores[m] for m in chosen}
            cost = coverage_cost.get(method.coverage_key, []) if method.coverage_key else []
            block.append(
                MethodResult(
                    method=name,
                    budget=budget,
                    selections=picked,
                    values=values,
                    means={repr(m): scores.mean(m) for m in chosen},
                    ci={
                        repr(m): bootstrap_ci(scores.column(m), n_resamples=n_resamples, seed=seed)
                        for m in chosen
                    },
                    select_seconds=select_seconds[(name, budget)] / max(len(topics), 1),
                    coverage_pairs=float(np.mean([c[0] for c in cost])) if cost else 0.0,
                    coverage_seconds=float(np.mean([c[1] for c in cost])) if cost else 0.0,
                    aspects_seconds=aspect_seconds.get(method.aspects, 0.0) / max(len(topics), 1),
                )
            )
        _compare(block, baseline, specs, seed, n_resamples)
        if exact:
            _headroom(block, baseline, headroom_measure(budget))
        results.extend(block)
    return BenchResult(dataset, len(topics), baseline, measure_specs, results)


def _compare(
    block: list[MethodResult], baseline: str, specs: list[str], seed: int, n_resamples: int
) -> None:
    """Paired randomization tests of each method against the baseline, Holm-corrected."""
    base = next(r for r in block if r.method == baseline)
    others = [r for r in block if r.method != baseline]
    for spec in specs:
        reference = np.array(list(base.values[spec].values()))
        raw = [
            paired_randomization_test(
                np.array(list(r.values[spec].values())),
                reference,
                n_resamples=n_resamples,
                seed=seed,
            )
            for r in others
        ]
        for result, p in zip(others, holm(raw), strict=True):
            result.p_values[spec] = float(p)


def _headroom(block: list[MethodResult], baseline: str, spec: str) -> None:
    oracle = next(r for r in block if r.method == ORACLE)
    base = next(r for r in block if r.method == baseline)
    optimum = oracle.means.get(spec)
    if optimum is None:
        return
    for result in block:
        value = result.means[spec]
        result.headroom[spec] = optimum - value
        closed = gap_closed(value, base.means[spec], optimum)
        result.gap_closed[spec] = closed if not math.isnan(closed) else float("nan")
