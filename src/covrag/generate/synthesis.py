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
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covrag.errors import ConfigError, StructuredOutputError
from covrag.generate.citations import ParsedAnswer
from covrag.generate.copying import copies
from covrag.generate.records import Draft, LLMCost, WritingContext
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.prompts import documents_rule, passage_line, passages_block
from covrag.llm.structured import chat_json, extract_json
from covrag.schema.llm import Reply, int_in, parse_reply, sized, with_fields
from covrag.text import split_sentences
from covrag.types import Answer, Aspect, Citation, Passage

logger = logging.getLogger(__name__)

SYSTEM_PROMPT = (
    "You write short, accurate answers in your own words from numbered passages, and you cite "
    "the passages that support each sentence."
)


@dataclass(frozen=True)
class Part:
    """One paragraph of the plan: an aspect and the context passages that cover it."""

    aspect: Aspect
    passage_ids: tuple[str, ...]


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


def _outline_rank(aspect: Aspect, outline: Sequence[str]) -> int:
    """The outline step that shares the most words with the aspect (its first, on ties)."""
    words = _words(aspect.text)
    overlaps = [len(words & _words(step)) for step in outline]
    return max(range(len(outline)), key=lambda i: (overlaps[i], -i))


def plan_parts(
    passages: Sequence[Passage], context: WritingContext, outline: Sequence[str] = ()
) -> tuple[tuple[Part, ...], tuple[Aspect, ...]]:
    """The parts of the answer (in outline order when there is an outline) and the wanted
    aspects no context passage answers.

    A passage supports the aspects it covers (probability at or above the matrix's threshold)
    and, in any case, the wanted aspect it most probably answers, so every passage of the
    context is used once at least (the selection's floor already kept out those that answer
    nothing). A part's passages are ordered by probability.
    """
    wanted = [a for a in context.aspects if a.polarity != "exclude"]
    coverage = context.coverage
    support: dict[str, list[tuple[float, str]]] = {a.id: [] for a in wanted}
    if coverage is not None and wanted:
        rows = {p: i for i, p in enumerate(coverage.passage_ids)}
        cols = [coverage.aspect_ids.index(a.id) for a in wanted if a.id in coverage.aspect_ids]
        ids = [coverage.aspect_ids[j] for j in cols]
        thresholds = coverage.thresholds[cols]
        for p in passages:
            if p.id not in rows or not cols:
                continue
            probs = np.asarray(coverage.probs[rows[p.id], cols], dtype=np.float64)
            best = int(np.argmax(probs))
            for k, aspect_id in enumerate(ids):
                if k == best or probs[k] >= thresholds[k]:
                    support[aspect_id].append((-float(probs[k]), p.id))
    parts = [Part(a, tuple(pid for _, pid in sorted(support[a.id]))) for a in wanted]
    missing = tuple(part.aspect for part in parts if not part.passage_ids)
    kept = [part for part in parts if part.passage_ids]
    if outline:
        kept.sort(key=lambda part: _outline_rank(part.aspect, outline))  # stable
    return tuple(kept), missing


def missing_sentence(missing: Sequence[Aspect], any_part: bool) -> Citation | None:
    """The framing sentence that names what the corpus does not answer (None when nothing)."""
    if not missing and any_part:
        return None
    if not any_part:
        text = "The corpus does not answer this question: no passage found covers any of "
        text += "its sub-questions" + (
            ": " + "; ".join(f'"{a.text}"' for a in missing) + "." if missing else "."
        )
        return Citation(text, (), None, framing=True)
    named = "; ".join(f'"{a.text}"' for a in missing)
    return Citation(f"The corpus does not answer: {named}.", (), None, framing=True)


def nothing_found(context: WritingContext) -> Draft:
    """The answer when no passage made it into the context: one framing sentence."""
    wanted = [a for a in context.aspects if a.polarity != "exclude"]
    if context.refusal:
        text = f"The corpus does not answer this question: {context.refusal}."
        if wanted:
            text += " Its sub-questions: " + "; ".join(f'"{a.text}"' for a in wanted) + "."
        return Draft(ParsedAnswer(Answer((Citation(text, (), None, framing=True),))), "", 1)
    framing = missing_sentence(wanted, False)
    assert framing is not None
    return Draft(ParsedAnswer(Answer((framing,))), "", 1)


class SentenceItem(Reply):
    text: str
    cites: list[int]


class ParagraphItem(Reply):
    part: int
    sentences: list[SentenceItem]


class SynthesisReply(Reply):
    """``{"paragraphs": [{"part": 1, "sentences": [{"text": "...", "cites": [2]}]}]}``."""

    paragraphs: list[ParagraphItem]


#: Most sentences a paragraph may have: one per passage of its part, and at least this many.
MIN_SENTENCE_CAP = 3

#: Most passages one sentence may cite: passages that make the same point share a sentence, but a
#: sentence citing every passage ("as passages [1]-[7] show") states none of their points.
MAX_SHARED = 3

#: Tokens a part's reply may take: this much, and this much more per passage of the part.
PART_TOKENS = 80
PASSAGE_TOKENS = 90

#: A sentence that talks about the passages instead of saying what they say.
_ABOUT_PASSAGES = re.compile(r"\bpassages?\b|\[\d+\]", re.IGNORECASE)


def sentence_cap(parts: Sequence[Part]) -> int:
    """Most sentences a paragraph may have: enough for one per passage of the largest part."""
    return max([MIN_SENTENCE_CAP, *(len(part.passage_ids) for part in parts)])


@functools.lru_cache(maxsize=128)
def synthesis_reply(parts: int, k: int, most: int = MIN_SENTENCE_CAP) -> type[SynthesisReply]:
    """Exactly ``parts`` paragraphs of 1 to ``most`` sentences, each citing 1..``k`` passages."""
    sentence = with_fields(SentenceItem, cites=sized(int_in(1, k), 1, k))
    paragraph = with_fields(
        ParagraphItem, part=int_in(1, parts), sentences=sized(sentence, 1, most)
    )
    return with_fields(SynthesisReply, paragraphs=sized(paragraph, parts, parts))


class PartReply(Reply):
    """``{"sentences": [{"text": "...", "cites": [2]}]}``: one part's paragraph."""

    sentences: list[SentenceItem]


@functools.lru_cache(maxsize=128)
def part_reply(k: int, most: int) -> type[PartReply]:
    """One paragraph of 1 to ``most`` sentences, each citing 1..``k`` passages."""
    sentence = with_fields(SentenceItem, cites=sized(int_in(1, k), 1, k))
    return with_fields(PartReply, sentences=sized(sentence, 1, most))


def sentence_problem(
    sentence: SentenceItem, where: str, allowed: set[int], texts: Sequence[str]
) -> str | None:
    """What is wrong with one sentence of a part whose passages are numbered ``allowed``."""
    if not any(c.isalpha() for c in sentence.text):
        return f"{where} is empty"
    if not allowed & set(sentence.cites):
        marks = "".join(f"[{n}]" for n in sorted(allowed))
        return f"{where} cites none of its part's passages {marks}"
    if len(set(sentence.cites)) > MAX_SHARED:
        return (
            f"{where} cites {len(set(sentence.cites))} passages; give each passage's point its "
            f"own sentence (at most {MAX_SHARED} passages per sentence)"
        )
    if _ABOUT_PASSAGES.search(sentence.text):
        return f"{where} talks about the passages; state what they say, and cite them only in cites"
    if copies(sentence.text, texts):
        return f"{where} copies a passage; say it in your own words"
    return None


def _numbered(part: Part, passages: Sequence[Passage]) -> tuple[set[int], list[str]]:
    """The context numbers of the part's passages, and the texts of all context passages."""
    number = {p.id: i for i, p in enumerate(passages, start=1)}
    return {number[p] for p in part.passage_ids}, [p.text for p in passages]


def paragraph_problems(item: ParagraphItem, part: Part, passages: Sequence[Passage]) -> list[str]:
    """What is wrong with one paragraph (empty when it is usable)."""
    allowed, texts = _numbered(part, passages)
    problems = [
        problem
        for s, sentence in enumerate(item.sentences, start=1)
        if (problem := sentence_problem(sentence, f"part {item.part} sentence {s}", allowed, texts))
    ]
    left_out = allowed - {n for sentence in item.sentences for n in sentence.cites}
    if left_out:
        marks = "".join(f"[{n}]" for n in sorted(left_out))
        problems.append(
            f"part {item.part} leaves out {marks}: state what each passage of the part says, "
            "citing it"
        )
    return problems


def salvage_part(raw: str, part: Part, passages: Sequence[Passage]) -> list[Citation]:
    """From a part's rejected reply, the sentences that pass their own checks, then a quote of
    each passage of the part that none of them cites."""
    allowed, texts = _numbered(part, passages)
    kept: list[SentenceItem] = []
    with contextlib.suppress(ValueError):
        reply = parse_reply(part_reply(len(passages), 10**6), extract_json(raw))
        kept = [s for s in reply.sentences if sentence_problem(s, "", allowed, texts) is None]
    sentences = to_sentences(ParagraphItem(part=1, sentences=kept), part, passages)
    cited = {pid for s in sentences for pid in s.passage_ids}
    left = Part(part.aspect, tuple(pid for pid in part.passage_ids if pid not in cited))
    return sentences + quote_part(left, passages)


def check_paragraphs(
    reply: SynthesisReply, parts: Sequence[Part], passages: Sequence[Passage]
) -> list[ParagraphItem]:
    """The paragraphs in part order; raises ``ValueError`` naming what is wrong."""
    numbers = [p.part for p in reply.paragraphs]
    if numbers != list(range(1, len(parts) + 1)):
        raise ValueError(f"write one paragraph per part, parts 1 to {len(parts)} in order")
    problems = [
        problem
        for item, part in zip(reply.paragraphs, parts, strict=True)
        for problem in paragraph_problems(item, part, passages)
    ]
    if problems:
        raise ValueError("; ".join(problems[:3]))
    return list(reply.paragraphs)


def quote_part(part: Part, passages: Sequence[Passage]) -> list[Citation]:
    """The fallback for one part: the first sentence of each of its passages, quoted and cited,
    so that no passage's point is lost when the model cannot restate it."""
    by_id = {p.id: p for p in passages}
    quotes = []
    for passage_id in part.passage_ids:
        passage = by_id[passage_id]
        first = (split_sentences(passage.text) or [passage.text])[0].strip()
        quotes.append(Citation(f'One source says: "{first}"', (passage_id,), part.aspect.id))
    return quotes


def to_sentences(item: ParagraphItem, part: Part, passages: Sequence[Passage]) -> list[Citation]:
    """A checked paragraph as answer sentences (cites outside the context never occur: the
    schema bounds them)."""
    ids = [p.id for p in passages]
    return [
        Citation(s.text.strip(), tuple(dict.fromkeys(ids[n - 1] for n in s.cites)), part.aspect.id)
        for s in item.sentences
    ]


def salvage(
    raw: str, parts: Sequence[Part], passages: Sequence[Passage]
) -> tuple[list[list[Citation]], list[int]]:
    """From a rejected reply, the paragraphs that pass their checks; the others (1-based part
    numbers, returned) quote their passages."""
    good: dict[int, ParagraphItem] = {}
    try:
        reply_model = synthesis_reply(len(parts), len(passages), sentence_cap(parts))
        value = parse_reply(reply_model, extract_json(raw))
        for item in value.paragraphs:
            if 1 <= item.part <= len(parts) and item.part not in good:
                if not paragraph_problems(item, parts[item.part - 1], passages):
                    good[item.part] = item
    except ValueError:
        pass
    paragraphs, quoted = [], []
    for i, part in enumerate(parts, start=1):
        if i in good:
            paragraphs.append(to_sentences(good[i], part, passages))
        else:
            paragraphs.append(quote_part(part, passages))
            quoted.append(i)
    return paragraphs, quoted


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
