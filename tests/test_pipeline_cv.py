"""Leave-topics-out cross-validation on a few bundled topics, with the gold labels."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np
import pytest

from covrag.coverage.base import CoverageEstimator
from covrag.data import load_dataset
from covrag.errors import ConfigError, DataError
from covrag.evaluation.stats import bootstrap_ci
from covrag.pipeline import Method, PrepareConfig, build_methods, run_bench
from covrag.selectors import parse_selector
from covrag.types import Budget, CoverageMatrix, Topic
from covrag_lab.cv import (
    CalibratedThreshold,
    CVConfig,
    TopicScores,
    assign_folds,
    choose,
    dev_report,
    run_cv,
    scores_for,
)

ORDER = PrepareConfig(relevance="order")  # no encoder: relevance is the pool order
K10 = Budget(max_passages=10)
MEASURE = "alpha-nDCG@10"


@pytest.fixture(scope="module")
def topics() -> list[Topic]:
    """Six topics: two of ArgKP train, the four of dev."""
    return load_dataset("argkp2021:train")[:2] + load_dataset("argkp2021:dev")


def test_folds_are_a_seeded_partition() -> None:
    ids = [f"t{i}" for i in range(28)]
    folds = assign_folds(ids, 5, seed=0)
    assert set(folds) == set(ids) and set(folds.values()) == set(range(5))
    sizes = sorted(list(folds.values()).count(f) for f in range(5))
    assert sizes == [5, 5, 6, 6, 6]
    assert assign_folds(list(reversed(ids)), 5, seed=0) == folds  # the input order is no matter
    assert assign_folds(ids, 5, seed=1) != folds
    with pytest.raises(ConfigError, match="folds must lie"):
        assign_folds(ids[:3], 4, seed=0)
    with pytest.raises(DataError, match="repeat"):
        assign_folds(["a", "a", "b"], 2, seed=0)
    with pytest.raises(ConfigError, match="folds must be >= 2"):
        CVConfig(folds=1)


def _values(topics: Sequence[Topic], selectors: Sequence[str]) -> dict[str, dict[str, float]]:
    """Per-topic alpha-nDCG@10 of each method, from an independent path: ``run_bench``."""
    methods = build_methods(selectors, ["gold"])
    bench = run_bench("t", topics, methods, [K10], config=ORDER, exact=False, n_resamples=10)
    return {r.method: r.values[MEASURE] for r in bench.results}


def test_a_setting_better_on_every_topic_is_always_chosen(topics: list[Topic]) -> None:
    selectors = ["topk", "random", "greedy-coverage"]
    values = _values(topics, selectors)
    best = values["greedy-coverage @ gold"]
    assert all(best[q] > values[m][q] for m in ("topk", "random") for q in best)
    settings = build_methods(selectors, ["gold"])  # the best one listed last
    result = run_cv("t", topics, settings, K10, CVConfig(folds=3, n_resamples=100), config=ORDER)
    assert [f.chosen for f in result.fold_results] == ["greedy-coverage @ gold"] * 3
    assert [r.chosen for r in result.settings] == [0, 0, 3]
    assert result.procedure.values[MEASURE] == pytest.approx(best)


def test_cv_estimate_equals_a_hand_computation(topics: list[Topic]) -> None:
    selectors = ["topk", "random(seed=1)", "random(seed=2)", "greedy-coverage"]
    values = _values(topics, selectors)
    names = list(values)
    cv = CVConfig(folds=3, seed=4, n_resamples=500)
    fold_of = assign_folds([t.query_id for t in topics], 3, seed=4)
    held_out: dict[str, float] = {}
    for fold in range(3):
        train = [q for q in fold_of if fold_of[q] != fold]
        means = [np.mean([values[n][q] for q in train]) for n in names]
        chosen = names[int(np.argmax(means))]
        held_out.update({q: values[chosen][q] for q in fold_of if fold_of[q] == fold})
    order = [t.query_id for t in topics]
    expected = np.mean([held_out[q] for q in order])

    result = run_cv("t", topics, build_methods(selectors, ["gold"]), K10, cv, config=ORDER)
    assert result.procedure.means[MEASURE] == pytest.approx(expected)
    ci = bootstrap_ci([held_out[q] for q in order], n_resamples=500, seed=4)
    assert result.procedure.ci[MEASURE] == pytest.approx(tuple(ci))
    for row in result.settings:
        assert row.values[MEASURE] == pytest.approx(values[row.name])
        assert row.means[MEASURE] == pytest.approx(np.mean(list(values[row.name].values())))
    assert sum(r.chosen for r in result.settings) == 3
    assert result.measures[0] == MEASURE and "StRecall@10" in result.measures
    summary = result.to_json()
    assert summary["topics"] == 6 and summary["procedure"]["means"][MEASURE] == pytest.approx(
        expected
    )


@dataclasses.dataclass(frozen=True)
class PickBySize:
    """A test's fitted setting: greedy coverage when the training set is large, else top-k."""

    method: Method
    seen: list[tuple[str, ...]]

    @property
    def name(self) -> str:
        return "fitted by size"

    def fit(self, train: Sequence[str], scores: TopicScores) -> Method:
        self.seen.append(tuple(sorted(train)))
        chosen = "greedy-coverage" if len(train) > 3 else "topk"
        return dataclasses.replace(self.method, selector=parse_selector(chosen))


def test_a_fitted_setting_is_fitted_on_each_folds_training_topics(topics: list[Topic]) -> None:
    (gold,) = build_methods(["greedy-coverage"], ["gold"])
    fitted = PickBySize(gold, [])
    result = run_cv("t", topics, [fitted], K10, CVConfig(folds=3, n_resamples=50), config=ORDER)
    fold_of = result.fold_of
    trains = {tuple(sorted(q for q in fold_of if fold_of[q] != f)) for f in range(3)}
    assert set(fitted.seen) == trains  # fitted on each fold's training topics, nothing else
    assert result.settings[0].fitted and result.settings[0].chosen == 3
    values = _values(topics, ["greedy-coverage"])["greedy-coverage @ gold"]
    assert result.procedure.values[MEASURE] == pytest.approx(values)


@dataclasses.dataclass(frozen=True, repr=False)
class BlurredLabels(CoverageEstimator):
    """A cheap estimator with a threshold: a labelled pair scores 0.4-1.0, another 0.0-0.6."""

    name = "blurred-labels"
    threshold: float = 0.5

    def estimate(self, topic: Topic) -> CoverageMatrix:
        labels = topic.label_matrix().astype(float)
        noise = np.random.default_rng(len(topic.passages)).uniform(0.0, 0.6, labels.shape)
        return CoverageMatrix(
            topic.passage_ids, topic.aspect_ids, labels * 0.4 + noise, self.threshold, repr(self)
        )


def test_a_calibrated_threshold_maximises_f1_on_the_training_topics(topics: list[Topic]) -> None:
    from covrag_lab.train.calibrate import best_f1_threshold

    (gold,) = build_methods(["greedy-coverage"], ["gold"])
    method = dataclasses.replace(gold, coverage=BlurredLabels())
    setting = CalibratedThreshold(method)
    scores = scores_for(topics[2:4], [setting], K10, [MEASURE], ORDER)
    train = [topics[2].query_id]
    fitted = setting.fit(train, scores)
    assert method.coverage is not None and fitted.coverage is not None
    probs = scores.matrix(train[0], method.coverage, "gold").probs.ravel()
    expected, _ = best_f1_threshold(topics[2].label_matrix().ravel(), probs)
    assert fitted.coverage.threshold == expected != 0.5  # type: ignore[attr-defined]
    assert fitted.selector == method.selector and method.coverage.threshold == 0.5
    index, chosen, _ = choose([method, setting], train, scores, MEASURE)
    assert chosen.name in (method.name, fitted.name)
    with pytest.raises(ConfigError, match="no threshold"):
        CalibratedThreshold(build_methods(["greedy-coverage"], ["gold"])[0])


def test_dev_report_scores_the_choice_on_dev(topics: list[Topic]) -> None:
    selectors = ["topk", "greedy-coverage"]
    settings = build_methods(selectors, ["gold"])
    scores = scores_for(topics, settings, K10, [MEASURE, "StRecall@10"], ORDER)
    result = run_cv("t", topics, settings, K10, CVConfig(folds=2, n_resamples=50), scores=scores)
    dev = [t.query_id for t in topics if t.split == "dev"]
    assert len(dev) == 4
    report = dev_report(settings, result, scores, dev)
    values = _values(topics, selectors)
    for name, mean in report.settings.items():
        assert mean == pytest.approx(np.mean([values[name][q] for q in dev]))
    assert report.chosen.chosen == "greedy-coverage @ gold" and report.chosen.train_topics == 6
    assert report.held_out is not None and report.held_out.train_topics == 2
    assert report.to_json()["chosen_on_all"]["mean"] == pytest.approx(report.chosen.mean)
