"""The answer use case: a question, passages and aspects -> a cited answer (``/v1/answer``).

:func:`answer` estimates the coverage of the passages against the aspects (when there are
any), selects ``policy.k`` of them behind the floor and the gate as ``ask`` does (when ``k`` is
set), and writes the answer with the writer ``ask`` uses (:func:`~covrag.pipeline.ask.
build_generator`), every citation checked against its passage.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from covrag.coverage.base import CoverageEstimator, parse_estimator
from covrag.coverage.cross_encoder import CrossEncoderCoverage
from covrag.embed import Encoder
from covrag.generate import CritiqueContext, support_warnings
from covrag.generate.answer_coverage import AspectCoverage, answer_coverage
from covrag.generate.records import GenerationResult, draft_record
from covrag.llm.base import LLM
from covrag.pipeline.ask import build_generator
from covrag.pipeline.context import choose, estimate_context
from covrag.pipeline.events import EventSink, PlannedEvent, RetrievedEvent, SelectedEvent
from covrag.pipeline.policy import ContextPolicy
from covrag.schema.generation import DraftOut
from covrag.schema.writer import WriterPolicy
from covrag.selectors.floor import FilterReport
from covrag.types import CoverageMatrix, Passage, Topic


class GatedEstimator(CoverageEstimator):
    """An estimator whose models run inside ``step()`` (a server's model gate), one estimate at
    a time, each estimate's pairs reported to ``on_scored``."""

    name = "gated"

    def __init__(
        self,
        inner: CoverageEstimator,
        step: Callable[[], AbstractContextManager[Any]],
        on_scored: Callable[[int], None] | None = None,
    ) -> None:
        self.inner = inner
        self.step = step
        self.on_scored = on_scored

    def estimate(self, topic: Topic) -> CoverageMatrix:
        with self.step():
            matrix = self.inner.estimate(topic)
        if self.on_scored is not None:
            self.on_scored(matrix.pairs_scored)
        return matrix

    def model_pairs(self, n: int, columns: int) -> int:
        return self.inner.model_pairs(n, columns)

    def __repr__(self) -> str:
        return repr(self.inner)


def answer_estimator(spec: str | CoverageEstimator) -> CoverageEstimator:
    """The coverage estimator of an answer: ``spec``, the cross-encoder in place of ``gold``
    (a question carries no labels)."""
    base = parse_estimator(spec) if isinstance(spec, str) else spec
    return base if base.name != "gold" else CrossEncoderCoverage()


@dataclass(frozen=True)
class Answered:
    """A cited answer and what it was written from.

    Attributes:
        passages: The context the writer saw (all the passages without ``k``).
        coverage: The coverage of the passages x aspects (None without aspects).
        filters: With ``k``, what the floor and the gate let through.
        generation: The drafts, critiques and the final answer.
        aspect_coverage: Per aspect, the context passages and answer sentences covering it.
        warnings: The refusal, and the citation check's warnings.
    """

    passages: tuple[Passage, ...]
    coverage: CoverageMatrix | None
    filters: FilterReport | None
    generation: GenerationResult
    aspect_coverage: tuple[AspectCoverage, ...]
    warnings: tuple[str, ...]

    def draft_records(self) -> list[DraftOut]:
        """Every draft as the run file records it (the last is the answer shown)."""
        return [draft_record(d) for d in self.generation.drafts]


def _context(
    topic: Topic, policy: ContextPolicy
) -> tuple[tuple[Passage, ...], CoverageMatrix | None, FilterReport | None]:
    """The context: with ``policy.k``, those the floor and the gate let through, selected;
    without, every passage (and their coverage, for the critique, when there are aspects)."""
    if not topic.aspects:
        return topic.passages, None, None
    if policy.k is None:  # no selection: the coverage of every passage, for the critique
        unfiltered = dataclasses.replace(policy, floor=0.0, gate=0.0)
        return topic.passages, estimate_context(topic, unfiltered).coverage, None
    chosen = choose(topic, policy)
    by_id = {p.id: p for p in chosen.candidates.passages}
    context = tuple(by_id[p] for p in chosen.selection.passage_ids)
    return context, chosen.coverage, chosen.filters


def answer(
    topic: Topic,
    llm: LLM,
    policy: ContextPolicy,
    writer: WriterPolicy,
    *,
    support_judge: CoverageEstimator | None = None,
    encoder: Encoder | None = None,
    sink: EventSink | None = None,
) -> Answered:
    """Select (when ``policy.k`` is set) and write the answer to ``topic.query`` from its
    passages; ``sink`` hears the aspects, the passages, the context and the generation steps.

    Args:
        topic: The question, its passages and the aspects to cover (none: no coverage).
        llm: Writes and critiques.
        policy: How the context is chosen (:data:`~covrag.pipeline.policy.ANSWER` resolved);
            its ``coverage`` also tells the critique which aspects the answer covers
            (``pointers`` feedback).
        writer: How the answer is written (``AskConfig.writer_policy()``, the request's).
        support_judge: The citation check's judge (consulted only under a threshold).
        encoder: Finds the context sentences nearest the question (``writer.quotes``); None =
            the packaged MiniLM (the server passes it under its model gate).
        sink: Hears the events of a stream.
    """
    sink = sink or EventSink(lambda _: None)
    sink.emit(PlannedEvent(topic.aspects))
    sink.emit(RetrievedEvent(tuple(p.id for p in topic.passages)))
    passages, coverage, filters = _context(topic, policy)
    refusal = (filters.reason() if filters is not None else None) or ""
    sink.emit(SelectedEvent(tuple(p.id for p in passages), refusal))
    sink.stage("generate")
    estimator = policy.coverage if isinstance(policy.coverage, CoverageEstimator) else None
    judge = estimator if coverage is not None and writer.feedback == "pointers" else None
    exclude = [a.text for a in topic.aspects if a.polarity == "exclude"]
    generator = build_generator(
        llm, writer, judge, exclude, support_judge, encoder, corpus=topic.passages
    )
    result = generator.generate(
        topic.query,
        list(passages),
        context=CritiqueContext(topic.aspects, coverage, refusal=refusal),
        on_step=sink.stage,
    )
    final = result.drafts[-1]
    context_ids = [p.id for p in result.passages]
    covered = (
        answer_coverage(final.answer, coverage, topic.aspects, context_ids)
        if coverage is not None
        else ()
    )
    warnings = (*([f"no answer: {refusal}"] if refusal else []), *support_warnings(final))
    return Answered(
        tuple(result.passages), coverage, filters, result, tuple(covered), tuple(warnings)
    )
