"""The generation stage: a cited answer, then ``passes`` rounds of critique and rewrite (DES)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from covrag.errors import ConfigError
from covrag.generate.critique import Critic, CritiqueContext
from covrag.generate.evidence import Evidence
from covrag.generate.nearest import NearestQuotes
from covrag.generate.records import Critique, Draft, GenerationResult, WritingContext
from covrag.generate.support import SupportChecker
from covrag.generate.synthesis import nothing_found
from covrag.types import Passage

logger = logging.getLogger(__name__)

#: Called after each step with its name (``write``, ``critique 1``, ``rewrite 1``, ...).
StepCallback = Callable[[str], None]


class Writer(Protocol):
    """What the generator needs of a writer (:class:`CitedWriter`, :class:`SynthesisWriter`)."""

    #: The system prompt of its requests (a critic given it shares their prefix).
    system_prompt: str

    def write(
        self,
        question: str,
        passages: Sequence[Passage],
        *,
        outline: Sequence[str] = (),
        context: WritingContext | None = None,
    ) -> Draft: ...

    def rewrite(
        self,
        question: str,
        passages: Sequence[Passage],
        previous: Draft,
        feedback: str,
        *,
        outline: Sequence[str] = (),
        context: WritingContext | None = None,
    ) -> Draft: ...


def _cited(draft: Draft) -> set[str]:
    return {p for s in draft.answer.sentences for p in s.passage_ids}


def rewrite_verdict(previous: Draft, rewrite: Draft) -> str:
    """Whether a rewrite is kept: ``accepted``, ``unchanged``, or ``rejected: <why>``.

    A rewrite is rejected when it is empty where the draft was not, cites passages the draft
    cited but fewer of them in all, or leaves more sentences uncited; the draft is then kept. A
    rewrite with the draft's sentences and citations is ``unchanged``.
    """
    before, after = previous.answer.sentences, rewrite.answer.sentences
    if [(s.text, s.passage_ids) for s in before] == [(s.text, s.passage_ids) for s in after]:
        return "unchanged"
    if before and not after:
        return "rejected: the rewrite is empty"
    lost = _cited(previous) - _cited(rewrite)
    if lost and len(_cited(rewrite)) < len(_cited(previous)):
        return f"rejected: the rewrite lost the citations of {', '.join(sorted(lost))}"
    if rewrite.uncited > previous.uncited:
        return "rejected: the rewrite leaves more sentences uncited"
    if rewrite.fallback is not None and previous.fallback is None:
        return "rejected: no sentence of the rewrite is supported by a passage"
    if len(rewrite.notes) > len(previous.notes):
        return "rejected: the rewrite failed the writer's checks"
    return "accepted"


class CritiqueRewriteGenerator:
    """Writes a cited answer and improves it with critique-and-rewrite passes.

    Pass ``i`` critiques draft ``i - 1`` (:class:`~covrag.generate.critique.Critic`) and rewrites
    it over the same passages (the writer's ``rewrite``). The rewrite is checked
    (:func:`rewrite_verdict`): one that is empty, loses citations or fails the writer's checks
    is rejected, recorded as such in the critique's ``verdict``, and draft ``i - 1`` is kept as
    draft ``i``. With no passages at all the answer says the corpus does not answer the question,
    and no model is asked. DES saw vital
    nugget coverage rise over two passes and a third give some back, hence the default of 2.
    Every draft is kept, so one run yields the answers after 0, 1, ..., ``passes`` passes.

    Every draft, the first and each rewrite, goes through ``checker`` (the citation check,
    :class:`~covrag.generate.SupportChecker`) before it is critiqued, judged against the draft
    before it, or returned: the critique and the rewrite read checked citations.

    Args:
        writer: Writes and rewrites.
        critic: Critiques; None with ``passes > 0`` is an error.
        passes: Critique-and-rewrite rounds (0 = the first answer only).
        checker: Checks and repairs the citations of every draft; None leaves drafts as the
            writer returns them (what the benchmarks compare against; ``covrag ask`` and the
            server always check).
        nearest: Adds to every checked draft the context sentences nearest the question that
            it does not state (:class:`~covrag.generate.nearest.NearestQuotes`); None = none.
        evidence: Looks up the entries that define what a draft names and the context does
            not, for the check to read it against (:class:`~covrag.generate.evidence.Evidence`);
            None = the context only.

    Example:
        >>> from covrag.llm import parse_llm
        >>> llm = parse_llm("local")  # doctest: +SKIP
        >>> generator = CritiqueRewriteGenerator(CitedWriter(llm), Critic(llm), passes=2)
        ... # doctest: +SKIP
        >>> result = generator.generate("Should cities ban cars?", passages)  # doctest: +SKIP
        >>> len(result.drafts)  # doctest: +SKIP
        3
    """

    def __init__(
        self,
        writer: Writer,
        critic: Critic | None = None,
        *,
        passes: int = 2,
        checker: SupportChecker | None = None,
        nearest: NearestQuotes | None = None,
        evidence: Evidence | None = None,
    ):
        if passes < 0:
            raise ConfigError(f"passes must be >= 0, got {passes}")
        if passes and critic is None:
            raise ConfigError("critique-and-rewrite passes need a critic")
        self.writer = writer
        self.critic = critic
        self.passes = passes
        self.checker = checker
        self.nearest = nearest
        self.evidence = evidence

    def __repr__(self) -> str:
        return (
            f"CritiqueRewriteGenerator({self.writer!r}, {self.critic!r}, passes={self.passes}, "
            f"checker={self.checker!r}, nearest={self.nearest!r}, evidence={self.evidence!r})"
        )

    def _checked(
        self,
        question: str,
        draft: Draft,
        passages: Sequence[Passage],
        context: WritingContext | None,
        rewrite: int = 0,
    ) -> Draft:
        """``draft`` checked; each problem the check found is logged, a rewrite's as one (it may
        be rejected and the previous draft kept: "rewrite 1 of the answer to 5 passages: ...")."""
        if self.checker is None:
            return draft
        extra: tuple[Passage, ...] = ()
        if self.evidence is not None:
            extra = self.evidence.lookup([s.text for s in draft.answer.sentences], passages)
        checked = self.checker.check(draft, passages, context, evidence=extra)
        if extra:
            checked = dataclasses.replace(checked, evidence=extra)
        if self.nearest is not None:
            checked = self.nearest.add(question, checked, passages)
        label = f"rewrite {rewrite} of the answer" if rewrite else "answer"
        for problem in checked.problems:
            if problem not in draft.problems:
                logger.warning("%s to %d passages: %s", label, len(passages), problem)
        return checked

    def generate(
        self,
        question: str,
        passages: Sequence[Passage],
        *,
        context: CritiqueContext | None = None,
        outline: Sequence[str] = (),
        on_step: StepCallback | None = None,
    ) -> GenerationResult:
        """The answer to ``question`` from ``passages``, with every draft and critique.

        Args:
            question: The question (with any include/exclude request in its words).
            passages: The selected context, in the order to number it.
            context: Aspects, coverage and (for the oracle modes) labels for the critique.
            outline: A content draft to follow (QPlanner); empty for none.
            on_step: Called after each LLM step (progress reporting).
        """
        passages = tuple(passages)
        if passages:
            first = self.writer.write(question, passages, outline=outline, context=context)
            first = self._checked(question, first, passages, context)
        else:  # nothing cleared the floor: say so, and ask no model
            first = nothing_found(context or WritingContext())
        drafts: list[Draft] = [first]
        critiques: list[Critique] = []
        if on_step:
            on_step("write")
        for i in range(1, self.passes + 1 if passages else 1):
            assert self.critic is not None
            critique = self.critic.critique(question, passages, drafts[-1], context)
            if on_step:
                on_step(f"critique {i}")
            draft = self.writer.rewrite(
                question, passages, drafts[-1], critique.feedback, outline=outline, context=context
            )
            draft = self._checked(question, draft, passages, context, rewrite=i)
            verdict = rewrite_verdict(drafts[-1], draft)
            if verdict.startswith("rejected"):
                logger.warning("pass %d: %s; the previous draft is kept", i, verdict)
                draft = drafts[-1]
            critiques.append(dataclasses.replace(critique, verdict=verdict))
            drafts.append(draft)
            if on_step:
                on_step(f"rewrite {i}")
        return GenerationResult(
            question=question,
            passages=passages,
            drafts=tuple(drafts),
            critiques=tuple(critiques),
            outline=tuple(outline),
        )
