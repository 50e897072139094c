"""``covrag bench``: selectors x coverage sources x budgets on one dataset, measured honestly.

For every method (a selector, with a coverage source when it uses one) and budget, the bench
records per-topic values of each measure, their means with bootstrap confidence intervals, a paired
randomization test against a baseline (Holm-corrected across the methods compared), the headroom
to the exact optimum on the gold labels, and what selecting cost (seconds per topic; coverage
pairs scored and seconds).
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from covrag.coverage.base import CoverageEstimator, parse_estimator
from covrag.coverage.gold import GoldCoverage
from covrag.errors import ConfigError
from covrag.evaluation import EvalResults, Judgments, Measure, evaluate, parse_measures
from covrag.evaluation.bench_results import ORACLE, BenchResult, MethodResult
from covrag.evaluation.headroom import gap_closed
from covrag.evaluation.stats import bootstrap_ci, holm, paired_randomization_test
from covrag.pipeline.cache import TopicCache
from covrag.pipeline.config import BenchConfig, PrepareConfig, config_for
from covrag.pipeline.executor import Executor, SerialExecutor, preloaded
from covrag.pipeline.policy import ContextPolicy
from covrag.pipeline.usecases import estimate, select
from covrag.plan.sources import AspectSource, GoldAspects
from covrag.selectors.base import COVERAGE, Selector, parse_selector
from covrag.selectors.exact import ExactSelector
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
    """Whether ``selector`` reads a coverage matrix (a bench runs it per coverage source)."""
    return selector.needs(COVERAGE)


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
    settings: BenchConfig | None = None,
    *,
    config: PrepareConfig | None = None,
    progress: Callable[[str], None] | None = None,
    aspect_sources: Mapping[str, AspectSource] | None = None,
    measures: Sequence[str] | None = None,
    baseline: str | None = None,
    exact: bool | None = None,
    seed: int | None = None,
    n_resamples: int | None = None,
    executor: Executor | None = None,
) -> BenchResult:
    """Run every method under every budget on every topic, then measure and compare.

    Args:
        dataset: Name shown in the results.
        topics: Topics with gold labels (for the measures and the oracle).
        methods: What to compare (see :func:`build_methods`).
        budgets: Budgets to run each method under.
        settings: Measures, baseline, exact optimum, seed and resamples (:class:`BenchConfig`);
            the keyword arguments of the same names override its fields.
        config: How topics become selector inputs (default: what the selectors need).
        progress: Called with a short label after each topic's selections.
        aspect_sources: The aspect sources the methods name, by name (``gold`` is built in).
        executor: Where each topic's work runs (default: this process, one topic after the
            other; :class:`covrag.pipeline.distributed.RayExecutor` for a Ray cluster). The
            results do not depend on it.
    """
    overrides: dict[str, Any] = {
        "measures": measures,
        "baseline": baseline,
        "exact": exact,
        "seed": seed,
        "n_resamples": n_resamples,
    }
    settings = dataclasses.replace(
        settings or BenchConfig(), **{k: v for k, v in overrides.items() if v is not None}
    )
    if not methods:
        raise ConfigError("nothing to bench: give at least one selector")
    config = config or config_for([m.selector for m in methods])
    topics = [with_token_costs(t, config.counter) for t in topics]
    named = _with_oracle(methods, settings.exact)
    chosen_baseline = settings.baseline or named[0][0]
    if chosen_baseline not in dict(named):
        names = ", ".join(name for name, _ in named)
        raise ConfigError(f"baseline {chosen_baseline!r} is not one of the methods: {names}")
    sources: dict[str, AspectSource] = {"gold": GoldAspects(), **(aspect_sources or {})}
    for _, method in named:
        if method.aspects not in sources:
            raise ConfigError(f"method {method.name!r} needs the aspect source {method.aspects!r}")
    runs = _select_all(topics, named, budgets, config, sources, progress, executor)
    settings = dataclasses.replace(settings, baseline=chosen_baseline)
    judgments = Judgments.from_topics(topics)
    measure_specs: dict[str, list[str]] = {}
    results: list[MethodResult] = []
    for budget in budgets:
        specs, rows = _measure_budget(budget, named, runs, judgments, settings)
        measure_specs[str(budget)] = specs
        results.extend(rows)
    return BenchResult(dataset, len(topics), chosen_baseline, measure_specs, results)


def _measure_budget(
    budget: Budget,
    named: Sequence[tuple[str, Method]],
    runs: _Runs,
    judgments: Judgments,
    settings: BenchConfig,
) -> tuple[list[str], list[MethodResult]]:
    """Every method's values under one budget, with intervals, tests and headroom."""
    assert settings.baseline is not None
    excludes = any(j.excluded for j in judgments.values())
    chosen = parse_measures(list(settings.measures or default_measures(budget, excludes)))
    specs = [repr(m) for m in chosen]
    block = [_measure(name, method, budget, runs, judgments, chosen) for name, method in named]
    for result, scores in block:
        result.ci = {
            repr(m): bootstrap_ci(
                scores.column(m), n_resamples=settings.n_resamples, seed=settings.seed
            )
            for m in chosen
        }
    rows = [result for result, _ in block]
    _compare(rows, settings.baseline, specs, settings.seed, settings.n_resamples)
    if settings.exact:
        _headroom(rows, settings.baseline, headroom_measure(budget))
    return specs, rows


def _with_oracle(methods: Sequence[Method], exact: bool) -> list[tuple[str, Method]]:
    """The methods by name, and the exact optimum on the gold labels when ``exact``."""
    named = [(m.name, m) for m in methods]
    if exact:
        # Excluded aspects are no gain to the measures, so none to the optimum either.
        oracle = ExactSelector(exclude="penalize", penalty=0.0)
        named.append((ORACLE, Method(oracle, GoldCoverage())))
    return named


@dataclass
class _Runs:
    """Every selection of a bench, and what selecting and estimating cost."""

    selections: dict[tuple[str, Budget], list[Selection]]
    select_seconds: dict[tuple[str, Budget], float]
    coverage_cost: dict[tuple[str, str], list[tuple[int, float]]]
    aspect_seconds: dict[str, float]  # aspect source -> seconds over all topics


def _select_all(
    topics: Sequence[Topic],
    named: Sequence[tuple[str, Method]],
    budgets: Sequence[Budget],
    config: PrepareConfig,
    sources: Mapping[str, AspectSource],
    progress: Callable[[str], None] | None,
    executor: Executor | None = None,
) -> _Runs:
    """Estimate each topic once per aspect source and estimator and run every method under
    every budget (:func:`covrag.pipeline.usecases.select` with the topic's cache).

    The model step (aspects, embeddings, coverage) and the task step (selection) of each topic
    run on ``executor`` (default: this process); results are gathered in topic order.
    """
    model_step = _TopicModels(config, dict(sources), tuple(named))
    task_step = _TopicSelections(tuple(named), tuple(budgets), config)
    done = (executor or SerialExecutor()).map(
        topics, [t.query_id for t in topics], preloaded(model_step), task_step, progress
    )
    runs = _Runs({}, {}, {}, {})
    for topic_runs in done:
        for name, seconds in topic_runs.aspect_seconds.items():
            runs.aspect_seconds[name] = runs.aspect_seconds.get(name, 0.0) + seconds
        for key, cost in topic_runs.coverage_cost.items():
            runs.coverage_cost.setdefault(key, []).append(cost)
        for run_key, (selection, elapsed) in topic_runs.selections.items():
            runs.selections.setdefault(run_key, []).append(selection)
            runs.select_seconds[run_key] = runs.select_seconds.get(run_key, 0.0) + elapsed
    return runs


@dataclass(frozen=True)
class _TopicInputs:
    """A topic's model outputs: the topic and its cache (:class:`TopicCache`: its pool, the
    aspects of each source and each coverage matrix); what the aspect sources and the
    estimators cost."""

    topic: Topic
    cache: TopicCache
    aspect_seconds: dict[str, float]
    coverage_cost: dict[tuple[str, str], tuple[int, float]]


@dataclass(frozen=True)
class _TopicRuns:
    """A topic's selections (with seconds) per (method, budget), and the costs of its inputs."""

    selections: dict[tuple[str, Budget], tuple[Selection, float]]
    aspect_seconds: dict[str, float]
    coverage_cost: dict[tuple[str, str], tuple[int, float]]


def method_policy(method: Method, budget: Budget, config: PrepareConfig) -> ContextPolicy:
    """The context policy of one method under one budget: no floor, no gate."""
    return ContextPolicy(
        selector=method.selector,
        coverage=method.coverage,
        aspects=method.aspects,
        k=budget.max_passages,
        max_tokens=budget.max_tokens,
        relevance=config.relevance,
        counter=config.counter,
    )


@dataclass(frozen=True)
class _TopicModels:
    """The model step of a bench topic: the estimate step of every method, into one
    :class:`TopicCache`, so each aspect source and estimator runs once per topic."""

    config: PrepareConfig
    sources: dict[str, AspectSource]
    named: tuple[tuple[str, Method], ...]

    def __call__(self, topic: Topic) -> _TopicInputs:
        cache = TopicCache(self.config, dict(self.sources))
        costs: dict[tuple[str, str], tuple[int, float]] = {}
        for _, method in self.named:
            policy = method_policy(method, Budget(max_passages=1), self.config)
            estimate(topic, policy, cache=cache)
            if method.coverage_key is not None:
                matrix = cache.matrices[method.coverage_key]
                costs[method.coverage_key] = (matrix.pairs_scored, matrix.seconds)
        seconds = {name: cache.sourced[name].seconds for name in sorted({k[0] for k in costs})}
        return _TopicInputs(topic, cache, seconds, costs)


@dataclass(frozen=True)
class _TopicSelections:
    """The task step of a bench topic: every method under every budget, from its cache."""

    named: tuple[tuple[str, Method], ...]
    budgets: tuple[Budget, ...]
    config: PrepareConfig

    def __call__(self, inputs: _TopicInputs) -> _TopicRuns:
        selections: dict[tuple[str, Budget], tuple[Selection, float]] = {}
        for name, method in self.named:
            for budget in self.budgets:
                policy = method_policy(method, budget, self.config)
                chosen = select(inputs.topic, policy, cache=inputs.cache)
                selections[(name, budget)] = (chosen.selection, chosen.seconds["select"])
        return _TopicRuns(selections, inputs.aspect_seconds, inputs.coverage_cost)


def _measure(
    name: str,
    method: Method,
    budget: Budget,
    runs: _Runs,
    judgments: Judgments,
    chosen: Sequence[Measure],
) -> tuple[MethodResult, EvalResults]:
    """One method's values and means under one budget (intervals and tests come after)."""
    picked = runs.selections[(name, budget)]
    scores = evaluate(judgments, {s.query_id: s.passage_ids for s in picked}, chosen)
    cost = runs.coverage_cost.get(method.coverage_key, []) if method.coverage_key else []
    result = MethodResult(
        method=name,
        budget=budget,
        selections=picked,
        values={repr(m): scores[m] for m in chosen},
        means={repr(m): scores.mean(m) for m in chosen},
        ci={},
        select_seconds=runs.select_seconds[(name, budget)] / max(len(picked), 1),
        coverage_pairs=float(np.mean([c[0] for c in cost])) if cost else 0.0,
        coverage_seconds=float(np.mean([c[1] for c in cost])) if cost else 0.0,
        aspects_seconds=runs.aspect_seconds.get(method.aspects, 0.0) / max(len(picked), 1),
    )
    return result, scores


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
