"""The citation check: every sentence of an answer is held by the passage it cites, or it goes.

A small writer cites by position, not by content: Qwen2.5-Coder-1.5B copied passage n and cited
passage n + 1, and 5 of 21 sentences of a user test were supported by what they cite. So each
draft of every writer is checked before it is shown or written (:class:`SupportChecker`):

1. **alignment** (:func:`~covrag.generate.alignment.align`): a passage that holds the sentence's
   text (a long shared run of words, or most of its content words) supports it, with the exact
   span; cheap, and repeatable by a reader;
2. **the support judge** for paraphrase, only when asked for (``threshold``): the coverage
   cross-encoder shipped with covrag scores (passage, sentence) pairs, the sentence in the place
   of an aspect, and a pair at or above the threshold supports it. By default a sentence is
   supported only by alignment: on technical documents the judge accepted paraphrases a reader
   did not (:data:`JUDGE_THRESHOLD`);
3. **attribution** (:mod:`covrag.generate.attribution`): a sentence that names documents of the
   context ("The MPL-2.0 grants ...") is supported only by passages of those documents, so a
   passage of one document is never shown as the source of a claim the sentence attributes to
   another;
4. **repair**: a sentence keeps the cited passages that support it; one whose cited passages do
   not is re-pointed to the passage that does (the aligned one first, else the judge's best); a
   sentence no passage supports is ``unsupported``, and the policy (``unsupported``) puts in
   its place the passage sentence that holds most of its words, quoted and cited
   (:mod:`covrag.generate.requote`; ``quote``, the default), where one holds enough of it, and
   drops the rest from the answer, recorded in :attr:`~covrag.types.Answer.dropped` (the
   written sentences a quotation replaced too), or drops every one (``drop``), or keeps them
   marked (``mark``);
5. **tidy** (:mod:`covrag.generate.tidy`): a lead-in about a passage ("Passage 2 explains that
   ...") is removed before the check; after it, sentences still about the passages, sentences
   leaning on a dropped one ("This option ..."), a colon whose sequel was dropped and repeats
   are dropped too, each reason named in the warnings;
6. **names** (:func:`held_names`): a supported sentence's options, setting and function names
   must each be written in a passage it cites or in another passage of the same document (then
   cited too), else it is unsupported.

Every checked sentence records its check (:class:`~covrag.types.SupportCheck`): the ids as
written, how it was verified, its score and the supporting span. When no sentence of a reply is
supported, the answer is not the reply: it quotes the passages (:mod:`covrag.generate.quotes`,
``fallback="quote"``) or says that no answer is given and why (``fallback="refuse"``); the draft's
problems (:func:`~covrag.generate.records.support_warnings`) say so.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from covrag.coverage.base import CoverageEstimator
from covrag.errors import ConfigError
from covrag.generate.alignment import align, best_window
from covrag.generate.attribution import bare_name, candidates, document_names
from covrag.generate.citations import InvalidCitation, ParsedAnswer
from covrag.generate.commands import composed, option_at, split
from covrag.generate.quotes import completed, quoted_answer, refusal
from covrag.generate.records import Draft, WritingContext
from covrag.generate.requote import requote
from covrag.generate.tidy import reword, tidy
from covrag.llm.prompts import document_of
from covrag.schema.writer import WRITER
from covrag.text import code_names
from covrag.types import Answer, Aspect, Citation, FloatArray, Passage, SupportCheck, Topic

#: The judge's probability at or above which a passage supports a paraphrase, when the judge is
#: asked for (``SupportChecker(threshold=JUDGE_THRESHOLD)``): the lowest threshold (in steps of
#: 0.05) with precision at least 0.8 on ArgKP 2021 dev's labelled (argument, key point) pairs
#: (``benchmarks/bench_support.py``, docs/experiments/21-citation-check.md: precision 0.807,
#: recall 0.486 over 3,458 pairs). On technical answer sentences it is no test of support: of the
#: 88 (sentence, cited passage) pairs of the answer benchmark that it alone accepted, a reader
#: labelled 15 supported (0.17), at every threshold from 0.75 to 0.95, and a cross-encoder
#: trained further on documents did no better (``benchmarks/bench_support_docs.py``,
#: docs/experiments/30-documents-coverage-model.md). So the check does not consult it unless told.
JUDGE_THRESHOLD = 0.75

UNSUPPORTED_POLICIES = ("quote", "drop", "mark")
FALLBACKS = ("quote", "refuse")


class SupportChecker:
    """Checks and repairs the citations of a draft (see the module docstring).

    Args:
        judge: Scores (passage, sentence) pairs for paraphrase; None = the shipped coverage
            cross-encoder (:class:`~covrag.coverage.CrossEncoderCoverage`), loaded only when a
            threshold asks for it.
        threshold: The judge's probability that counts as support; None (the default): the
            judge is not consulted, and only alignment supports a sentence
            (:data:`JUDGE_THRESHOLD` is the value measured on debate pairs).
        unsupported: ``quote`` (the default: put the passage sentence that holds most of an
            unsupported sentence's words in its place, quoted and cited, where one holds
            enough of it (:mod:`covrag.generate.requote`), and drop the rest), ``drop`` (leave
            unsupported sentences out of the answer, recorded as dropped) or ``mark`` (keep
            them, marked ``unsupported``).
        fallback: What replaces a reply with no supported sentence: ``quote`` (quotations of
            the passages, by sub-question) or ``refuse`` (no answer, with the reason).
        complete: With ``fallback="quote"``, an answer that keeps fewer than this many of the
            model's own sentences (quotations in place of its dropped ones aside) is completed
            by the fallback's quotations after them (:func:`~covrag.generate.quotes.completed`;
            0 = never). The default is ``covrag ask``'s, 3
            (docs/experiments/45-completed-answers-held-out.md).

    Example:
        >>> checker = SupportChecker()  # doctest: +SKIP
        >>> checked = checker.check(draft, passages)  # doctest: +SKIP
        >>> checked.answer.sentences[0].check.verified  # doctest: +SKIP
        'aligned'
    """

    def __init__(
        self,
        judge: CoverageEstimator | None = None,
        *,
        threshold: float | None = None,
        unsupported: str = "quote",
        fallback: str = "quote",
        complete: int = WRITER.complete,
    ) -> None:
        if unsupported not in UNSUPPORTED_POLICIES:
            raise ConfigError(
                f"unsupported must be one of {UNSUPPORTED_POLICIES}, got {unsupported!r}"
            )
        if fallback not in FALLBACKS:
            raise ConfigError(f"fallback must be one of {FALLBACKS}, got {fallback!r}")
        if complete < 0:
            raise ConfigError(f"complete must be >= 0, got {complete}")
        if threshold is not None and not 0.0 <= threshold <= 1.0:
            raise ConfigError(f"threshold must lie in [0, 1], got {threshold}")
        if judge is None and threshold is not None:
            from covrag.coverage import CrossEncoderCoverage

            # every (passage, sentence) pair on its own (sentences carry no answer sketches)
            judge = CrossEncoderCoverage()
        self.judge = judge
        self.threshold = threshold
        self.unsupported = unsupported
        self.fallback = fallback
        self.complete = complete

    def __repr__(self) -> str:
        return (
            f"SupportChecker({self.judge!r}, threshold={self.threshold}, "
            f"unsupported={self.unsupported!r}, fallback={self.fallback!r}, "
            f"complete={self.complete})"
        )

    def check_sentences(
        self, sentences: Sequence[Citation], passages: Sequence[Passage]
    ) -> list[Citation]:
        """Each sentence with its check and repaired citations (framing sentences as they are)."""
        by_id = {p.id: p for p in passages}
        checked: list[Citation | None] = []
        unaligned: list[int] = []
        allowed = [candidates(s.text, passages) for s in sentences]
        for i, sentence in enumerate(sentences):
            found = None if sentence.framing else _aligned(sentence, allowed[i])
            if found is None and not sentence.framing:
                found = composed(sentence, allowed[i])
            checked.append(sentence if sentence.framing else found)
            if not sentence.framing and found is None:
                unaligned.append(i)
        threshold = self.threshold
        if threshold is None:  # alignment only: what did not align is unsupported
            for i in unaligned:
                check = SupportCheck(sentences[i].passage_ids, "unsupported", 0.0)
                checked[i] = dataclasses.replace(sentences[i], check=check)
        elif unaligned:
            probs = self._scores([sentences[i].text for i in unaligned], passages)
            for row, i in enumerate(unaligned):
                # a sentence that names documents is judged against their passages only, and
                # one that names options or settings against documents that write them
                fits = _writing_names(sentences[i].text, allowed[i])
                mine = np.array([p in fits for p in passages], dtype=bool)
                masked = np.where(mine, probs[row], 0.0)
                checked[i] = self._judged(sentences[i], passages, masked, by_id, threshold)
        return [
            held_names(c, allowed[i], by_id) if c is not None else sentences[i]
            for i, c in enumerate(checked)
        ]

    def _scores(self, texts: Sequence[str], passages: Sequence[Passage]) -> FloatArray:
        """The judge's probabilities, sentences (rows) x passages (columns)."""
        aspects = tuple(Aspect(f"s{i}", text or "-") for i, text in enumerate(texts))
        topic = Topic("support", "", tuple(passages), aspects)
        if self.judge is None:
            raise ConfigError("the support judge is not loaded: give SupportChecker a threshold")
        return np.asarray(self.judge.estimate(topic).probs, dtype=np.float64).T

    def _judged(
        self,
        sentence: Citation,
        passages: Sequence[Passage],
        probs: FloatArray,
        by_id: dict[str, Passage],
        threshold: float,
    ) -> Citation:
        written = sentence.passage_ids
        column = {p.id: j for j, p in enumerate(passages)}
        keep = [p for p in written if p in column and probs[column[p]] >= threshold]
        if not keep:
            best = int(np.argmax(probs)) if len(passages) else -1
            if best < 0 or probs[best] < threshold:
                score = float(probs[best]) if best >= 0 else 0.0
                check = SupportCheck(written, "unsupported", round(score, 6))
                return dataclasses.replace(sentence, check=check)
            keep = [passages[best].id]
        top = max(keep, key=lambda p: probs[column[p]])
        span = best_window(sentence.text, by_id[top].text)
        check = SupportCheck(
            written, "judged", round(float(probs[column[top]]), 6), top, _span(span, by_id[top])
        )
        return dataclasses.replace(sentence, passage_ids=tuple(keep), check=check)

    def check(
        self,
        draft: Draft,
        passages: Sequence[Passage],
        context: WritingContext | None = None,
        evidence: Sequence[Passage] = (),
    ) -> Draft:
        """``draft`` with every sentence checked, citations repaired and the policy applied;
        a draft with no supported sentence becomes the fallback answer. ``evidence``: passages
        beyond the context that a sentence may be checked against and cite
        (:mod:`covrag.generate.evidence`); the fallback quotes the context only."""
        if not passages:  # nothing to cite: the writer said the corpus does not answer
            return draft
        written = draft.answer.sentences
        reworded = [
            s if s.framing else dataclasses.replace(s, text=reword(s.text)) for s in written
        ]
        checkable = (*passages, *(p for p in evidence if p not in passages))
        sentences = self.check_sentences(reworded, checkable)
        replaced: list[Citation] = []
        if self.unsupported == "quote":
            checked = {id(s) for s in sentences}
            sentences, replaced = requote(sentences, checkable)
        quotes = set() if not replaced else {id(s) for s in sentences} - checked
        drop = self.unsupported != "mark"
        unsupported_out = [not s.framing and not s.supported and drop for s in sentences]
        tidied = tidy(
            sentences,
            unsupported_out,
            {p.id: document_of(p) for p in checkable},
            {p.id: p for p in checkable},
        )
        removed = {id(c) for c, _ in tidied.removed}
        swapped = {id(c) for c, _ in tidied.replaced}
        kept = list(tidied.kept)
        left_out = zip(sentences, unsupported_out, strict=True)
        dropped = (
            *replaced,
            *(s for s, out in left_out if out or id(s) in removed or id(s) in swapped),
        )
        notes = tidied.notes()
        if replaced:
            notes = (
                f"{len(replaced)} sentence(s) no passage holds were replaced by the passage "
                "sentence that holds most of their words, quoted: "
                + "; ".join(repr(s.text) for s in replaced),
                *notes,
            )
        changed = sum(1 for a, b in zip(written, reworded, strict=True) if a.text != b.text)
        if changed:
            notes = (f"{changed} sentence(s) lost a lead-in about a passage", *notes)
        out = zip(sentences, unsupported_out, strict=True)
        gone = {*removed, *(id(c) for c, left in out if left)}
        invalid = _kept_invalid(draft.parsed.invalid, sentences, gone, swapped)
        fallback = None
        answer = Answer(tuple(kept), dropped)
        own = [  # the model's own sentences kept: no quotation, none put in a dropped one's place
            s for s in kept if s.supported and not s.framing and not s.text.startswith("\u201c")
        ]
        if not any(s.supported and id(s) not in quotes for s in kept):
            fallback = self.fallback
            answer, notes = self._fallback(kept, replaced, sentences, quotes, passages, context)
            invalid = ()
        elif self.fallback == "quote" and len(own) < self.complete:
            answer = Answer(completed(kept, passages, context), dropped)
            notes = (
                *notes,
                f"the answer keeps {len(own)} sentence(s) the model wrote: the selected "
                "passages' quotations by sub-question follow them",
            )
        parsed = ParsedAnswer(answer, invalid, draft.parsed.repeated)
        return dataclasses.replace(
            draft, parsed=parsed, checked=True, fallback=fallback, tidied=notes
        )

    def _fallback(
        self,
        kept: Sequence[Citation],
        replaced: Sequence[Citation],
        sentences: Sequence[Citation],
        quotes: set[int],
        passages: Sequence[Passage],
        context: WritingContext | None,
    ) -> tuple[Answer, tuple[str, ...]]:
        """The fallback answer when nothing the model wrote holds, and its notes: a quotation in
        place of one of its sentences does not stand for an answer, but leads the fallback's
        quotations (the tidy notes are about sentences the fallback does not show)."""
        unsupported = (*replaced, *(s for s in sentences if not s.framing and id(s) not in quotes))
        if self.fallback != "quote":
            return Answer((refusal(len(unsupported)),), unsupported), ()
        led = [s for s in kept if id(s) in quotes]
        notes = (
            (
                f"the quotations are led by {len(led)} quoted in place of sentences no "
                "passage holds: " + "; ".join(repr(s.text) for s in replaced),
            )
            if led
            else ()
        )
        return Answer(_after(led, quoted_answer(passages, context)), unsupported), notes


def _kept_invalid(
    invalid: Sequence[InvalidCitation],
    sentences: Sequence[Citation],
    gone: set[int],
    swapped: set[int],
) -> tuple[InvalidCitation, ...]:
    """The invalid citations of the sentences kept, renumbered to their new places (those of a
    sentence replaced by its passage's own sentence go with it)."""
    where: dict[int, int] = {}  # old index -> new index
    for old, s in enumerate(sentences):
        if id(s) not in gone:
            where[old] = len(where)
    return tuple(
        InvalidCitation(where[c.sentence], c.number)
        for c in invalid
        if c.sentence in where and id(sentences[c.sentence]) not in swapped
    )


def _after(first: Sequence[Citation], rest: Sequence[Citation]) -> tuple[Citation, ...]:
    """``first``, then the sentences of ``rest`` that quote nothing ``first`` quotes."""
    quoted = {s.text for s in first}
    return (*first, *(s for s in rest if s.text not in quoted))


def _span(span: tuple[int, int], passage: Passage) -> tuple[int, int]:
    """A non-empty span: ``span``, or the whole passage when ``span`` is empty."""
    return span if span[1] > span[0] else (0, max(len(passage.text), 1))


def _aligned(sentence: Citation, passages: Sequence[Passage]) -> Citation | None:
    """The sentence checked by alignment, or None when no passage holds its text."""
    found = {
        p.id: a for p in passages if (a := align(sentence.text, p.text, document_of(p))) is not None
    }
    if not found:
        return None
    written = sentence.passage_ids
    keep = [p for p in written if p in found] or [max(found, key=lambda p: found[p].share)]
    top = max(keep, key=lambda p: found[p].share)
    check = SupportCheck(written, "aligned", round(found[top].share, 6), top, found[top].span)
    return dataclasses.replace(sentence, passage_ids=tuple(keep), check=check)


def _holds(text: str, name: str) -> bool:
    """Whether ``text`` names ``name`` as written: an option with its case, as a whole option
    (``-z`` not in ``-zip``); another name in any case, as a whole word."""
    if name.startswith("-"):
        return option_at(text, name) is not None
    return re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) is not None


def _writing_names(text: str, passages: Sequence[Passage]) -> tuple[Passage, ...]:
    """The passages of ``passages`` whose document writes every code name of ``text`` (in any
    of its passages among ``passages``): where the judge may look for support."""
    names = _not_documents(code_names(text), passages)
    if not names:
        return tuple(passages)
    by_document: dict[str | None, list[Passage]] = {}
    for p in passages:
        by_document.setdefault(document_of(p), []).append(p)
    fits: list[Passage] = []
    for group in by_document.values():
        parts = [part for n in names for part in _parts(n, group)]
        if all(any(_holds(p.text, part) for p in group) for part in parts):
            fits.extend(group)
    return tuple(fits)


def _not_documents(names: Sequence[str], passages: Sequence[Passage]) -> list[str]:
    """``names`` without those that name a document of ``passages`` (``ssh_config`` for
    ``ssh_config.5.txt``): naming a document is the attribution rule's to check, and a passage
    need not write its own document's name."""
    documents: set[str] = set()
    for p in passages:
        for name in document_names(p):
            documents.add(name.lower())
            documents.add(bare_name(name.lower()))
    return [n for n in names if n.lower() not in documents]


def _parts(name: str, passages: Sequence[Passage]) -> list[str]:
    """``name``, or the short options it combines when no passage writes it whole (``-czf``
    -> ``-c``, ``-z``, ``-f``; ``find -mtime`` is one option that find's manual writes)."""
    parts = split(name)
    if len(parts) > 1 and not any(_holds(p.text, name) for p in passages):
        return parts
    return [name]


def held_names(
    sentence: Citation, allowed: Sequence[Passage], by_id: dict[str, Passage]
) -> Citation:
    """A supported sentence, checked for its code names (:func:`covrag.text.code_names`: options,
    setting and function names): each must be written in a passage it cites, or in another
    passage of the same document, which it then cites too. A name no such passage holds makes
    the sentence unsupported: the judge reads paraphrase, and "git stash pop" is not a
    paraphrase of a passage about ``git stash apply``, nor curl's ``--keepalive-time`` one of
    ssh's ``ServerAliveInterval``. Other sentences are returned as they are."""
    check = sentence.check
    if sentence.framing or check is None or not sentence.supported:
        return sentence
    names = _not_documents(code_names(sentence.text), allowed)
    if not names:
        return sentence
    cited = [by_id[p] for p in sentence.passage_ids if p in by_id]
    home = {document_of(p) for p in cited}
    nearby = [p for p in allowed if document_of(p) in home and p not in cited]
    extra: list[str] = []
    for name in [part for n in names for part in _parts(n, cited + nearby)]:
        if any(_holds(p.text, name) for p in cited):
            continue
        holder = next((p for p in nearby if _holds(p.text, name)), None)
        if holder is None:
            unsupported = SupportCheck(check.written, "unsupported", check.score)
            return dataclasses.replace(sentence, check=unsupported)
        cited.append(holder)
        extra.append(holder.id)
    if not extra:
        return sentence
    return dataclasses.replace(sentence, passage_ids=(*sentence.passage_ids, *extra))
