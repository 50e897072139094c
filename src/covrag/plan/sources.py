"""Where the aspects that coverage is estimated against come from (``--aspects``).

- ``gold``: the dataset's own aspect texts (DES's human-nugget setting).
- ``llm``: sub-questions an LLM writes for the query
  (:class:`~covrag.plan.decompose.LLMDecomposer`).
- ``pool``: representatives of the candidate pool (:class:`~covrag.plan.pool.PoolAspectFinder`);
  what the framework components and ``/v1/select`` use when given no sub-questions.
- ``llm+pool``: both, side by side.
- ``keypoints``: the points the LLM reads off the pool, grouped, as short statements, each
  kept only when a pooled passage covers it (:class:`~covrag.plan.keypoints.KeyPointGenerator`).
- ``query``: the query itself as the only aspect, the baseline every other label-free source has
  to beat.
- ``planner``: ``ask``'s planner (:mod:`covrag.plan.planned`): the LLM's sub-questions (or a
  QPlanner outline's), then the request's include / exclude aspects, with answer sketches.
- ``gold+answers``, ``llm+answers``: the gold aspects or the LLM's sub-questions, each question
  given ``answers`` statements an answer to it would make (:mod:`covrag.plan.sketch`), which the
  estimators score passages against beside the question.

The sources are registered in ``ASPECT_SOURCES`` by name; :func:`build_aspect_sources` builds the
ones a command names from :class:`AspectOptions`, so a new source is added here only.

Whatever the source, measures keep reading the gold labels: :meth:`AspectSource.apply` returns a
copy of the topic to *estimate* on, and the original topic is what is judged.
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import ClassVar, cast

from covrag.llm.base import LLM
from covrag.plan.decompose import LLMDecomposer
from covrag.plan.keypoints import KeyPointGenerator
from covrag.plan.pool import PoolAspectFinder
from covrag.plan.sketch import AnswerSketcher
from covrag.registry import Registry
from covrag.types import Aspect, Topic

ASPECT_SOURCES: Registry[AspectSource] = Registry("aspect source")
"""Aspect source classes by name (``gold``, ``llm``, ``pool``, ``query``)."""


def _help(text: str) -> dict[str, object]:
    return {"help": text}


@dataclass(frozen=True)
class AspectOptions:
    """What the sources are built from (the CLI sets ``subquestions`` only). The help of the
    fields ``covrag ask`` sets (``metadata["help"]``) is its options' (``AskConfig``'s).

    Attributes:
        subquestions: Sub-questions per query (``llm``).
        pool_k: Aspects per topic (``pool``, ``keypoints``).
        pool_rewrite: Have the LLM rewrite each representative passage as a question (``pool``).
        decompose_style: How the LLM is asked for sub-questions (``llm``;
            :data:`~covrag.plan.decompose.STYLES`).
        answers: Answer sketches per question (``+answers`` sources, ``planner``).
        outline: Plan a QPlanner outline, whose sub-questions become the aspects (``planner``).
    """

    subquestions: int = dataclasses.field(
        default=10,
        metadata=_help(
            "sub-questions the LLM writes (DES: 10); with aspect_source grounded, at most this many"
        ),
    )
    pool_k: int = 10
    pool_rewrite: bool = False
    decompose_style: str = dataclasses.field(
        default="factors",
        metadata=_help(
            "how the LLM is asked for sub-questions: factors = DES's (one sub-question per "
            "factor a complete answer weighs); points = the specific claims a complete answer "
            "states, each as the narrow question a passage making it answers"
        ),
    )
    answers: int = dataclasses.field(
        default=3,
        metadata=_help(
            "answer sketches per sub-question: short statements an answer would make, written "
            "by the LLM, which the estimator scores passages against beside the sub-question "
            "(0 = none)"
        ),
    )
    outline: bool = dataclasses.field(
        default=False,
        metadata=_help("plan a QTree outline (QPlanner) and write along the best one"),
    )


@dataclass(frozen=True)
class SourcedTopic:
    """A topic with the aspects of a source, and what finding them cost.

    Attributes:
        topic: The topic to estimate coverage on.
        seconds: Wall-clock seconds the source spent on it.
    """

    topic: Topic
    seconds: float


def with_aspects(topic: Topic, aspects: tuple[Aspect, ...]) -> Topic:
    """``topic`` with other aspects and no labels (the labels name the gold aspects)."""
    return dataclasses.replace(topic, aspects=aspects, labels={}, non_labels={})


class AspectSource(ABC):
    """Gives the aspects of a topic. Stateless: what each topic cost comes with its result."""

    name: ClassVar[str]

    @classmethod
    def needs_llm(cls, options: AspectOptions) -> bool:
        """Whether :meth:`build` needs an LLM under these options."""
        return False

    @classmethod
    def build(cls, options: AspectOptions, llm: LLM | None) -> AspectSource:
        """The source configured by ``options`` (``llm`` when :meth:`needs_llm`)."""
        return cls()

    def apply(self, topic: Topic) -> Topic:
        """The topic to estimate coverage on."""
        return self.timed(topic).topic

    def timed(self, topic: Topic) -> SourcedTopic:
        """:meth:`apply`, with the seconds it took."""
        started = time.perf_counter()
        aspects = self.aspects(topic)
        seconds = time.perf_counter() - started
        if aspects is None:
            return SourcedTopic(topic, seconds)
        # What the request asks to leave out is known whatever the source of the wanted aspects.
        excluded = tuple(a for a in topic.aspects if a.polarity == "exclude")
        taken = {a.id for a in aspects}
        excluded = tuple(
            dataclasses.replace(a, id=f"exclude:{a.id}") if a.id in taken else a for a in excluded
        )
        return SourcedTopic(with_aspects(topic, aspects + excluded), seconds)

    @abstractmethod
    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        """The aspects (None = keep the topic's own)."""

    def __repr__(self) -> str:
        return self.name


class LLMAspectSource(AspectSource):
    """A source that always needs an LLM (:meth:`build` refuses to run without one)."""

    @classmethod
    def needs_llm(cls, options: AspectOptions) -> bool:
        return True

    @classmethod
    def require(cls, llm: LLM | None) -> LLM:
        """``llm``, or a ValueError naming this source when there is none."""
        if llm is None:
            raise ValueError(f"the {cls.name} aspect source needs an LLM")
        return llm


@ASPECT_SOURCES.register
class GoldAspects(AspectSource):
    name = "gold"

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return None


@ASPECT_SOURCES.register
class LLMAspects(LLMAspectSource):
    """Sub-questions of the topic's query, written by an LLM."""

    name = "llm"

    def __init__(self, decomposer: LLMDecomposer) -> None:
        self.decomposer = decomposer

    @classmethod
    def build(cls, options: AspectOptions, llm: LLM | None) -> AspectSource:
        return cls(
            LLMDecomposer(cls.require(llm), n=options.subquestions, style=options.decompose_style)
        )

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return self.decomposer.decompose(topic.query).aspects


@ASPECT_SOURCES.register
class PoolAspects(AspectSource):
    """Representatives of the topic's candidate pool; the query as the one aspect when the
    pool has none (an empty pool): the default of the framework components and /v1/select."""

    name = "pool"

    def __init__(self, finder: PoolAspectFinder) -> None:
        self.finder = finder

    @classmethod
    def needs_llm(cls, options: AspectOptions) -> bool:
        return options.pool_rewrite

    @classmethod
    def build(cls, options: AspectOptions, llm: LLM | None) -> AspectSource:
        rewrite = "question" if options.pool_rewrite else None
        return cls(PoolAspectFinder(k=options.pool_k, rewrite=rewrite, llm=llm))

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        found = self.finder.find(topic) if topic.passages else ()
        return found or (Aspect("query", topic.query),)


@ASPECT_SOURCES.register
class LLMAndPoolAspects(LLMAspectSource):
    """The LLM's sub-questions and the pool's representatives together: the sub-questions say
    what a complete answer should cover, the representatives what the pool actually holds."""

    name = "llm+pool"

    def __init__(self, llm: LLMAspects, pool: PoolAspects) -> None:
        self.llm = llm
        self.pool = pool

    @classmethod
    def build(cls, options: AspectOptions, llm: LLM | None) -> AspectSource:
        return cls(
            cast(LLMAspects, LLMAspects.build(options, llm)),
            cast(PoolAspects, PoolAspects.build(options, llm)),
        )

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return (*(self.llm.aspects(topic) or ()), *(self.pool.aspects(topic) or ()))


@ASPECT_SOURCES.register
class KeyPointAspects(LLMAspectSource):
    """The points the LLM reads off the topic's pool, each covered by a pooled passage."""

    name = "keypoints"

    def __init__(self, generator: KeyPointGenerator) -> None:
        self.generator = generator

    @classmethod
    def build(cls, options: AspectOptions, llm: LLM | None) -> AspectSource:
        return cls(KeyPointGenerator(cls.require(llm), n=options.pool_k))

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        # the points dropped (no passage covers them, duplicates) are logged by the generator
        return self.generator.generate(topic).aspects


@ASPECT_SOURCES.register
class QueryAspect(AspectSource):
    """The topic's query as its one aspect: coverage then means "answers the question"."""

    name = "query"

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return (Aspect(id="query", text=topic.query),)


class _Sketched(LLMAspectSource):
    """Another source's aspects, each question given answer sketches by the LLM."""

    base: ClassVar[type[AspectSource]]

    def __init__(self, source: AspectSource, sketcher: AnswerSketcher) -> None:
        self.source = source
        self.sketcher = sketcher

    @classmethod
    def build(cls, options: AspectOptions, llm: LLM | None) -> AspectSource:
        llm = cls.require(llm)
        return cls(cls.base.build(options, llm), AnswerSketcher(llm, n=options.answers))

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        own = self.source.aspects(topic)
        wanted = tuple(
            a for a in (topic.aspects if own is None else own) if a.polarity != "exclude"
        )
        # an aspect without usable sketches is scored on its text alone (logged), as in ask
        return self.sketcher.sketch_aspects(wanted, topic.query, failures=[])


@ASPECT_SOURCES.register
class GoldAspectsWithAnswers(_Sketched):
    name = "gold+answers"
    base = GoldAspects


@ASPECT_SOURCES.register
class LLMAspectsWithAnswers(_Sketched):
    name = "llm+answers"
    base = LLMAspects


def source_class(name: str) -> type[AspectSource]:
    """The registered class of an aspect source (ConfigError for an unknown name)."""
    return cast(type[AspectSource], ASPECT_SOURCES.get(name))


def build_aspect_sources(
    names: Iterable[str], options: AspectOptions, make_llm: Callable[[], LLM]
) -> dict[str, AspectSource]:
    """The sources ``names`` asks for; ``make_llm`` is called once, only if one needs an LLM.

    Raises:
        ConfigError: for an unknown source name, suggesting the closest.
    """
    classes = {name: source_class(name) for name in names}
    needs = any(cls.needs_llm(options) for cls in classes.values())
    llm = make_llm() if needs else None
    return {name: cls.build(options, llm) for name, cls in classes.items()}
