"""The records the generation stage returns: drafts, critiques, and what each LLM step cost."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from covrag.generate.citations import ParsedAnswer
from covrag.llm.cost import LLMCost as LLMCost  # re-exported: generation records carry it
from covrag.schema.answer import RunAnswer
from covrag.schema.generation import (
    CritiqueRecordOut,
    DraftOut,
    GenerationOut,
    InvalidCitationOut,
    LLMCostOut,
)
from covrag.schema.runfile import dump
from covrag.types import Answer, Aspect, CoverageMatrix, Passage


@dataclass(frozen=True)
class Draft:
    """One version of the answer.

    Attributes:
        parsed: The sentences with their valid citations, and the invalid citations.
        raw: The model's text as it came.
        target_sentences: How many sentences the prompt asked for.
        cut_off: Whether the reply stopped at the token limit (its last sentence may be partial).
        cost: What writing it cost.
        notes: What the writer had to do instead of what it was asked (e.g. a fallback).
        left_out: Sentences of the reply the writer left out of the answer because they cite
            no passage (a claim no passage supports is not stated as the answer's).
        checked: Whether the support check (:class:`~covrag.generate.SupportChecker`) ran.
        fallback: ``quote`` or ``refuse`` when the check found no supported sentence and the
            answer is its fallback (the model's sentences are then in ``answer.dropped``).
        tidied: What the check's tidying did (:mod:`covrag.generate.tidy`): lead-ins removed,
            sentences dropped for talking about the passages, leaning on a dropped sentence,
            introducing what was dropped, or repeating one.
        evidence: Passages beyond the context the check read the draft against: the entries
            that define what it names (:mod:`covrag.generate.evidence`); its sentences may
            cite them.
    """

    parsed: ParsedAnswer
    raw: str
    target_sentences: int
    cut_off: bool = False
    cost: LLMCost = LLMCost()
    notes: tuple[str, ...] = ()
    left_out: tuple[str, ...] = ()
    checked: bool = False
    fallback: str | None = None
    tidied: tuple[str, ...] = ()
    evidence: tuple[Passage, ...] = ()

    @property
    def answer(self) -> Answer:
        return self.parsed.answer

    @property
    def uncited(self) -> int:
        """Sentences of the reply that cite no passage: left out, or still in the answer."""
        return len(self.left_out) + len(self.parsed.uncited)

    @property
    def problems(self) -> tuple[str, ...]:
        """What is wrong with the draft, in words a user can act on (empty when nothing is)."""
        found = []
        if not self.parsed.answer.sentences:
            found.append("the model returned an empty answer")
        if self.parsed.invalid:
            numbers = sorted({c.number for c in self.parsed.invalid})
            found.append(
                f"{len(self.parsed.invalid)} citation(s) of passages that do not exist "
                f"({', '.join(f'[{n}]' for n in numbers)}); dropped from the sentences' ids"
            )
        uncited = self.parsed.uncited
        if self.parsed.answer.sentences and len(uncited) == len(self.parsed.answer.sentences):
            found.append("no sentence cites a passage")
        elif uncited:
            found.append(f"{len(uncited)} sentence(s) cite no passage")
        if self.left_out:
            found.append(
                f"{len(self.left_out)} sentence(s) citing no passage left out of the answer: "
                + "; ".join(f"{t!r}" for t in self.left_out)
            )
        if self.cut_off:
            found.append("the reply was cut off at the token limit")
        return (*found, *self.notes, *support_warnings(self))


def support_warnings(draft: Draft) -> tuple[str, ...]:
    """What the support check did to ``draft``, in words for the user (empty when nothing)."""
    if not draft.checked:
        return ()
    found = []
    if draft.fallback == "quote":
        found.append(
            "no sentence of the model's answer is supported by a passage: the answer quotes "
            "the selected passages instead"
        )
    elif draft.fallback == "refuse":
        found.append(
            "no sentence of the model's answer is supported by a passage: no answer is given"
        )
    sentences = draft.answer.sentences
    repointed = [s for s in sentences if s.check is not None and s.check.repaired]
    if repointed and draft.fallback is None:  # the fallback's quotations cite what they quote
        found.append(
            f"{len(repointed)} sentence(s) cited no passage, or passages that do not support "
            "them; their citations now name the passage that does"
        )
    marked = [s for s in sentences if s.check is not None and s.check.verified == "unsupported"]
    if marked:
        found.append(f"{len(marked)} sentence(s) that no passage supports are shown, marked")
    unsupported = [
        s for s in draft.answer.dropped if s.check is None or s.check.verified == "unsupported"
    ]
    if unsupported and draft.fallback is None:
        found.append(
            f"{len(unsupported)} sentence(s) that no passage supports were dropped from "
            "the answer: " + "; ".join(repr(s.text) for s in unsupported)
        )
    found.extend(draft.tidied)  # a fallback keeps only the notes about what it shows
    return tuple(found)


@dataclass(frozen=True)
class WritingContext:
    """What the writer and the critique may know beyond the passages and the answer.

    Attributes:
        aspects: The aspects a complete answer covers (sub-questions, or gold nuggets).
        coverage: Estimated coverage of the context passages (rows) x ``aspects`` (columns);
            rows or columns it lacks count as not covered.
        labels: Gold labels, passage id -> aspect ids it supports (the oracle modes need them).
        refusal: Why the context is empty (which filter removed what), said in the answer
            when no passage reaches the writer; empty when unknown.
    """

    aspects: tuple[Aspect, ...] = ()
    coverage: CoverageMatrix | None = None
    labels: Mapping[str, frozenset[str]] | None = None
    refusal: str = ""


#: The name the critique step has always used for :class:`WritingContext`.
CritiqueContext = WritingContext


@dataclass(frozen=True)
class Critique:
    """What a critique step found and the feedback it gives the rewrite.

    Attributes:
        mode: The feedback mode (see :data:`covrag.generate.critique.FEEDBACK_MODES`).
        llm_underused: Passage ids the LLM named as under-used.
        llm_notes: The LLM's words on what the answer leaves out.
        never_cited: Passage ids of the context the answer never cites.
        missing_aspects: Aspect ids present in the context but not in the answer.
        pointers: For each missing aspect, the context passages that cover it.
        feedback: The feedback text given to the rewrite.
        cost: What the LLM critique cost.
        verdict: What became of the rewrite it led to: ``accepted``, ``unchanged`` (the
            rewrite repeats the draft), or ``rejected: <why>`` (the previous draft was kept).
    """

    mode: str
    llm_underused: tuple[str, ...] = ()
    llm_notes: str = ""
    never_cited: tuple[str, ...] = ()
    missing_aspects: tuple[str, ...] = ()
    pointers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    feedback: str = ""
    cost: LLMCost = LLMCost()
    verdict: str = ""


@dataclass(frozen=True)
class GenerationResult:
    """An answer with its history: the first draft, then one critique and draft per pass.

    Attributes:
        question: The question answered.
        passages: The context, in the order it was numbered in the prompts.
        drafts: ``drafts[0]`` is the first answer, ``drafts[i]`` the answer after pass ``i``.
        critiques: ``critiques[i - 1]`` led to ``drafts[i]``.
        outline: The outline the writer followed (empty when none).
    """

    question: str
    passages: tuple[Passage, ...]
    drafts: tuple[Draft, ...]
    critiques: tuple[Critique, ...] = ()
    outline: tuple[str, ...] = ()

    @property
    def answer(self) -> Answer:
        """The final answer."""
        return self.drafts[-1].answer

    @property
    def evidence(self) -> tuple[Passage, ...]:
        """The passages beyond the context that any draft was checked against, each once."""
        found = {p.id: p for d in self.drafts for p in d.evidence}
        return tuple(found.values())

    @property
    def cost(self) -> LLMCost:
        total = LLMCost()
        for draft in self.drafts:
            total = total + draft.cost
        for critique in self.critiques:
            total = total + critique.cost
        return total

    def to_record(self) -> GenerationOut:
        """The ``generation`` block of a run file: every draft and critique, validated."""
        return GenerationOut(
            question=self.question,
            passage_ids=[p.id for p in self.passages],
            outline=list(self.outline),
            drafts=[draft_record(d) for d in self.drafts],
            critiques=[critique_record(c) for c in self.critiques],
            cost=LLMCostOut.of(self.cost),
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-serialisable record of every draft and critique (:meth:`to_record`)."""
        return dump(self.to_record())


def draft_record(draft: Draft) -> DraftOut:
    """The record of one draft (``schema.generation.DraftOut``): its answer as a run file
    writes it, then what the writer reported; ``dropped`` only when the check dropped some."""
    answer = RunAnswer.of(draft.answer)
    return DraftOut.model_validate(
        {
            **{name: getattr(answer, name) for name in answer.model_fields_set},
            "raw": draft.raw,
            "target_sentences": draft.target_sentences,
            "invalid_citations": [
                InvalidCitationOut(sentence=c.sentence, number=c.number)
                for c in draft.parsed.invalid
            ],
            "problems": list(draft.problems),
            "left_out": list(draft.left_out),
            "evidence": [p.id for p in draft.evidence],
            "checked": draft.checked,
            "fallback": draft.fallback,
            "cut_off": draft.cut_off,
            "cost": LLMCostOut.of(draft.cost),
        }
    )


def critique_record(critique: Critique) -> CritiqueRecordOut:
    """The record of one critique (``schema.generation.CritiqueRecordOut``)."""
    return CritiqueRecordOut(
        mode=critique.mode,
        llm_underused=list(critique.llm_underused),
        llm_notes=critique.llm_notes,
        never_cited=list(critique.never_cited),
        missing_aspects=list(critique.missing_aspects),
        pointers={aspect: list(ids) for aspect, ids in critique.pointers},
        feedback=critique.feedback,
        verdict=critique.verdict,
        cost=LLMCostOut.of(critique.cost),
    )


def ids(passages: Sequence[Passage]) -> tuple[str, ...]:
    return tuple(p.id for p in passages)
