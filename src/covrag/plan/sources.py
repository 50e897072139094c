"""Where the aspects that coverage is estimated against come from (``--aspects``).

- ``gold``: the dataset's own aspect texts (DES's human-nugget setting).
- ``llm``: sub-questions an LLM writes for the query
  (:class:`~covrag.plan.decompose.LLMDecomposer`).
- ``pool``: representatives of the candidate pool (:class:`~covrag.plan.pool.PoolAspectFinder`).

Whatever the source, measures keep reading the gold labels: :func:`with_aspects` returns a copy of
the topic to *estimate* on, and the original topic is what is judged.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from typing import ClassVar

from covrag.plan.decompose import LLMDecomposer
from covrag.plan.pool import PoolAspectFinder
from covrag.types import Aspect, Topic

ASPECT_SOURCES = ("gold", "llm", "pool")


def with_aspects(topic: Topic, aspects: tuple[Aspect, ...]) -> Topic:
    """``topic`` with other aspects and no labels (the labels name the gold aspects)."""
    return dataclasses.replace(topic, aspects=aspects, labels={}, non_labels={})


class AspectSource(ABC):
    """Gives the aspects of a topic; ``seconds`` accumulates the time spent."""

    name: ClassVar[str]

    def __init__(self) -> None:
        self.seconds = 0.0
        self.topics = 0

    def apply(self, topic: Topic) -> Topic:
        """The topic to estimate coverage on."""
        started = time.perf_counter()
        aspects = self.aspects(topic)
        self.seconds += time.perf_counter() - started
        self.topics += 1
        if aspects is None:
            return topic
        # What the request asks to leave out is known whatever the source of the wanted aspects.
        excluded = tuple(a for a in topic.aspects if a.polarity == "exclude")
        taken = {a.id for a in aspects}
        excluded = tuple(
            dataclasses.replace(a, id=f"exclude:{a.id}") if a.id in taken else a for a in excluded
        )
        return with_aspects(topic, aspects + excluded)

    @abstractmethod
    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        """The aspects (None = keep the topic's own)."""

    def __repr__(self) -> str:
        return self.name


class GoldAspects(AspectSource):
    name = "gold"

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return None


class LLMAspects(AspectSource):
    """Sub-questions of the topic's query, written by an LLM."""

    name = "llm"

    def __init__(self, decomposer: LLMDecomposer) -> None:
        super().__init__()
        self.decomposer = decomposer

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return self.decomposer.decompose(topic.query).aspects


class PoolAspects(AspectSource):
    """Representatives of the topic's candidate pool."""

    name = "pool"

    def __init__(self, finder: PoolAspectFinder) -> None:
        super().__init__()
        self.finder = finder

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return self.finder.find(topic)
