"""The critique step of DES's critique-and-rewrite: name what the answer under-used.

DES found that most of what a context covers never reaches the answer (a transfer rate near 0.3),
and that pointing the writer back at the passages it under-used raised vital-nugget coverage. A
:class:`Critic` gathers that evidence in two ways:

- **by the LLM**: the model reads the passages and its answer and names the passages it
  under-used, with a note on what is missing (constrained JSON, validated, bounded retries);
- **objectively**: the passages the answer never cites, and the aspects that the context covers
  (per the coverage matrix) but the answer does not (per a coverage estimator run on the
  answer's sentences), each with the context passages that cover it.

The feedback given to the rewrite depends on the mode (:data:`FEEDBACK_MODES`):

- ``self``: the LLM's critique only (DES's pure self-critique);
- ``pointers`` (default): the LLM's critique, the never-cited passages and the passages that
  cover aspects missing from the answer (no labels needed);
- ``oracle-pointers``: as ``pointers``, but missing nuggets and their passages come from gold
  labels (for analysis only);
- ``oracle-nuggets``: the text of the missing gold nuggets is pasted in (for analysis only).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping, Sequence

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.coverage.base import answer_support as answer_support  # re-exported
from covrag.errors import ConfigError, StructuredOutputError
from covrag.generate.citations import number_of, render_answer
from covrag.generate.records import Critique, Draft, LLMCost, ids
from covrag.generate.records import CritiqueContext as CritiqueContext  # re-exported
from covrag.generate.writer import passages_block
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.schema.llm import Reply, int_in, sized, with_fields
from covrag.types import Answer, Aspect, BoolArray, Passage

logger = logging.getLogger(__name__)

FEEDBACK_MODES = ("self", "pointers", "oracle-pointers", "oracle-nuggets")

REVIEWER_PROMPT = "You review answers for completeness."


def aspects_in_answer(
    estimator: CoverageEstimator, answer: Answer, aspects: Sequence[Aspect]
) -> frozenset[str]:
    """Ids of the aspects at least one sentence of the answer covers, per ``estimator``."""
    answer = answer.substantive()  # "the corpus does not answer X" does not cover X
    if not answer.sentences or not aspects:
        return frozenset()
    matrix = answer_support(estimator, answer, aspects)
    hit: BoolArray = np.asarray(matrix.covered.any(axis=0))
    return frozenset(a for j, a in enumerate(matrix.aspect_ids) if hit[j])


def _present(
    context: CritiqueContext, passages: Sequence[Passage], oracle: bool
) -> dict[str, tuple[str, ...]]:
    """Aspect id -> the context passages that cover it (labels when ``oracle``, else coverage)."""
    wanted = [a.id for a in context.aspects if a.polarity != "exclude"]
    found: dict[str, list[str]] = {a: [] for a in wanted}
    if oracle:
        if context.labels is None:
            raise ConfigError("the oracle feedback modes need gold labels (CritiqueContext.labels)")
        for passage in passages:
            for aspect in context.labels.get(passage.id, ()):
                if aspect in found:
                    found[aspect].append(passage.id)
    elif context.coverage is not None:
        matrix = context.coverage
        rows = {p: i for i, p in enumerate(matrix.passage_ids)}
        cols = {a: j for j, a in enumerate(matrix.aspect_ids)}
        covered = matrix.covered
        for passage in passages:
            if passage.id not in rows:
                continue
            for aspect in wanted:
                if aspect in cols and covered[rows[passage.id], cols[aspect]]:
                    found[aspect].append(passage.id)
    return {a: tuple(p) for a, p in found.items() if p}


class CritiqueReply(Reply):
    """``{"underused": [passage numbers], "missing": "..."}``."""

    underused: list[int]
    missing: str


@functools.lru_cache(maxsize=64)
def critique_reply(k: int) -> type[CritiqueReply]:
    """At most ``k`` passage numbers, each 1..``k``."""
    return with_fields(CritiqueReply, underused=sized(int_in(1, k), None, k))


class Critic:
    """Names what an answer under-used, and turns it into feedback for the rewrite.

    Args:
        llm: The model that critiques (usually the writer's).
        mode: One of :data:`FEEDBACK_MODES`.
        estimator: Judges which aspects the answer's sentences cover (``pointers`` and the
            oracle modes); None skips that check.
        max_words: Each passage is cut to this many words in the prompt.
        retries: Extra attempts when the critique is not valid JSON.
        system_prompt: The critic's system prompt. Give the writer's (``writer.system_prompt``)
            so that the critique's prompt starts as the draft's did (system prompt, question,
            passages) and the model reuses that prefix from its prompt cache instead of
            reading the passages again.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        mode: str = "pointers",
        estimator: CoverageEstimator | None = None,
        max_words: int | None = 250,
        retries: int = 1,
        max_tokens: int = 300,
        system_prompt: str = REVIEWER_PROMPT,
    ) -> None:
        if mode not in FEEDBACK_MODES:
            raise ConfigError(f"feedback mode must be one of {FEEDBACK_MODES}, got {mode!r}")
        self.llm = llm
        self.mode = mode
        self.estimator = estimator
        self.max_words = max_words
        self.retries = retries
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt

    def __repr__(self) -> str:
        return f"Critic({self.llm.describe()!r}, mode={self.mode!r}, estimator={self.estimator!r})"

    def llm_critique(
        self, question: str, passages: Sequence[Passage], draft: Draft
    ) -> tuple[tuple[str, ...], str, LLMCost]:
        """The passages the LLM says the answer under-used, its note, and the cost."""
        passage_ids = ids(passages)
        request = (
            f"Question: {question}\n\nPassages:\n{passages_block(passages, self.max_words)}\n\n"
            f"Answer:\n{render_answer(draft.answer, passage_ids) or '(empty)'}\n\n"
            "Check the answer against the passages. Which passages hold information that "
            "matters for the question but that the answer leaves out or uses only in part? "
            'Reply with JSON only: {"underused": [passage numbers], "missing": "one or two '
            'sentences on what the answer leaves out"}.'
        )
        messages = [system(self.system_prompt), user(request)]
        params = ChatParams(
            temperature=self.llm.params.temperature,
            max_tokens=self.max_tokens,
            seed=self.llm.params.seed,
        )
        try:
            reply = chat_json(
                self.llm,
                messages,
                critique_reply(len(passages)),
                task="critique",
                retries=self.retries,
                params=params,
            )
        except StructuredOutputError as exc:
            logger.warning("the LLM critique failed; going on without it: %s", exc)
            return (), "", LLMCost()
        numbers = dict.fromkeys(reply.value.underused)
        named = tuple(passage_ids[n - 1] for n in numbers if 1 <= n <= len(passage_ids))
        return named, reply.value.missing.strip(), LLMCost.of(reply.results)

    def critique(
        self,
        question: str,
        passages: Sequence[Passage],
        draft: Draft,
        context: CritiqueContext | None = None,
    ) -> Critique:
        """The critique of ``draft`` and the feedback for the rewrite."""
        context = context or CritiqueContext()
        named, notes, cost = self.llm_critique(question, passages, draft)
        cited = {p for s in draft.answer.sentences for p in s.passage_ids}
        never = tuple(p.id for p in passages if p.id not in cited)
        pointers: dict[str, tuple[str, ...]] = {}
        if self.mode != "self" and self.estimator is not None and context.aspects:
            oracle = self.mode.startswith("oracle")
            present = _present(context, passages, oracle)
            if present:
                wanted = [a for a in context.aspects if a.id in present]
                have = aspects_in_answer(self.estimator, draft.answer, wanted)
                pointers = {a: p for a, p in present.items() if a not in have}
        elif self.mode.startswith("oracle"):
            raise ConfigError(f"feedback mode {self.mode!r} needs an estimator and aspects")
        feedback = self._feedback(passages, named, notes, never, pointers, context.aspects)
        return Critique(
            mode=self.mode,
            llm_underused=named,
            llm_notes=notes,
            never_cited=never,
            missing_aspects=tuple(pointers),
            pointers=tuple(pointers.items()),
            feedback=feedback,
            cost=cost,
        )

    def _feedback(
        self,
        passages: Sequence[Passage],
        named: tuple[str, ...],
        notes: str,
        never: tuple[str, ...],
        pointers: Mapping[str, tuple[str, ...]],
        aspects: Sequence[Aspect],
    ) -> str:
        number = number_of(ids(passages))

        def marks(passage_ids: Sequence[str]) -> str:
            numbers = sorted({number[p] for p in passage_ids})
            return ", ".join(f"[{n}]" for n in numbers)

        lines = []
        if named:
            lines.append(f"- A reviewer says the answer under-uses passages {marks(named)}.")
        if notes:
            lines.append(f"- The reviewer's note: {notes}")
        if self.mode != "self":
            if never:
                lines.append(f"- The answer never cites passages {marks(never)}.")
            if pointers and self.mode == "oracle-nuggets":
                text = {a.id: a.text for a in aspects}
                for aspect, support in pointers.items():
                    lines.append(f"- The answer misses this point: {text[aspect]} {marks(support)}")
            elif pointers:
                pointed = [p for group in pointers.values() for p in group]
                lines.append(
                    f"- Passages {marks(pointed)} make points that the answer does not state."
                )
                # Then each missed sub-question by name, with the passages that answer it (not in
                # the oracle modes: the aspects are gold nuggets there, and their text is what
                # oracle-nuggets alone may show).
                text = {a.id: a.text for a in aspects}
                for aspect, support in pointers.items() if self.mode == "pointers" else ():
                    lines.append(
                        f'- The answer does not address "{text.get(aspect, aspect)}", which '
                        f"passages {marks(support)} answer."
                    )
        return "\n".join(lines)
