"""evaluate/aggregate: semantics, batching, caching, and parity with ir_measures + pyndeval and
ir_measures + pytrec_eval on random topics and on the bundled datasets."""

from __future__ import annotations

import contextlib
import io
import logging
import random
import warnings
from collections.abc import Iterator, Mapping, Sequence
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from covrag.errors import ConfigError, DataError
from covrag.evaluation import (
    AlphaNDCG,
    EvalResults,
    Judgments,
    StRecall,
    _compiled,
    aggregate,
    binary_qrels,
    diversity_qrels,
    evaluate,
    parse_measure,
    scoring,
)
from covrag.evaluation.qrels import run_to_ir_measures, to_ir_measures

CUTOFFS = range(1, 21)
DIVERSITY = (
    [f"alpha-nDCG@{k}" for k in CUTOFFS]
    + [f"alpha-nDCG(alpha=0.7)@{k}" for k in CUTOFFS]
    + [f"StRecall@{k}" for k in CUTOFFS]
    + [f"alpha-nDCG(alpha=1.0)@{k}" for k in (1, 3, 10, 20)]
)
BINARY = [f"{name}@{k}" for name in ("P", "nDCG") for k in (1, 2, 5, 10, 20)]

LABELS = {
    "q1": {"d1": ["a"], "d2": ["a", "b"], "d3": []},
    "q2": {"e1": ["x"], "e2": ["y"], "e3": ["x", "y"]},
}


@pytest.fixture
def judgments() -> Judgments:
    return Judgments.from_labels(LABELS)


# --- semantics --------------------------------------------------------------------------------


def test_topic_missing_from_run_scores_zero_and_counts_in_means(judgments: Judgments) -> None:
    result = evaluate(judgments, {"q1": ["d2"]}, ["StRecall@1", "P@1", "alpha-nDCG@1"])
    assert result.query_ids == ("q1", "q2")
    assert result["StRecall@1"] == {"q1": 1.0, "q2": 0.0}
    assert result.means()[StRecall(1)] == 0.5
    assert aggregate(judgments, {"q1": ["d2"]}, "P@1") == {parse_measure("P@1"): 0.5}


def test_run_topic_without_judgments_is_ignored_with_a_warning(
    judgments: Judgments, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="covrag.evaluation.scoring"):
        result = evaluate(judgments, {"q1": ["d1"], "nope": ["d1"]}, "P@1")
    assert result.query_ids == ("q1", "q2")
    assert "1 run topic(s) have no judgments" in caplog.text and "'nope'" in caplog.text


def test_bad_rankings_raise_data_errors(judgments: Judgments) -> None:
    with pytest.raises(DataError, match="lists doc 'd1' twice"):
        evaluate(judgments, {"q1": ["d1", "d2", "d1"]}, "P@5")
    with pytest.raises(DataError, match="must be a sequence of doc ids"):
        evaluate(judgments, {"q1": "d1"}, "P@5")


def test_results_accessors(judgments: Judgments) -> None:
    result = evaluate(judgments, {"q1": ["d2", "d1"], "q2": ["e3"]}, [StRecall(1), "P@2"])
    assert isinstance(result, EvalResults)
    assert result.measures == (StRecall(1), parse_measure("P@2"))
    assert result[StRecall(1)] == result["StRecall@1"] == {"q1": 1.0, "q2": 1.0}
    assert result.column("P@2").tolist() == [1.0, 0.5]
    assert result.mean("P@2") == 0.75
    assert not result.values.flags.writeable
    with pytest.raises(ConfigError, match="was not evaluated"):
        result.column("nDCG@2")
    assert "2 topics" in repr(result)


def test_no_topics_gives_nan_means() -> None:
    result = evaluate(Judgments(()), {}, "alpha-nDCG@10")
    assert result.values.shape == (0, 1)
    assert np.isnan(result.mean("alpha-nDCG@10"))


def test_batches_and_ideal_cache_do_not_change_values(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(7)
    labels = {
        f"q{q}": {
            f"d{i}": rng.sample("abcdef", rng.randint(0, 3)) for i in range(rng.randint(1, 30))
        }
        for q in range(40)
    }
    run = {q: rng.sample(sorted(docs), len(docs)) for q, docs in labels.items()}
    specs = ["alpha-nDCG@5", "alpha-nDCG@25", "alpha-nDCG(alpha=0.9)@7", "StRecall@25", "nDCG@9"]
    whole = evaluate(Judgments.from_labels(labels), run, specs).values
    monkeypatch.setattr(scoring, "_BLOCK", 50)
    monkeypatch.setattr(_compiled, "_IDEAL_BLOCK", 40)
    judgments = Judgments.from_labels(labels)
    shallow = evaluate(judgments, run, ["alpha-nDCG@3"]).values  # caches a shallow ideal
    np.testing.assert_array_equal(evaluate(judgments, run, specs).values, whole)  # deeper
    np.testing.assert_array_equal(evaluate(judgments, run, "alpha-nDCG@3").values, shallow)
    assert judgments._compiled.ideal_gains(0.5, 3).shape == (40, 3)


def test_measure_objects_and_strings_mix() -> None:
    judgments = Judgments.from_labels(LABELS)
    a = evaluate(judgments, {"q1": ["d2"]}, [AlphaNDCG(3, alpha=0.7), "alpha-nDCG@3"])
    assert a.measures == (AlphaNDCG(3, 0.7), AlphaNDCG(3))


# --- parity with the reference implementations ----------------------------------------------


@pytest.fixture(scope="module")
def ir_measures() -> ModuleType:
    pytest.importorskip("pyndeval")
    pytest.importorskip("pytrec_eval")
    module: ModuleType = pytest.importorskip("ir_measures")
    return module


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    # ir_measures warns on stderr about single-subtopic topics and deprecations.
    with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
        warnings.simplefilter("ignore")
        yield


def reference(
    ir_measures: Any, qrels: list[Any], run: Mapping[str, Sequence[str]], specs: list[str]
) -> dict[tuple[str, str], float]:
    measures = [ir_measures.parse_measure(s.replace("alpha-nDCG", "alpha_nDCG")) for s in specs]
    with quiet():
        metrics = list(
            ir_measures.iter_calc(measures, to_ir_measures(qrels), run_to_ir_measures(run))
        )
    return {
        (str(m.measure).replace("alpha_nDCG", "alpha-nDCG"), m.query_id): m.value for m in metrics
    }


def assert_parity(ir_measures: Any, judgments: Judgments, run: Mapping[str, Sequence[str]]) -> None:
    ours = evaluate(judgments, run, DIVERSITY + BINARY)
    qrels = diversity_qrels(judgments)
    # One call per alpha: ir_measures 0.4.3 hands pyndeval an exhausted run iterator on the
    # second invocation, so measures with two alphas in one call read 0 for the second.
    expected: dict[tuple[str, str], float] = {}
    for alpha in ("", "alpha=0.7", "alpha=1.0"):
        group = [s for s in DIVERSITY if alpha in s and (alpha or "alpha=" not in s)]
        expected.update(reference(ir_measures, qrels, run, group))
    expected.update(reference(ir_measures, binary_qrels(judgments), run, BINARY))
    for measure in ours.measures:
        for query_id, value in ours[measure].items():
            key = (repr(measure), query_id)
            if key not in expected:  # a topic the reference never saw: no judged docs at all
                assert value == 0.0
                continue
            assert value == pytest.approx(expected[key], abs=1e-6), key


@st.composite
def random_case(draw: st.DrawFn) -> tuple[dict[str, dict[str, list[str]]], dict[str, list[str]]]:
    labels: dict[str, dict[str, list[str]]] = {}
    run: dict[str, list[str]] = {}
    for t in range(draw(st.integers(1, 4))):
        aspects = [f"t{t}a{j}" for j in range(draw(st.integers(1, 5)))]
        docs = [f"d{i}" for i in draw(st.sets(st.integers(0, 14), min_size=1, max_size=12))]
        labels[f"q{t}"] = {
            d: draw(st.lists(st.sampled_from(aspects), max_size=3, unique=True)) for d in docs
        }
        if draw(st.booleans()) or t == 0:
            pool = docs + [f"u{i}" for i in range(draw(st.integers(0, 3)))]
            ranking = draw(st.permutations(pool))
            run[f"q{t}"] = list(ranking[: draw(st.integers(1, len(pool)))])
    return labels, run


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_case())
def test_parity_on_random_topics(
    ir_measures: ModuleType,
    case: tuple[dict[str, dict[str, list[str]]], dict[str, list[str]]],
) -> None:
    labels, run = case
    assert_parity(ir_measures, Judgments.from_labels(labels), dict(run))


def _runs(judgments: Judgments) -> Iterator[Mapping[str, Sequence[str]]]:
    order = {t.query_id: list(t.labels) for t in judgments.topics}  # dataset order
    yield order
    yield {q: docs[::-1] for q, docs in order.items()}
    for seed in (1, 2):
        rng = random.Random(seed)
        yield {q: rng.sample(docs, len(docs)) for q, docs in order.items()}


@pytest.mark.parametrize("name", ["argkp2021:dev", "perspectrum:dev", "perspectrum-evidence:dev"])
def test_parity_on_bundled_data(ir_measures: ModuleType, name: str) -> None:
    from covrag.data import load_dataset

    judgments = Judgments.from_topics(load_dataset(name))
    assert len(judgments) > 0
    for run in _runs(judgments):
        assert_parity(ir_measures, judgments, run)


@pytest.mark.parametrize(
    "module", ["", ".measures", ".scoring", ".judgments", ".headroom", ".stats", ".qrels"]
)
def test_docstring_examples_run(module: str) -> None:
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module("covrag.evaluation" + module))
    assert result.failed == 0
