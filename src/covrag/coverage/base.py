"""The coverage-estimation stage: one protocol, one verb (``estimate``)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from covrag.registry import Registry, spec_of
from covrag.types import CoverageMatrix, Topic


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
