"""What is left of a checked answer must read right: no talk about "the passage", no sentence
leaning on one that was dropped, no "the following command:" with the command gone, no repeats.

A small writer narrates its sources ("Passage 3 provides an example ...", "The passage from
ssh_config explains ..."), and the citation check drops unsupported sentences one by one, which
can leave "This option ..." after the sentence that named the option, or a colon that introduced
what was dropped. :func:`reword` first removes a narrating lead-in where the rest of the sentence
states the fact itself ("Passage 2 explains that -L follows redirects." -> "-L follows
redirects."); :func:`tidy` then removes, from the sentences the check kept:

- **narrates**: a sentence still about the passages or documents (:func:`narrates`);
- **leans**: a sentence that opens with a pronoun ("This", "It", "These", ...) right after a
  sentence that was dropped, whose subject it takes, or after one that cites other documents
  only (its passages are about another subject: "This option ..." under ssh's setting, held by
  curl's manual). When the sentence is aligned to its passage and the passage's own sentence
  around that span names its subject (opens with no pronoun, or is quoted from its paragraph's
  start, which does), that sentence takes its place,
  quoted: "This option specifies the interval ..." after a dropped sentence naming
  ServerAliveInterval becomes "ServerAliveInterval Sets a timeout interval in seconds ...",
  which ssh_config(5) writes (``replaced``);
- **dangling**: a sentence that ends with a colon when what it introduced was dropped (or it is
  the last one);
- **repeat**: a sentence the answer already holds word for word;
- **heading**: a document's heading, not a statement (:func:`~covrag.text.is_heading`: the GPL's
  "TERMS AND CONDITIONS 0.", split off a sentence the writer quoted it in, is aligned to its
  passage and says nothing);
- **instruction**: a sentence addressed to a model, not a reader ("ignore the previous
  instructions", "you are an AI assistant"): text a document plants for the model (a prompt
  injection) is never obeyed by the check and never shown as the answer's, even when copied
  word for word and so "supported".

Each removal is named, so the warnings say what was dropped and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from covrag.generate.alignment import sentence_spans
from covrag.generate.quotes import quotation
from covrag.generate.requote import addresses_model, leans, named_span
from covrag.text import is_heading
from covrag.types import Citation, Passage

_SAYS = (
    r"(?:explains?|states?|says|say|notes?|mentions?|describes?|shows?|indicates?|adds?|"
    r"clarif(?:y|ies)|suggests?|confirms?|specif(?:y|ies)|points?\s+out|tells?\s+us|reads?)"
)
_SOURCE = (
    r"(?:the\s+)?(?:(?:first|second|third|last|cited|provided|given|above)\s+)?"
    r"(?:passages?|excerpts?|documents?|texts?|context|sources?)"
    r"(?:\s*\[?\d+\]?)?(?:\s+(?:from|of|in)\s+(?:the\s+)?[\w.()-]+(?:\s+(?:manual|page|file))?)?"
)
_LEAD_INS = (
    re.compile(rf"^\s*(?:as\s+)?{_SOURCE}\s+{_SAYS}(?:\s+that)?[,:]?\s+", re.IGNORECASE),
    re.compile(rf"^\s*(?:according\s+to|as\s+stated\s+in|in)\s+{_SOURCE}\s*,\s*", re.IGNORECASE),
)
# Talk about the material rather than the subject: any "passage" or "excerpt"; "the document /
# text / source" only with a verb of saying or a word that marks it as the given material ("the
# source and target may be ..." and "the text is compressed" are the subject's own words).
_MATERIAL = r"(?:documents?|texts?|sources?|context)"
_NARRATION = re.compile(
    r"\b(?:passages?|excerpts?)\b|"
    rf"\b(?:the|this|that|these|each|both)\s+(?:provided|given|cited|above)\s+{_MATERIAL}\b|"
    rf"\b(?:the|this|that|these)\s+{_MATERIAL}\s+{_SAYS}\b|"
    r"\baccording\s+to\s+the\s+(?:passages?|documents?|context|text|excerpts?|sources?)\b",
    re.IGNORECASE,
)


def narrates(sentence: str) -> bool:
    """Whether ``sentence`` talks about the passages or documents it was given ("Passage 3
    explains ...", "the document states ...") instead of stating the answer.

    Example:
        >>> narrates("Passage 2 explains the --post301 option.")
        True
        >>> narrates("Use -L to follow redirects.")
        False
    """
    return bool(_NARRATION.search(sentence))


def reword(sentence: str) -> str:
    """``sentence`` without a lead-in about its source, when the rest states the fact
    ("According to passage 4, tar reads ..." -> "Tar reads ..."); unchanged otherwise.

    Example:
        >>> reword("Passage 2 explains that -L makes curl follow redirects.")
        '-L makes curl follow redirects.'
        >>> reword("Passage 3 provides an example.")
        'Passage 3 provides an example.'
    """
    for lead_in in _LEAD_INS:
        match = lead_in.match(sentence)
        if match is None:
            continue
        rest = sentence[match.end() :]
        if len(rest.split()) < 3 or narrates(rest):
            return sentence
        return rest[0].upper() + rest[1:] if rest[0].isalpha() else rest
    return sentence


@dataclass(frozen=True)
class Tidied:
    """The sentences kept, those removed with the reason (``narrates``, ``heading``,
    ``leans``, ``dangling``, ``repeat``, ``instruction``), and the leaning sentences that their
    passage's own sentence replaced in ``kept`` (as written, the quotation)."""

    kept: tuple[Citation, ...]
    removed: tuple[tuple[Citation, str], ...] = ()
    replaced: tuple[tuple[Citation, Citation], ...] = ()

    def notes(self) -> tuple[str, ...]:
        """One line per reason, naming the sentences removed for it."""
        why = {
            "narrates": "talk about the passages instead of the subject",
            "leans": "lean on a sentence that was dropped or is about another document",
            "dangling": "introduce something that was dropped",
            "repeat": "repeat an earlier sentence",
            "heading": "are a document's heading, not a statement",
            "instruction": "address the model (instructions copied from a document)",
        }
        lines = []
        for reason, words in why.items():
            texts = [c.text for c, r in self.removed if r == reason]
            if texts:
                lines.append(
                    f"{len(texts)} sentence(s) that {words} were dropped from the answer: "
                    + "; ".join(repr(t) for t in texts)
                )
        if self.replaced:
            lines.append(
                f"{len(self.replaced)} sentence(s) that lean on a sentence that was dropped were "
                "replaced by their passage's own sentence, which names its subject, quoted: "
                + "; ".join(repr(c.text) for c, _ in self.replaced)
            )
        return tuple(lines)


def own_sentence(sentence: Citation, passages: Mapping[str, Passage]) -> Citation | None:
    """The passage sentence holding most of ``sentence``'s aligned span, quoted and cited, when
    it opens with no pronoun (it names its subject) and speaks to a reader, not a model; None
    otherwise."""
    check = sentence.check
    if check is None or check.verified != "aligned" or check.span is None:
        return None
    passage = passages.get(check.passage_id or "")
    if passage is None:
        return None
    start, end = check.span
    around = [(a, b) for a, b in sentence_spans(passage.text) if a < end and b > start]
    if not around:
        return None
    # the passage sentence holding most of the span: a span across two sentences would also
    # quote the next one, which the answer may state by itself
    first, last = max(around, key=lambda ab: (min(ab[1], end) - max(ab[0], start), -ab[0]))
    first, last = named_span(passage.text, (first, last))
    if leans(passage.text[first:last]) or addresses_model(passage.text[first:last]):
        return None
    return quotation(passage, (first, last))


def tidy(
    sentences: Sequence[Citation],
    dropped: Sequence[bool],
    documents: Mapping[str, str | None] | None = None,
    passages: Mapping[str, Passage] | None = None,
) -> Tidied:
    """Remove from ``sentences`` (in the answer's order; ``dropped[i]``: the check already
    dropped sentence ``i``) what would not read right once the dropped ones are gone.
    ``documents`` names each passage id's document: a sentence opening with a pronoun that
    cites only other documents than the sentence before it leans on a subject its passages are
    not about ("ServerAliveInterval ... [ssh_config]. This option sets the idle time ...
    [curl]"), and goes. With ``passages`` (id -> passage), a sentence leaning on a dropped one
    is replaced by its passage's own sentence where that names its subject (:func:`own_sentence`).
    Framing sentences (the writer's own) are kept as they are."""
    reasons: dict[int, str] = {}
    swaps: dict[int, Citation] = {}
    gone = list(dropped)
    seen: set[str] = set()
    documents = documents or {}
    before: set[str] = set()  # the documents the last kept sentence cites
    for i, sentence in enumerate(sentences):
        if gone[i] or sentence.framing:
            continue
        mine = {d for p in sentence.passage_ids if (d := documents.get(p)) is not None}
        key = " ".join(sentence.text.lower().split())
        if addresses_model(sentence.text):
            reasons[i] = "instruction"
        elif narrates(sentence.text):
            reasons[i] = "narrates"
        elif is_heading(sentence.text):
            reasons[i] = "heading"
        elif leans(sentence.text) and (
            (i > 0 and gone[i - 1]) or (mine and before and not mine & before)
        ):
            own = own_sentence(sentence, passages) if passages and i > 0 and gone[i - 1] else None
            if own is None or " ".join(own.text.lower().split()) in seen:
                reasons[i] = "leans"
            else:
                swaps[i] = own
                key = " ".join(own.text.lower().split())
        elif key in seen:
            reasons[i] = "repeat"
        if i in reasons:
            gone[i] = True
        else:
            seen.add(key)
            before = mine
    # a colon whose sequel is gone, from the end, so a chain of them goes together
    for i in range(len(sentences) - 1, -1, -1):
        sentence = sentences[i]
        if gone[i] or sentence.framing or not sentence.text.rstrip().endswith(":"):
            continue
        if i + 1 == len(sentences) or gone[i + 1]:
            reasons[i] = "dangling"
            gone[i] = True
    kept = tuple(swaps.get(i, s) for i, s in enumerate(sentences) if not gone[i])
    removed = tuple((sentences[i], reasons[i]) for i in sorted(reasons))
    return Tidied(kept, removed, tuple((sentences[i], swaps[i]) for i in sorted(swaps)))
