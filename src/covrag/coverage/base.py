"""The coverage-estimation stage: one protocol, one verb (``estimate``)."""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from covrag.registry import Registry, spec_of
from covrag.types import Answer, Aspect, CoverageMatrix, Passage, Topic


class CoverageEstimator(ABC):
    """Estimates P[passage, aspect] for a topic's pool against the topic's aspects.

    Subclasses are frozen dataclasses registered in ``ESTIMATORS``; their repr is the
    specification that builds them (``embedding(threshold=0.55)``).
    """

    name: ClassVar[str]

    @abstractmethod
    def estimate(self, topic: Topic) -> CoverageMatrix:
        """The coverage matrix of ``topic.passages`` x ``topic.aspects``."""

    def model_pairs(self, n_passages: int, n_columns: int) -> int:
        """How many (passage, aspect) pairs a pair model (a cross-encoder) would score for a
        topic of ``n_passages`` x ``n_columns`` (aspects and their answer sketches): the cost
        the HTTP service caps (``covrag serve --max-pairs``). 0 for estimators without one."""
        return 0

    def __repr__(self) -> str:
        return spec_of(self, self.name)


def expand_answers(topic: Topic) -> tuple[Topic, np.ndarray[Any, np.dtype[np.int64]]]:
    """The topic with each aspect's answer sketches as aspects of their own, and for each of its
    aspects the index of the aspect it stands for (:attr:`Aspect.answers`).

    The expanded aspects come in order: each aspect, then its sketches. An estimator scores the
    expanded topic and keeps each aspect's best column (:func:`best_of`).

    Example:
        >>> t = Topic("q", "", (), (Aspect("a", "Why?", answers=("Because.", "So.")),))
        >>> expanded, owners = expand_answers(t)
        >>> [a.text for a in expanded.aspects], owners.tolist()
        (['Why?', 'Because.', 'So.'], [0, 0, 0])
    """
    aspects: list[Aspect] = []
    owners: list[int] = []
    for j, aspect in enumerate(topic.aspects):
        aspects.append(aspect)
        owners.append(j)
        for k, text in enumerate(aspect.answers, start=1):
            aspects.append(Aspect(f"{aspect.id}#answer{k}", text))
            owners.append(j)
    if len(aspects) == len(topic.aspects):
        return topic, np.arange(len(aspects), dtype=np.int64)
    expanded = dataclasses.replace(topic, aspects=tuple(aspects), labels={}, non_labels={})
    return expanded, np.asarray(owners, dtype=np.int64)


def best_of(
    probs: np.ndarray[Any, np.dtype[np.float64]],
    owners: np.ndarray[Any, np.dtype[np.int64]],
    n_aspects: int,
) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Each aspect's highest column of an expanded matrix (:func:`expand_answers`)."""
    if probs.shape[1] == n_aspects:
        return probs
    best = np.zeros((probs.shape[0], n_aspects))
    np.maximum.at(best.T, owners, probs.T)
    return best


ESTIMATORS: Registry[CoverageEstimator] = Registry("coverage estimator")


def parse_estimator(spec: str) -> CoverageEstimator:
    """Build an estimator from its specification, e.g. ``"embedding(threshold=0.6)"``."""
    return ESTIMATORS.parse(spec)


def answer_support(
    estimator: CoverageEstimator, answer: Answer, aspects: Sequence[Aspect]
) -> CoverageMatrix:
    """An estimator's coverage matrix of the answer's sentences (rows ``s1``...) x ``aspects``.

    An aspect is in the answer when at least one sentence covers it; this is the cheap judge of
    answer support (the LLM judge is in :mod:`covrag.evaluation.answers`;
    :func:`covrag.generate.aspects_in_answer` reads it).
    """
    sentences = tuple(
        Passage(f"s{i}", s.text) for i, s in enumerate(answer.sentences, start=1) if s.text
    )
    topic = Topic(query_id="answer", query="", passages=sentences, aspects=tuple(aspects))
    return estimator.estimate(topic)
