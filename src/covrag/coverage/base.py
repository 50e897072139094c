"""The coverage-estimation stage: one protocol, one verb (``estimate``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

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

    def __repr__(self) -> str:
        return spec_of(self, self.name)


ESTIMATORS: Registry[CoverageEstimator] = Registry("coverage estimator")


def parse_estimator(spec: str) -> CoverageEstimator:
    """Build an estimator from its specification, e.g. ``"embedding(threshold=0.6)"``."""
    return ESTIMATORS.parse(spec)


def answer_support(
    estimator: CoverageEstimator, answer: Answer, aspects: Sequence[Aspect]
) -> CoverageMatrix:
    """An estimator's coverage matrix of the answer's sentences (rows ``s1``...) x ``aspects``.

    An aspect is in the answer when at least one sentence covers it; this is the cheap judge of
    answer support (the LLM judge is in :mod:`covrag.evaluate.answers`;
    :func:`covrag.generate.aspects_in_answer` reads it).
    """
    sentences = tuple(
        Passage(f"s{i}", s.text) for i, s in enumerate(answer.sentences, start=1) if s.text
    )
    topic = Topic(query_id="answer", query="", passages=sentences, aspects=tuple(aspects))
    return estimator.estimate(topic)
