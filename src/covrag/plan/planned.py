"""``ask``'s planner as an aspect source (``planner`` in :data:`~covrag.plan.ASPECT_SOURCES`).

The aspects of a request: the DES sub-questions the LLM writes for its base question (with
``outline``, those of a QPlanner plan, whose best outline then guides the writer), or the key
points read off a first pool retrieved for the question; then the request's include / exclude
aspects; each given ``answers`` answer sketches. :meth:`PlannerAspects.plan` returns what the
plan stage decided (:class:`Planned`); as a source of a bench (``--aspects planner``) it plans
each topic's query.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from covrag.errors import ConfigError, StructuredOutputError
from covrag.llm.base import LLM
from covrag.plan.conditioned import C2Query
from covrag.plan.decompose import LLMDecomposer, SubQuestions
from covrag.plan.grounded import GroundedPlanner
from covrag.plan.keypoints import read_keypoints
from covrag.plan.planner import Plan, QPlanner
from covrag.plan.sketch import AnswerSketcher
from covrag.plan.sources import ASPECT_SOURCES, AspectOptions, AspectSource, LLMAspectSource
from covrag.types import Aspect, Passage, Topic

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Planned:
    """What the plan stage decided: the request, its aspects and where they came from."""

    query: C2Query
    aspects: tuple[Aspect, ...]
    subquestions: SubQuestions | None = None
    plan: Plan | None = None
    warnings: tuple[str, ...] = ()


@ASPECT_SOURCES.register
class PlannerAspects(LLMAspectSource):
    """``ask``'s planner: the LLM's sub-questions (or key points of a first pool), then the
    request's include / exclude aspects, each with answer sketches."""

    name = "planner"

    def __init__(self, llm: LLM, options: AspectOptions) -> None:
        self.llm = llm
        self.options = options

    @classmethod
    def build(cls, options: AspectOptions, llm: LLM | None) -> AspectSource:
        return cls(cls.require(llm), options)

    def aspects(self, topic: Topic) -> tuple[Aspect, ...] | None:
        return self.plan(C2Query.explicit(topic.query)).aspects

    def plan(
        self,
        query: C2Query,
        aspects: Sequence[Aspect] | None = None,
        *,
        pool: tuple[Passage, ...] | None = None,
        gate: float = 0.0,
        grounded: bool = False,
    ) -> Planned:
        """The aspects of ``query``: ``aspects`` when given, else (``grounded``) the sub-questions
        the LLM writes seeing ``pool`` (:class:`~covrag.plan.grounded.GroundedPlanner`, at most
        ``subquestions`` of them), else the key points of ``pool`` when given (passages under
        the MiniLM cosine ``gate`` to the question not read), else the LLM's sub-questions;
        then the request's own aspects; each with answer sketches."""
        notes: tuple[str, ...] = ()
        written: SubQuestions | None = None
        if aspects is None and grounded:
            planner = GroundedPlanner(self.llm, most=max(self.options.subquestions, 1))
            found_plan = planner.plan(query.base, pool or ())
            notes = tuple(f"plan: {note}" for note in found_plan.notes)
            aspects = (*found_plan.aspects, *query.aspects())
            written = SubQuestions(query.base, found_plan.aspects, found_plan.notes)
        elif aspects is None and pool is not None:
            n = self.options.subquestions
            found = read_keypoints(query.base, self.llm, pool, n=n, gate=gate)
            notes = tuple(f"key points: dropped {note}" for note in found.notes)
            aspects = (*found.aspects, *query.aspects())
        if aspects is None:
            planned = self._questions(query)
        else:
            planned = Planned(query, tuple(aspects), written)
        planned = dataclasses.replace(planned, warnings=(*notes, *planned.warnings))
        if not planned.aspects:
            raise ConfigError("no aspects: ask for sub-questions or give aspects")
        if self.options.answers:
            failures: list[str] = []
            sketcher = AnswerSketcher(self.llm, n=self.options.answers)
            sketched = sketcher.sketch_aspects(planned.aspects, query.base, failures)
            planned = dataclasses.replace(
                planned, aspects=sketched, warnings=(*planned.warnings, *failures)
            )
        return planned

    def _questions(self, query: C2Query) -> Planned:
        """The LLM's sub-questions of the base question (with ``outline``, QPlanner's), then
        the request's include / exclude aspects."""
        options = self.options
        subquestions: SubQuestions | None = None
        plan: Plan | None = None
        warnings: list[str] = []
        if options.outline:
            planner = QPlanner(
                self.llm,
                subquestions=max(options.subquestions, 1),
                decompose_style=options.decompose_style,
            )
            try:
                plan = planner.plan(query.base, query.include, query.exclude)
                subquestions = plan.subquestions
            except StructuredOutputError as exc:
                # The outline is optional guidance: without it the answer is written from the
                # sub-questions alone, and the run says why.
                first = str(exc).splitlines()[0]
                warnings.append(f"no outline ({first}); writing without one")
                logger.warning("ask: %s", warnings[-1])
        if subquestions is None and options.subquestions:
            decomposer = LLMDecomposer(
                self.llm, n=options.subquestions, style=options.decompose_style
            )
            subquestions = decomposer.decompose(query.base)
        found = subquestions.aspects if subquestions is not None else ()
        return Planned(query, (*found, *query.aspects()), subquestions, plan, tuple(warnings))
