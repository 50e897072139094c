"""The plan and the checks of the synthesising writer (:mod:`covrag.generate.synthesis`).

:func:`plan_parts` turns the context and its coverage matrix into *parts*, one per covered
aspect with the passages that cover it; :func:`missing_sentence` and :func:`nothing_found` state
what the selected passages (or, with none, the corpus) do not answer. The reply models
(:func:`part_reply`, :func:`synthesis_reply`) fix the JSON a paragraph is written in,
:func:`paragraph_problems` and :func:`check_paragraphs` say what is wrong with one, and
:func:`salvage_part`, :func:`salvage` and :func:`quote_part` keep what passes and quote the
rest. Split from :mod:`covrag.generate.synthesis`, which re-exports what other modules import
from it.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from covrag.generate.citations import ParsedAnswer
from covrag.generate.copying import copies
from covrag.generate.records import Draft, WritingContext
from covrag.llm.structured import extract_json
from covrag.schema.llm import Reply, int_in, parse_reply, sized, with_fields
from covrag.text import split_sentences
from covrag.types import Answer, Aspect, Citation, Passage


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


def missing_sentence(
    missing: Sequence[Aspect], any_part: bool, selected: bool = True
) -> Citation | None:
    """The framing sentence that names the sub-questions no selected passage is estimated to
    answer (None when nothing). It speaks of the selected passages, not the corpus: a passage
    the selection left out may answer them; and it says "may not": the coverage estimate can
    miss (``make demo``'s "drawbacks of school uniforms" beside "uniforms are often expensive").
    Only with nothing ``selected`` does it speak of the corpus."""
    if not missing and any_part:
        return None
    if not any_part:
        if selected:
            text = (
                "The selected passages may not answer this question: none is estimated to "
                "cover any of "
            )
        else:
            text = "The corpus does not answer this question: no passage found covers any of "
        text += "its sub-questions" + (
            ": " + "; ".join(f'"{a.text}"' for a in missing) + "." if missing else "."
        )
        return Citation(text, (), None, framing=True)
    named = "; ".join(f'"{a.text}"' for a in missing)
    return Citation(f"The selected passages may not answer: {named}.", (), None, framing=True)


def nothing_found(context: WritingContext) -> Draft:
    """The answer when no passage made it into the context: one framing sentence."""
    wanted = [a for a in context.aspects if a.polarity != "exclude"]
    if context.refusal:
        text = f"The corpus does not answer this question: {context.refusal}."
        if wanted:
            text += " Its sub-questions: " + "; ".join(f'"{a.text}"' for a in wanted) + "."
        return Draft(ParsedAnswer(Answer((Citation(text, (), None, framing=True),))), "", 1)
    framing = missing_sentence(wanted, False, selected=False)
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
