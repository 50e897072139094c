"""The answer when the model's answer holds nothing the passages support: quotes, or a refusal.

:func:`quoted_answer` quotes the selected passages, grouped by sub-question (the parts of
:func:`~covrag.generate.synthesis.plan_parts`: each wanted aspect with the passages that cover
it), one quotation per passage: the passage sentence (a blank line ends one too) that holds most
of the sub-question's content words, each weighted by its rarity among the passages
(:func:`~covrag.generate.requote.word_weights`: a word every passage writes, the module's name in
its own manual, tells nothing), of at least a few words (not a heading); the first such sentence on
ties, or when there is no sub-question. A sentence that takes its subject from the one before it
("This option only uses TCP keepalives ...") is quoted from its paragraph's start, which names it
(:func:`~covrag.generate.requote.named_span`; every quoting path builds its quotations with
:func:`quotation`). Each quotation is an
exact span of its passage, cited, with that span in its check (``aligned``, score 1): a reader
finds it word for word; a sentence two sub-questions (or two overlapping passages) would quote
is quoted once, under the first.
:func:`refusal` is the one framing sentence that says no answer is given and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from covrag.generate.records import WritingContext
from covrag.generate.requote import (
    addresses_model,
    named_span,
    quotable_spans,
    quote_spans,
    stated,
    stems,
    word_weights,
)
from covrag.generate.synthesis import missing_sentence, plan_parts
from covrag.types import Aspect, Citation, Passage, SupportCheck


def quote_span(
    passage: Passage, aspect: Aspect | None, weights: Mapping[str, float] | None = None
) -> tuple[int, int] | None:
    """The ``[start, end)`` of the passage sentence to quote for ``aspect``, its words weighted
    by ``weights`` (each 1 when None); None when the passage holds nothing to quote (only
    text addressed to a model, :func:`~covrag.generate.requote.addresses_model`)."""
    spans = [(s, e) for s, e in quote_spans(passage.text) if e > s]
    if not spans:
        return None if addresses_model(passage.text) else (0, len(passage.text))
    spans = quotable_spans(passage.text) or spans
    if aspect is None:
        return spans[0]
    wanted = stems(" ".join((aspect.text, *aspect.answers)))
    shared = [
        sum((weights or {}).get(w, 1.0) for w in wanted & stems(passage.text[s:e]))
        for s, e in spans
    ]
    return spans[max(range(len(spans)), key=lambda i: (shared[i], -i))]


def quote(
    passage: Passage, aspect: Aspect | None, weights: Mapping[str, float] | None = None
) -> Citation | None:
    """One quotation of ``passage``: an exact sentence of it, in quotation marks, cited (None
    when it holds nothing to quote)."""
    span = quote_span(passage, aspect, weights)
    return None if span is None else quotation(passage, span, None if aspect is None else aspect.id)


def quotation(passage: Passage, span: tuple[int, int], aspect_id: str | None = None) -> Citation:
    """``passage.text[span]`` in quotation marks, cited, with that span in its check; a sentence
    that takes its subject from the sentences before it is quoted from its paragraph's start
    (:func:`~covrag.generate.requote.named_span`)."""
    start, end = named_span(passage.text, span)
    check = SupportCheck((), "aligned", 1.0, passage.id, (start, end))
    return Citation(f"\u201c{passage.text[start:end]}\u201d", (passage.id,), aspect_id, check=check)


def quoted_answer(
    passages: Sequence[Passage], context: WritingContext | None
) -> tuple[Citation, ...]:
    """Quotations of ``passages`` grouped by the sub-question each covers, then the framing
    sentence naming the sub-questions no passage covers; without sub-questions, one quotation
    per passage in context order."""
    parts, missing = plan_parts(passages, context or WritingContext())
    by_id = {p.id: p for p in passages}
    weights = word_weights(passages)
    if not parts:
        return _once(quote(p, None) for p in passages)
    quotes = _once(
        quote(by_id[pid], part.aspect, weights) for part in parts for pid in part.passage_ids
    )
    framing = missing_sentence(missing, True)
    return (*quotes, *(() if framing is None else (framing,)))


def completed(
    kept: Sequence[Citation], passages: Sequence[Passage], context: WritingContext | None
) -> tuple[Citation, ...]:
    """A short written answer (``kept``, checked) completed by the fallback's quotations
    (:func:`quoted_answer`) after its sentences: those a kept sentence already states (it writes
    :data:`~covrag.generate.requote.STATED_SHARE` of their word stems) or a kept quotation holds
    (:func:`fold_in`) left out, and one framing sentence at the end (the answer's own, else the
    one naming the sub-questions no passage covers)."""
    out = [s for s in kept if not s.framing]
    framing = [s for s in kept if s.framing]
    written = [stems(s.text) for s in out]
    for quoted in quoted_answer(passages, context):
        wanted = stems(quoted.text)
        if quoted.framing:
            framing = framing or [quoted]
        elif stated(wanted, written):
            continue  # a kept sentence states it
        elif not fold_in(out, quoted):
            out.append(quoted)
    return (*out, *framing)


def _once(quotes: Iterable[Citation | None]) -> tuple[Citation, ...]:
    """Each quoted sentence once, where it first comes (under its first sub-question; passages
    cut with an overlap hold the same sentence twice)."""
    kept: dict[str, Citation] = {}
    for quoted in quotes:
        if quoted is not None:
            kept.setdefault(quoted.text, quoted)
    return without_contained(tuple(kept.values()))


def quoted_span(sentence: Citation) -> tuple[str, int, int] | None:
    """(passage id, start, end) of a quotation's span; None for a sentence that is no
    quotation."""
    check = sentence.check
    if not sentence.text.startswith("\u201c") or check is None or check.span is None:
        return None
    return (check.passage_id or "", *check.span)


def _quoted_words(quotation: Citation) -> str:
    """A quotation's words, case and spacing aside, without its quotation marks."""
    return " ".join(quotation.text.strip().strip("\u201c\u201d").split()).casefold()


def fold_in(sentences: list[Citation], quoted: Citation) -> bool:
    """Whether ``quoted`` is already in ``sentences``: a quotation of the same passage there
    holds its span, or one of another passage holds its words (passages cut with an overlap
    share text) (then nothing changes), or its span or words hold theirs (then it takes that
    one's place in ``sentences``, which is changed in place). False: append it."""
    mine = quoted_span(quoted)
    if mine is None:
        return False
    words = _quoted_words(quoted)
    for i, other in enumerate(sentences):
        theirs = quoted_span(other)
        if theirs is None:
            continue
        if theirs[0] == mine[0]:
            held, holds = (
                theirs[1] <= mine[1] and mine[2] <= theirs[2],
                (mine[1] <= theirs[1] and theirs[2] <= mine[2]),
            )
        else:
            other_words = _quoted_words(other)
            held, holds = words in other_words, other_words in words
        if held:
            return True
        if holds:
            sentences[i] = quoted
            return True
    return False


def without_contained(sentences: Sequence[Citation]) -> tuple[Citation, ...]:
    """``sentences`` with no quotation whose span lies inside another quotation's span of the
    same passage: a quotation read from its paragraph's start (:func:`quotation`) holds the
    sentence before it, which may be quoted too. The wider one stays, where the first of the two
    was (:func:`fold_in`)."""
    out: list[Citation] = []
    for sentence in sentences:
        if not fold_in(out, sentence):
            out.append(sentence)
    return tuple(out)


def refusal(unsupported: int) -> Citation:
    """The framing sentence of an answer refused because nothing the model wrote is supported."""
    return Citation(
        f"No answer is given: none of the {unsupported} sentence(s) the model wrote is supported "
        "by the passages it was given.",
        (),
        None,
        framing=True,
    )
