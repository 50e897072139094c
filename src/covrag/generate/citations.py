"""Parse a generated answer into sentences and the passages each one cites.

The writer numbers the passages ``[1]`` ... ``[k]`` in its prompt and asks for every factual
sentence to end with the numbers of its supporting passages. The reply is free text, so parsing is
forgiving about form (list markers, markdown emphasis, ``[1, 3]``, ``[1][3]``, ``[2-4]``, a
citation placed after the full stop) and strict about substance: a number that names no passage is
never mapped to a passage id; it is kept in :attr:`ParsedAnswer.invalid` so callers report it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from covrag.text import split_sentences as sentences_of
from covrag.types import Answer, Citation

# A bracket that holds only numbers: [3], [1, 2], [1; 4], [2-4], [2–4]; or the numbers after
# "Passage(s)" or "Source(s)", as a small model writes them too: [Passages 1, 4, 5].
_BRACKET = re.compile(
    r"\[\s*(?:(?:passages?|sources?)\s*)?(\d+(?:\s*(?:[,;]|-|–|and)\s*\d+)*)\s*\]",
    re.IGNORECASE,
)
_RANGE = re.compile(r"(\d+)\s*[-–]\s*(\d+)")
_LIST_MARKER = re.compile(r"^\s*(?:[-*•]+|\d+[.)]|#+)\s+")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_ONLY_CITATIONS = re.compile(r"^(?:\s*\[[^\]]*\]\s*)+[.!?]?\s*$")
# Ranges longer than this are not expanded (a typo such as [1-999] is reported instead).
_MAX_RANGE = 50


@dataclass(frozen=True, slots=True)
class InvalidCitation:
    """A citation number that names no passage of the context.

    Attributes:
        sentence: Index of the sentence (0-based) in the parsed answer.
        number: The number as the model wrote it.
    """

    sentence: int
    number: int


@dataclass(frozen=True)
class ParsedAnswer:
    """A parsed answer.

    Attributes:
        answer: The sentences with the passage ids they validly cite.
        invalid: Citations of passages that do not exist (never mapped to an id).
        uncited: Indexes of sentences that cite nothing valid (the writer's framing aside).
        repeated: Sentences dropped because they repeat an earlier one word for word (a small
            model at temperature 0 can loop on a sentence until its token limit); their
            citations go to the first occurrence.
    """

    answer: Answer
    invalid: tuple[InvalidCitation, ...] = ()
    repeated: int = 0

    @property
    def uncited(self) -> tuple[int, ...]:
        sentences = self.answer.sentences
        return tuple(i for i, s in enumerate(sentences) if not s.passage_ids and not s.framing)

    @property
    def cited_passage_ids(self) -> tuple[str, ...]:
        """Every passage id cited at least once, in order of first citation."""
        seen = dict.fromkeys(p for s in self.answer.sentences for p in s.passage_ids)
        return tuple(seen)


def _numbers(inner: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"\s*(?:[,;]|and)\s*", inner):
        match = _RANGE.fullmatch(part.strip())
        if match:
            low, high = int(match.group(1)), int(match.group(2))
            if low <= high and high - low <= _MAX_RANGE:
                numbers.extend(range(low, high + 1))
                continue
            numbers.extend([low, high])
        elif part.strip().isdigit():
            numbers.append(int(part))
    return numbers


def split_sentences(text: str) -> list[str]:
    """Split an answer into sentences: by line, then at sentence ends; list markers removed.

    Sentence ends are those of :func:`covrag.text.split_sentences`. A piece that holds only
    citations (``[2].`` after a full stop) is joined to the sentence before it, so it cites for
    that sentence.
    """
    pieces: list[str] = []
    for line in text.splitlines():
        line = _EMPHASIS.sub("", _LIST_MARKER.sub("", line)).strip()
        if not line:
            continue
        for piece in sentences_of(line):
            if pieces and _ONLY_CITATIONS.match(piece):
                pieces[-1] = f"{pieces[-1]} {piece}"
            else:
                pieces.append(piece)
    return pieces


def _clean(sentence: str) -> str:
    """``sentence`` without its citation brackets and the spaces they leave ("money [2]." ->
    "money."; "money. [2]." -> "money."); nothing else is respaced, so a command keeps its
    words ("find . -mtime -7", "cd ..")."""
    brackets = rf"(?:\s*{_BRACKET.pattern})+"
    text = re.sub(rf"([.!?]){brackets}\s*\.", r"\1", sentence, flags=re.IGNORECASE)
    text = re.sub(rf"{brackets}(?:\s+(?=[.,;:!?]))?", "", text, flags=re.IGNORECASE)
    return re.sub(r"\s{2,}", " ", text).strip()


def parse_citations(text: str, passage_ids: Sequence[str]) -> ParsedAnswer:
    """Sentences of ``text`` with the passages they cite; ``[n]`` names ``passage_ids[n - 1]``.

    Args:
        text: The model's answer.
        passage_ids: The passages in the order they were numbered in the prompt.

    Returns:
        The parsed answer. Sentences keep their wording without the citation brackets; a
        sentence citing one passage twice lists it once. Numbers outside ``1..len(passage_ids)``
        are reported in ``invalid`` and dropped from the sentence's ids. A sentence that repeats
        an earlier one (same words, any case or spacing) is dropped and counted in ``repeated``.

    Example:
        >>> text = "Uniforms cut bullying [1]. They cost money [2, 7]."
        >>> parsed = parse_citations(text, ["a", "b"])
        >>> [(s.text, s.passage_ids) for s in parsed.answer.sentences]
        [('Uniforms cut bullying.', ('a',)), ('They cost money.', ('b',))]
        >>> parsed.invalid
        (InvalidCitation(sentence=1, number=7),)
    """
    sentences: list[Citation] = []
    invalid: list[InvalidCitation] = []
    # Citations before any sentence (a reply that opens with "[1]") go to the first sentence.
    pending: dict[str, None] = {}
    first: dict[str, int] = {}  # normalised sentence -> its index
    repeated = 0
    for piece in split_sentences(text):
        cited = dict(pending)
        index = len(sentences)
        for match in _BRACKET.finditer(piece):
            for number in _numbers(match.group(1)):
                if 1 <= number <= len(passage_ids):
                    cited[passage_ids[number - 1]] = None
                else:
                    invalid.append(InvalidCitation(index, number))
        cleaned = _clean(piece)
        if not any(c.isalnum() for c in cleaned):
            pending = cited
            continue
        pending = {}
        key = " ".join(cleaned.lower().split())
        if key in first:
            at = first[key]
            merged = dict.fromkeys((*sentences[at].passage_ids, *cited))
            sentences[at] = dataclasses.replace(sentences[at], passage_ids=tuple(merged))
            repeated += 1
            continue
        first[key] = len(sentences)
        sentences.append(Citation(cleaned, tuple(cited)))
    return ParsedAnswer(Answer(tuple(sentences)), tuple(invalid), repeated)


def number_of(passage_ids: Sequence[str]) -> dict[str, int]:
    """Passage id -> the 1-based number it has in the prompt."""
    return {pid: i for i, pid in enumerate(passage_ids, start=1)}


def render_answer(answer: Answer, passage_ids: Sequence[str]) -> str:
    """The answer as text with ``[n]`` citations again (for critique and rewrite prompts),
    without the writer's framing sentences."""
    numbers = number_of(passage_ids)
    lines = []
    for sentence in answer.sentences:
        if sentence.framing:  # the writer's own words, not the model's: never shown back
            continue
        marks = "".join(f"[{numbers[p]}]" for p in sentence.passage_ids if p in numbers)
        body = sentence.text
        if marks:
            stop = body[-1] if body and body[-1] in ".!?" else ""
            body = f"{body[:-1] if stop else body} {marks}{stop}"
        lines.append(body)
    return "\n".join(lines)
