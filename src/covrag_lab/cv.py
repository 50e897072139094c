"""``covrag-lab cv``: k-fold leave-topics-out cross-validation of a choice among settings.

Settings (a selector, the coverage estimator it reads, the aspects it is estimated against) are
chosen, not given: the question is how good *choosing* is. Topics are dealt into K folds by a
seeded shuffle; for each fold the setting with the best mean of one measure on the other folds'
topics (the training topics) is chosen and scored on the held-out fold. Every topic is held out
once, so the chosen settings' values on their held-out topics form one value per topic: their mean
is the cross-validation estimate of the selection procedure (Stone 1974; leave-topics-out as in
IR's cross-validated tuning), with a bootstrap interval over topics.

A fixed setting (no fitting) is run once per topic and its values are reused by every fold: the
cross-validation itself then costs nothing beyond one bench. A :class:`FittedSetting` is fitted on
each fold's training topics (``fit(train_topics) -> Method``) and the fitted method is scored on
that fold's held-out topics; :class:`CalibratedThreshold` is one: the estimator's threshold
that maximises pair F1 on the training topics' gold labels.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.errors import ConfigError, DataError
from covrag.evaluation import Judgments, evaluate, parse_measures
from covrag.evaluation.stats import bootstrap_ci
from covrag.pipeline.bench import Method, default_measures, method_policy
from covrag.pipeline.cache import TopicCache
from covrag.pipeline.config import PrepareConfig, config_for
from covrag.pipeline.policy import ContextPolicy
from covrag.pipeline.usecases import estimate, select
from covrag.plan.sources import AspectSource, GoldAspects
from covrag.selectors.base import Selector
from covrag.selectors.topk import TopKSelector
from covrag.tokens import with_token_costs
from covrag.types import Budget, CoverageMatrix, Topic
from covrag_lab.cv_records import CVConfig as CVConfig  # re-exported
from covrag_lab.cv_records import CVResult as CVResult  # re-exported
from covrag_lab.cv_records import DevReport as DevReport  # re-exported
from covrag_lab.cv_records import FoldResult as FoldResult  # re-exported
from covrag_lab.cv_records import HoldOut as HoldOut  # re-exported
from covrag_lab.cv_records import SettingResult as SettingResult  # re-exported
from covrag_lab.cv_records import Values as Values  # re-exported

logger = logging.getLogger(__name__)


def assign_folds(query_ids: Sequence[str], folds: int, seed: int) -> dict[str, int]:
    """Deal topics into ``folds`` folds: a seeded shuffle of the sorted ids, then round robin.

    The result does not depend on the order the ids come in; fold sizes differ by at most one.

    Example:
        >>> sorted(assign_folds(["a", "b", "c", "d"], 2, seed=0).values())
        [0, 0, 1, 1]
    """
    ids = sorted(set(query_ids))
    if len(ids) != len(query_ids):
        raise DataError("topic ids repeat: cross-validation needs one topic per id")
    if not 2 <= folds <= len(ids):
        raise ConfigError(f"folds must lie in [2, {len(ids)}] (the topics), got {folds}")
    order = np.random.default_rng(seed).permutation(len(ids))
    return {ids[int(j)]: i % folds for i, j in enumerate(order)}


class TopicScores:
    """Every value a cross-validation needs, each computed once.

    Each topic has one :class:`~covrag.pipeline.cache.TopicCache`: its pool is prepared once,
    each (topic, aspect source) and (topic, estimator) estimated once, whichever methods read
    them; each (topic, method) is selected (:func:`covrag.pipeline.usecases.select` with the
    topic's cache) and measured once, whichever folds ask for it.
    """

    def __init__(
        self,
        topics: Sequence[Topic],
        budget: Budget,
        measures: Sequence[str],
        config: PrepareConfig,
        sources: Mapping[str, AspectSource] | None = None,
    ) -> None:
        self.topics = {t.query_id: with_token_costs(t, config.counter) for t in topics}
        self.budget = budget
        self.measures = [repr(m) for m in parse_measures(list(measures))]
        self.config = config
        self.sources: dict[str, AspectSource] = {"gold": GoldAspects(), **(sources or {})}
        self._caches: dict[str, TopicCache] = {}
        self._values: dict[tuple[str, str], dict[str, float]] = {}
        self.coverage_seconds: dict[str, float] = {}  # estimator repr -> seconds, all topics

    def cache(self, query_id: str) -> TopicCache:
        """The topic's cache: its pool, the aspects of each source, each coverage matrix."""
        if query_id not in self._caches:
            self._caches[query_id] = TopicCache(self.config, dict(self.sources))
        return self._caches[query_id]

    def sourced(self, query_id: str, aspects: str) -> Topic:
        """The topic with the aspects of one source (``gold``: as it is)."""
        policy = self._policy(Method(TopKSelector(), None, aspects))
        return self.cache(query_id).aspects(self.topics[query_id], policy).topic

    def matrix(
        self,
        query_id: str,
        estimator: CoverageEstimator,
        aspects: str,
        selector: Selector | None = None,
    ) -> CoverageMatrix:
        """One estimator's coverage matrix of one topic against one aspect source (estimated
        for ``selector``, default top-k, when it is not yet)."""
        method = Method(selector or TopKSelector(), estimator, aspects)
        key = (aspects, repr(estimator))
        cache = self.cache(query_id)
        if key not in cache.matrices:
            estimate(self.topics[query_id], self._policy(method), cache=cache)
            self._spent(cache, key)
        return cache.matrices[key]

    def values(self, method: Method, query_ids: Sequence[str]) -> Values:
        """Measure -> query id -> value of ``method`` on these topics."""
        for query_id in query_ids:
            if (method.name, query_id) not in self._values:
                self._values[(method.name, query_id)] = self._score(method, query_id)
        return {m: {q: self._values[(method.name, q)][m] for q in query_ids} for m in self.measures}

    def _policy(self, method: Method) -> ContextPolicy:
        if method.aspects not in self.sources:
            raise ConfigError(f"no aspect source {method.aspects!r} was given")
        return method_policy(method, self.budget, self.config)

    def _spent(self, cache: TopicCache, key: tuple[str, str]) -> None:
        """Count a newly estimated matrix's seconds against its estimator (``key[1]``)."""
        spent = self.coverage_seconds.get(key[1], 0.0)
        self.coverage_seconds[key[1]] = spent + cache.matrices[key].seconds

    def _score(self, method: Method, query_id: str) -> dict[str, float]:
        cache = self.cache(query_id)
        key = method.coverage_key
        new = key is not None and key not in cache.matrices
        topic = self.topics[query_id]
        selection = select(topic, self._policy(method), cache=cache).selection
        if new and key is not None:
            self._spent(cache, key)
        scores = evaluate(
            Judgments.from_topics([topic]), {query_id: selection.passage_ids}, self.measures
        )
        return {m: scores[m][query_id] for m in self.measures}


class FittedSetting(Protocol):
    """A setting fitted on each fold's training topics: ``fit`` returns the method to score on
    the held-out topics (and, for the choice, on the training topics themselves).

    ``method`` is the method before fitting: its selector decides how topics are prepared.
    """

    @property
    def name(self) -> str: ...

    @property
    def method(self) -> Method: ...

    def fit(self, train: Sequence[str], scores: TopicScores) -> Method: ...


@dataclass(frozen=True)
class CalibratedThreshold:
    """A selector over an estimator whose ``threshold`` is fitted per fold: the threshold (grid
    0.05 .. 0.95) with the highest F1 over every (passage, gold aspect) pair of the training
    topics, unlabelled pairs counting as negatives (the rule ``covrag-lab train coverage`` applies
    to dev pairs, :func:`covrag_lab.train.calibrate.best_f1_threshold`)."""

    method: Method

    def __post_init__(self) -> None:
        estimator = self.method.coverage
        if estimator is None or "threshold" not in {f.name for f in _fields(estimator)}:
            raise ConfigError(f"{self.method.name!r}: its estimator has no threshold to calibrate")
        if self.method.aspects != "gold":
            raise ConfigError("a threshold is calibrated on gold labels: use gold aspects")

    @property
    def name(self) -> str:
        return f"{self.method.name}, threshold fitted (F1 on training topics)"

    def fit(self, train: Sequence[str], scores: TopicScores) -> Method:
        from covrag_lab.train.calibrate import best_f1_threshold

        estimator = self.method.coverage
        assert estimator is not None
        selector = self.method.selector
        probs = [scores.matrix(q, estimator, "gold", selector).probs.ravel() for q in train]
        labels = [scores.topics[q].label_matrix().ravel() for q in train]
        threshold, _ = best_f1_threshold(np.concatenate(labels), np.concatenate(probs))
        fitted = dataclasses.replace(estimator, threshold=threshold)  # type: ignore[type-var]
        return dataclasses.replace(self.method, coverage=fitted)


def _fields(estimator: CoverageEstimator) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(estimator) if dataclasses.is_dataclass(estimator) else ()


Setting = Method | FittedSetting


def base_method(setting: Setting) -> Method:
    """The method a setting runs, before any fitting."""
    return setting if isinstance(setting, Method) else setting.method


def choice_measure(budget: Budget, cv: CVConfig) -> str:
    """The measure settings are chosen by: ``cv.measure``, else alpha-nDCG at the budget's k."""
    return repr(parse_measures([cv.measure or f"alpha-nDCG@{budget.max_passages or 10}"])[0])


def cv_measures(budget: Budget, cv: CVConfig, topics: Sequence[Topic]) -> list[str]:
    """The measure to choose by, then the bench's default measures for the budget."""
    measure = choice_measure(budget, cv)
    excluded = any(a.polarity == "exclude" for t in topics for a in t.aspects)
    return [measure] + [m for m in default_measures(budget, excluded) if m != measure]


def scores_for(
    topics: Sequence[Topic],
    settings: Sequence[Setting],
    budget: Budget,
    measures: Sequence[str],
    config: PrepareConfig | None = None,
    aspect_sources: Mapping[str, AspectSource] | None = None,
) -> TopicScores:
    """The value store of a cross-validation, preparing topics as the settings' selectors need."""
    config = config or config_for([base_method(s).selector for s in settings])
    return TopicScores(topics, budget, measures, config, aspect_sources)


def choose(
    settings: Sequence[Setting], train: Sequence[str], scores: TopicScores, measure: str
) -> tuple[int, Method, float]:
    """The setting with the best mean ``measure`` on ``train`` (ties: the first listed), the
    method it runs (fitted on ``train`` when it is fitted) and that mean."""
    best: tuple[int, Method, float] | None = None
    for index, setting in enumerate(settings):
        method = setting if isinstance(setting, Method) else setting.fit(train, scores)
        mean = float(np.mean(list(scores.values(method, train)[measure].values())))
        if best is None or mean > best[2]:
            best = (index, method, mean)
    if best is None:
        raise ConfigError("nothing to choose from: give at least one setting")
    return best


def run_cv(
    dataset: str,
    topics: Sequence[Topic],
    settings: Sequence[Setting],
    budget: Budget,
    cv: CVConfig | None = None,
    *,
    config: PrepareConfig | None = None,
    aspect_sources: Mapping[str, AspectSource] | None = None,
    progress: Callable[[str], None] | None = None,
    scores: TopicScores | None = None,
) -> CVResult:
    """Cross-validate choosing among ``settings`` by one measure over ``topics``.

    Args:
        dataset: Name shown in the results.
        topics: Labelled topics (every split the choice may use; never a test split).
        settings: Fixed methods (:func:`covrag.pipeline.build_methods`) and fitted settings.
        budget: The budget every method selects under.
        cv: Folds, seed, the measure to choose by (default ``alpha-nDCG@k``) and resamples.
        config: How topics become selector inputs (default: what the selectors need).
        aspect_sources: The aspect sources the methods name (``gold`` is built in).
        progress: Called with each topic's id once every fixed setting has scored it.
        scores: Reuse the values of an earlier run on the same topics (``--dev-report``).
    """
    cv = cv or CVConfig()
    if not settings:
        raise ConfigError("nothing to cross-validate: give at least one setting")
    names = [s.name for s in settings]
    if len(set(names)) != len(names):
        raise ConfigError("the same setting is listed twice")
    measure = choice_measure(budget, cv)
    fold_of = assign_folds([t.query_id for t in topics], cv.folds, cv.seed)
    if scores is None:
        measures = cv_measures(budget, cv, topics)
        scores = scores_for(topics, settings, budget, measures, config, aspect_sources)
    elif scores.measures[0] != measure or not set(fold_of) <= set(scores.topics):
        raise ConfigError("the scores given were computed for other topics or another measure")
    order = [t.query_id for t in topics]
    for done, query_id in enumerate(order, start=1):  # fixed settings once per topic, first
        for setting in settings:
            if isinstance(setting, Method):
                scores.values(setting, [query_id])
        logger.info("cv: topic %s scored (%d of %d)", query_id, done, len(order))
        if progress is not None:
            progress(query_id)
    return _cross_validate(dataset, order, settings, budget, cv, fold_of, measure, scores)


def _cross_validate(
    dataset: str,
    order: Sequence[str],
    settings: Sequence[Setting],
    budget: Budget,
    cv: CVConfig,
    fold_of: Mapping[str, int],
    measure: str,
    scores: TopicScores,
) -> CVResult:
    held_out: dict[str, Values] = {}  # setting name -> its values on held-out topics
    procedure: Values = {m: {} for m in scores.measures}
    folds: list[FoldResult] = []
    fitted: dict[str, list[str]] = {s.name: [] for s in settings}
    for fold in range(cv.folds):
        test = [q for q in order if fold_of[q] == fold]
        train = [q for q in order if fold_of[q] != fold]
        index, method, train_mean = choose(settings, train, scores, measure)
        for setting in settings:
            run = setting if isinstance(setting, Method) else setting.fit(train, scores)
            if not isinstance(setting, Method):
                fitted[setting.name].append(run.name)
            for m, by_topic in scores.values(run, test).items():
                held_out.setdefault(setting.name, {}).setdefault(m, {}).update(by_topic)
        chosen_values = scores.values(method, test)
        for m in scores.measures:
            procedure[m].update(chosen_values[m])
        test_mean = float(np.mean(list(chosen_values[measure].values())))
        name = settings[index].name
        folds.append(FoldResult(fold, test, name, method.name, train_mean, test_mean))
    chosen = {s.name: sum(f.chosen == s.name for f in folds) for s in settings}
    results = [
        _summarise(s.name, not isinstance(s, Method), held_out[s.name], order, cv) for s in settings
    ]
    for result in results:
        result.chosen = chosen[result.name]
        result.fitted_methods = fitted[result.name]
    return CVResult(
        dataset=dataset,
        budget=budget,
        measure=measure,
        measures=list(scores.measures),
        folds=cv.folds,
        seed=cv.seed,
        fold_of=dict(fold_of),
        procedure=_summarise("CV: choose by " + measure, True, procedure, order, cv),
        settings=results,
        fold_results=folds,
        coverage_seconds=dict(scores.coverage_seconds),
    )


def _summarise(
    name: str, fitted: bool, values: Values, order: Sequence[str], cv: CVConfig
) -> SettingResult:
    ordered = {m: {q: by_topic[q] for q in order} for m, by_topic in values.items()}
    means = {m: float(np.mean(list(v.values()))) for m, v in ordered.items()}
    ci = {
        m: tuple(bootstrap_ci(list(v.values()), n_resamples=cv.n_resamples, seed=cv.seed))
        for m, v in ordered.items()
    }
    return SettingResult(name, fitted, ordered, means, ci)  # type: ignore[arg-type]


def hold_out(
    settings: Sequence[Setting],
    train: Sequence[str],
    test: Sequence[str],
    scores: TopicScores,
    measure: str,
) -> HoldOut:
    """Choose on ``train`` (fitting what is fitted there) and score the choice on ``test``."""
    index, method, train_mean = choose(settings, train, scores, measure)
    values = scores.values(method, test)[measure]
    return HoldOut(settings[index].name, method.name, len(train), train_mean, values)


def dev_report(
    settings: Sequence[Setting], result: CVResult, scores: TopicScores, dev: Sequence[str]
) -> DevReport:
    """Each setting's dev figure, and the dev figure of what choosing picks (:class:`DevReport`)."""
    topics = list(result.fold_of)
    rest = [q for q in topics if q not in set(dev)]
    if not dev:
        raise ConfigError("no dev topics to report on")
    fit_on = rest or topics
    overlap = len(rest) < len(topics)
    per_setting = {
        s.name: hold_out([s], fit_on, dev, scores, result.measure).mean for s in settings
    }
    chosen = hold_out(settings, topics, dev, scores, result.measure)
    held_out = hold_out(settings, rest, dev, scores, result.measure) if rest and overlap else None
    return DevReport(list(dev), per_setting, chosen, held_out, overlap)
