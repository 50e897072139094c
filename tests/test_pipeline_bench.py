"""The pipeline's bench on a tiny slice of bundled data, with the gold labels."""

from __future__ import annotations

import json

import pytest

from covrag.coverage import parse_estimator
from covrag.data import load_dataset
from covrag.errors import ConfigError
from covrag.pipeline import (
    ORACLE,
    BenchConfig,
    PrepareConfig,
    build_methods,
    default_measures,
    headroom_measure,
    run_bench,
)
from covrag.pipeline.prepare import select_topic
from covrag.types import Budget, Topic

BUDGETS = [Budget(max_passages=3), Budget(max_passages=5)]
ORDER = PrepareConfig(relevance="order")


@pytest.fixture(scope="module")
def topics() -> list[Topic]:
    return load_dataset("argkp2021:dev")[:2]


def test_bench_measures_every_method_under_every_budget(topics: list[Topic]) -> None:
    methods = build_methods(["random", "greedy-coverage", "expected-coverage"], ["gold"])
    seen: list[str] = []
    result = run_bench(
        "argkp2021:dev", topics, methods, BUDGETS, config=ORDER, n_resamples=200,
        progress=seen.append,
    )  # fmt: skip
    assert seen == [t.query_id for t in topics]
    assert result.topics == 2 and result.baseline == "random"
    names = ["random", "greedy-coverage @ gold", "expected-coverage @ gold", ORACLE]
    for budget in BUDGETS:
        rows = result.for_budget(budget)
        assert [r.method for r in rows] == names
        assert result.measures[str(budget)] == default_measures(budget)
        spec = headroom_measure(budget)
        optimum = rows[-1].means[spec]
        k = budget.max_passages or 0
        for row in rows:
            assert len(row.selections) == 2 and all(len(s) <= k for s in row.selections)
            assert row.means[spec] <= optimum + 1e-9
            assert row.headroom[spec] == pytest.approx(optimum - row.means[spec])
            low, high = row.ci[spec]
            assert low <= row.means[spec] <= high
        assert all(set(r.p_values) == set(result.measures[str(budget)]) for r in rows[1:])
        assert rows[0].p_values == {}  # the baseline is not tested against itself
    summary = json.loads(json.dumps(result.to_json()))
    assert summary["oracle"] == ORACLE and len(summary["results"]) == len(names) * len(BUDGETS)


def test_bench_selects_what_the_single_topic_path_selects(topics: list[Topic]) -> None:
    methods = build_methods(["greedy-coverage"], ["gold"])
    result = run_bench(
        "argkp2021:dev", topics, methods, BUDGETS[:1], config=ORDER, exact=False, n_resamples=50
    )
    (row,) = result.results
    gold = parse_estimator("gold")
    single = [select_topic(t, methods[0].selector, BUDGETS[0], gold, ORDER) for t in topics]
    assert [s.passage_ids for s in row.selections] == [s.passage_ids for s in single]
    # The same settings as a BenchConfig give the same figures.
    settings = BenchConfig(exact=False, n_resamples=50)
    again = run_bench("argkp2021:dev", topics, methods, BUDGETS[:1], settings, config=ORDER)
    assert again.results[0].means == row.means and again.results[0].ci == row.ci
    assert again.results[0].headroom == {} and again.baseline == "greedy-coverage @ gold"


def test_bench_refuses_what_it_cannot_run(topics: list[Topic]) -> None:
    methods = build_methods(["greedy-coverage"], ["gold"])
    with pytest.raises(ConfigError, match="nothing to bench"):
        run_bench("d", topics, [], BUDGETS)
    with pytest.raises(ConfigError, match="baseline 'mmr' is not one of the methods"):
        run_bench("d", topics, methods, BUDGETS, baseline="mmr", config=ORDER)
    with pytest.raises(ConfigError, match="needs a coverage source"):
        build_methods(["greedy-coverage"], [])
    with pytest.raises(ConfigError, match="aspect source 'llm'"):
        run_bench("d", topics, build_methods(["greedy-coverage"], ["embedding"], ["llm"]), BUDGETS)
