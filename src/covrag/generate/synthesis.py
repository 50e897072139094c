"""The synthesising writer: one short cited paragraph per covered aspect, and what is missing.

The answer is planned by aspect before the model writes a word. Each wanted aspect (a
sub-question, or an ``include`` request) that some context passage answers under the coverage
matrix becomes a *part*, with those passages (:func:`plan_parts`); parts follow the outline's
order when one was planned, else the aspects' order. The model writes each part's paragraph in
its own call, shown only that part's passages (a 1.5B model asked for every part at once mixed
up the parts' passages and ran out of tokens: docs/experiments/14-synthesising-writer.md), in its
own words, at most one sentence per passage of the part (and up to three in any case), as
constrained JSON
(:func:`part_reply`) checked by :func:`paragraph_problems`: every sentence cites at least one of
its part's passages, every passage of a part is cited in its paragraph (a paragraph that merges
its passages into one sentence used to drop their separate points), no sentence cites more
than :data:`MAX_SHARED` passages or talks about "the passages" instead of saying what they say
(the small model's way round the previous check: "as passages [1]-[7] show"), and no sentence
copies a passage (:func:`~covrag.generate.copying.copies`). An invalid reply is retried with the
problem named.

The aspects no context passage covers are stated in one framing sentence, marked as the writer's
own (``Citation.framing``), never cited. With no context at all the answer is that sentence and no
model is called.

The fallback stays honest: when the model still fails a part's checks, the part keeps the
sentences that pass their own checks and quotes the first sentence of each passage none of them
cites, in quotation marks and cited (so no passage's point is lost), and the draft says so in its
problems. Quotes count as copies in the copy rate.

The plan, the reply models and the checks live in :mod:`covrag.generate.synthesis_parts`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from covrag.errors import ConfigError, StructuredOutputError
from covrag.generate.citations import ParsedAnswer
from covrag.generate.records import Draft, LLMCost, WritingContext
from covrag.generate.synthesis_parts import (
    MAX_SHARED,
    MIN_SENTENCE_CAP,
    PART_TOKENS,
    PASSAGE_TOKENS,
    ParagraphItem,
    Part,
    PartReply,
    check_paragraphs,
    paragraph_problems,
    part_reply,
    salvage,
    salvage_part,
    sentence_cap,
    synthesis_reply,
    to_sentences,
)
from covrag.generate.synthesis_parts import missing_sentence as missing_sentence  # re-exported
from covrag.generate.synthesis_parts import nothing_found as nothing_found  # re-exported
from covrag.generate.synthesis_parts import plan_parts as plan_parts  # re-exported
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.prompts import documents_rule, passage_line, passages_block
from covrag.llm.structured import chat_json
from covrag.types import Answer, Aspect, Citation, Passage

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You write short, accurate answers in your own words from numbered passages, and you cite "
    "the passages that support each sentence."
)


class SynthesisWriter:
    """Writes an answer planned by aspect: one short cited paragraph per covered aspect, one
    model call per paragraph (a rewrite asks for the whole answer at once, with the feedback).

    Args:
        llm: The model.
        max_words: Each passage is cut to this many words in the prompt (None: never cut).
        max_tokens: Most tokens the model may write (a rewrite: 1.5 times as many).
        exclude: Topics the answer must leave out (a coverage-conditioned request).
        retries: Extra attempts when the reply fails its checks.

    Example:
        >>> from covrag.llm import parse_llm
        >>> writer = SynthesisWriter(parse_llm("local"))  # doctest: +SKIP
        >>> draft = writer.write(question, passages, context=WritingContext(aspects, matrix))
        ... # doctest: +SKIP
    """

    name = "synthesis"
    system_prompt = SYSTEM_PROMPT

    def __init__(
        self,
        llm: LLM,
        *,
        max_words: int | None = 250,
        max_tokens: int = 800,
        exclude: Sequence[str] = (),
        retries: int = 1,
    ) -> None:
        if max_words is not None and max_words < 1:
            raise ConfigError(f"max_words must be >= 1 or None, got {max_words}")
        self.llm = llm
        self.max_words = max_words
        self.max_tokens = max_tokens
        self.exclude = tuple(exclude)
        self.retries = retries

    def __repr__(self) -> str:
        return f"SynthesisWriter({self.llm.describe()!r}, max_words={self.max_words})"

    def _request(self, question: str, passages: Sequence[Passage], parts: Sequence[Part]) -> str:
        number = {p.id: i for i, p in enumerate(passages, start=1)}
        plan = "\n".join(
            f"Part {i}: {part.aspect.text} (passages "
            + ", ".join(f"[{number[p]}]" for p in part.passage_ids)
            + ")"
            for i, part in enumerate(parts, start=1)
        )
        return (
            f"Question: {question}\n\nPassages:\n{passages_block(passages, self.max_words)}\n\n"
            f"Plan of the answer, one part per sub-question:\n{plan}\n\n"
            "Write one short paragraph per part, in the order of the plan: sentences that "
            "answer the part's sub-question in your own words, stating what each of the part's "
            "passages says (passages that make the same point share a sentence; at most one "
            f"sentence per passage, at most {MAX_SHARED} passages per sentence). Do not copy "
            "sentences from the passages, and do not mention the passages or their numbers in "
            "the text. Each sentence cites, by number, the passages that support it, at least "
            "one of its part's passages, and every passage of a part is cited in its "
            f"paragraph.{self._avoid(passages)}\n"
            'Reply with JSON only: {"paragraphs": [{"part": 1, "sentences": [{"text": "...", '
            '"cites": [2]}]}, ...]}.'
        )

    def write(
        self,
        question: str,
        passages: Sequence[Passage],
        *,
        outline: Sequence[str] = (),
        context: WritingContext | None = None,
    ) -> Draft:
        """The first answer to ``question`` from ``passages``."""
        parts, missing = plan_parts(passages, context or WritingContext(), outline)
        paragraphs: list[list[Citation]] = []
        raws, cost, cut_off, failed = [], LLMCost(), False, []
        for index, part in enumerate(parts, start=1):
            paragraph, raw, part_cost, problem = self._write_part(question, passages, part, index)
            paragraphs.append(paragraph)
            raws.append(raw)
            cost += part_cost
            if problem is not None:
                failed.append((index, problem))
                cut_off = cut_off or "cut off" in problem
        notes: tuple[str, ...] = ()
        if failed:
            notes = (
                f"the model failed the writer's checks ({failed[0][1]}); part(s) "
                f"{', '.join(str(i) for i, _ in failed)} keep the sentences that pass and quote "
                "the passages none of those cites",
            )
            logger.warning("synthesis: %s", notes[0])
        return _finish(paragraphs, missing, "\n".join(raws), cost, cut_off, notes)

    def _avoid(self, passages: Sequence[Passage] = ()) -> str:
        """The prompt's sentences on the excluded topics and on naming documents (empty when
        there are no excluded topics and the passages come from one document or none)."""
        rule = documents_rule(passages)
        avoid = f" Do not write about: {'; '.join(self.exclude)}." if self.exclude else ""
        return f"{avoid} {rule}" if rule else avoid

    def _part_request(
        self, question: str, passages: Sequence[Passage], part: Part, index: int
    ) -> str:
        number = {p.id: i for i, p in enumerate(passages, start=1)}
        by_id = {p.id: p for p in passages}
        block = "\n".join(
            passage_line(number[pid], by_id[pid], self.max_words) for pid in part.passage_ids
        )
        marks = ", ".join(f"[{number[pid]}]" for pid in part.passage_ids)
        return (
            f"Question: {question}\n\nPart {index} of the answer, on the sub-question: "
            f"{part.aspect.text}\n\nPassages:\n{block}\n\n"
            "Write this part's paragraph: sentences that answer the sub-question in your own "
            "words, one sentence for what each passage says (passages that make the same point "
            f"share a sentence, at most {MAX_SHARED} passages per sentence). Do not copy "
            "sentences from the passages, and do not mention the passages or their numbers in "
            "the text. Each sentence cites, by number, the passages that support it, and every "
            f"one of {marks} is cited.{self._avoid([by_id[p] for p in part.passage_ids])}\n"
            'Reply with JSON only: {"sentences": [{"text": "...", "cites": [n]}]}.'
        )

    def _write_part(
        self, question: str, passages: Sequence[Passage], part: Part, index: int
    ) -> tuple[list[Citation], str, LLMCost, str | None]:
        """One part's checked paragraph, or its passages quoted with the problem that forced
        it: (sentences, raw reply, cost, problem or None)."""
        size = len(part.passage_ids)
        params = ChatParams(
            temperature=self.llm.params.temperature,
            max_tokens=min(self.max_tokens, PART_TOKENS + PASSAGE_TOKENS * size),
            seed=self.llm.params.seed,
        )

        def check(value: PartReply) -> ParagraphItem:
            item = ParagraphItem(part=index, sentences=value.sentences)
            problems = paragraph_problems(item, part, passages)
            if problems:
                raise ValueError("; ".join(problems[:3]))
            return item

        try:
            reply = chat_json(
                self.llm,
                [system(SYSTEM_PROMPT), user(self._part_request(question, passages, part, index))],
                part_reply(len(passages), max(MIN_SENTENCE_CAP, size)),
                task=f"synthesis part {index}",
                check=check,
                retries=self.retries,
                params=params,
            )
        except StructuredOutputError as exc:
            raw = exc.attempts[-1][0] if exc.attempts else ""
            problem = exc.attempts[-1][1] if exc.attempts else "no reply"
            return salvage_part(raw, part, passages), raw, LLMCost(), problem
        paragraph = to_sentences(reply.value, part, passages)
        return paragraph, reply.results[-1].text, LLMCost.of(reply.results), None

    def rewrite(
        self,
        question: str,
        passages: Sequence[Passage],
        previous: Draft,
        feedback: str,
        *,
        outline: Sequence[str] = (),
        context: WritingContext | None = None,
    ) -> Draft:
        """A new answer over the same plan that acts on the critique's ``feedback``."""
        parts, missing = plan_parts(passages, context or WritingContext(), outline)
        if not parts:
            return self._draft("", passages, parts, missing, 1.5)
        number = {p.id: i for i, p in enumerate(passages, start=1)}
        part_of = {part.aspect.id: i for i, part in enumerate(parts, start=1)}
        earlier = "\n".join(
            f"(part {part_of.get(s.aspect_id or '', '-')}) {s.text} "
            + "".join(f"[{number[p]}]" for p in s.passage_ids if p in number)
            for s in previous.answer.sentences
            if not s.framing
        )
        request = (
            f"{self._request(question, passages, parts)}\n\n"
            f"Your previous answer:\n{earlier or '(empty)'}\n\nFeedback on it:\n"
            f"{feedback or '(none)'}\n\nWrite the answer again, acting on the feedback: keep "
            "what is correct, add what it says is missing from the passages it names, and "
            "never copy the feedback itself into the answer."
        )
        return self._draft(request, passages, parts, missing, 1.5)

    def _draft(
        self,
        request: str,
        passages: Sequence[Passage],
        parts: Sequence[Part],
        missing: Sequence[Aspect],
        scale: float,
    ) -> Draft:
        paragraphs: list[list[Citation]] = []
        notes: list[str] = []
        raw, cost, cut_off = "", LLMCost(), False
        if parts:
            params = ChatParams(
                temperature=self.llm.params.temperature,
                max_tokens=int(self.max_tokens * scale),
                seed=self.llm.params.seed,
            )
            messages = [system(SYSTEM_PROMPT), user(request)]
            reply_model = synthesis_reply(len(parts), len(passages), sentence_cap(parts))
            try:
                reply = chat_json(
                    self.llm,
                    messages,
                    reply_model,
                    task="synthesis",
                    check=lambda v: check_paragraphs(v, parts, passages),
                    retries=self.retries,
                    params=params,
                )
                raw, cost = reply.results[-1].text, LLMCost.of(reply.results)
                paragraphs = [
                    to_sentences(item, part, passages)
                    for item, part in zip(reply.value, parts, strict=True)
                ]
            except StructuredOutputError as exc:
                raw = exc.attempts[-1][0] if exc.attempts else ""
                cut_off = "cut off" in (exc.attempts[-1][1] if exc.attempts else "")
                paragraphs, quoted = salvage(raw, parts, passages)
                notes.append(
                    f"the model failed the writer's checks ({exc.attempts[-1][1]}); part(s) "
                    f"{', '.join(map(str, quoted))} quote their passages instead"
                )
                logger.warning("synthesis: %s", notes[-1])
        return _finish(paragraphs, missing, raw, cost, cut_off, tuple(notes))


def _finish(
    paragraphs: Sequence[Sequence[Citation]],
    missing: Sequence[Aspect],
    raw: str,
    cost: LLMCost,
    cut_off: bool,
    notes: tuple[str, ...],
) -> Draft:
    """The draft: the paragraphs' sentences, then the framing sentence naming what is missing."""
    sentences = [s for paragraph in paragraphs for s in paragraph]
    framing = missing_sentence(missing, bool(paragraphs))
    if framing is not None:
        sentences.append(framing)
    target = sum(len(p) for p in paragraphs) or len(sentences)
    return Draft(
        ParsedAnswer(Answer(tuple(sentences))), raw, target, cut_off=cut_off, cost=cost, notes=notes
    )
