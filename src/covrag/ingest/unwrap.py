"""Hard-wrapped text as flowing paragraphs, with a map back to the original characters.

Plain text broken at ~72 characters (licences, READMEs, mail) and the text a PDF parser returns
(a line break at the end of every printed line) would otherwise give passages that keep those
breaks, and a chunker that prefers a line break to a sentence end starts passages mid-sentence.
:func:`unwrap` joins the lines of a paragraph: a single line break between two non-blank lines,
with the spaces and tabs around it, becomes one space; other blanks at the ends of lines go; a
word hyphenated at a line end is joined (the typesetter's U+2010 or soft hyphen goes with the
break, an ASCII hyphen stays: ``re\u2010\\n ceived`` -> ``received``, ``command-\\n line`` ->
``command-line``). A blank line (a paragraph break) stays, and so does a line break before a
table row (``|``) or a list item (``-``, ``*``, ``+``, ``•``, ``1.``, ``2)``, ``(a)``,
``(iv)``), so that tables and lists keep one row or item a line. What the reader marked
verbatim (``keep``: an HTML ``<pre>`` block, a Markdown code block,
:attr:`~covrag.ingest.readers.Document.verbatim`) stays as written, line breaks and indentation
included, and so do the line breaks at its edges: joined into one line, a code example's line
comment (``// Each line ...``) ran over the code after it. Code in plain text (a man page's
indented example) cannot be told from prose and is joined.

The passages keep exact offsets into the document's own text (:attr:`Document.text`, which is
not changed): a passage's ``start`` and ``end`` span its content in the original text, and
``unwrap(document.text[start:end], keep) == passage.text`` (``keep``: the document's verbatim
spans, shifted by ``start``).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

#: A line break inside a paragraph, with the blanks around it (a non-blank character before it,
#: a line that is neither blank, nor a table row, nor a list item after it); else the blanks
#: that end or start a line.
# A marker counts as one whatever blank follows it, or none at the end of the text, so a passage
# cut right after a marker unwraps as the document around it does.
_END = r"(?:[ \t]|\r?\n|$)"
_ITEM = (
    rf"[|]|[-*+\u2022\u2023\u25e6\u25aa\u2013]{_END}|\d{{1,3}}[.)]{_END}"
    rf"|\([a-zA-Z0-9]{{1,4}}\){_END}"
)
# A word a typesetter broke at a line end: a letter, then a hyphen (U+2010 or a soft hyphen,
# which only ever mark such a break, or an ASCII one, which may also be the word's own), the
# line break, and a lower-case letter. The typesetter's hyphen goes with the break
# ("re\u2010\n   ceived" -> "received"); an ASCII hyphen stays ("command-\n   line" ->
# "command-line"), since the text alone cannot tell a broken word from a compound.
_LETTER = r"[^\W\d_]"
_BROKEN = (
    rf"(?P<soft>(?<={_LETTER})[\u2010\u00ad][ \t]*\r?\n[ \t]*(?=[a-z\u00df-\u00ff]))"
    rf"|(?P<hard>(?<={_LETTER}-)[ \t]*\r?\n[ \t]*(?=[a-z\u00df-\u00ff]))"
)
_TIDY = re.compile(
    rf"{_BROKEN}"
    rf"|(?P<join>(?<=\S)[ \t]*\r?\n[ \t]*(?=\S)(?!{_ITEM}))|[ \t]+(?=\r?\n)|(?<=\n)[ \t]+"
)


def unwrap(text: str, keep: Sequence[tuple[int, int]] = ()) -> str:
    """``text`` with the line breaks inside its paragraphs made single spaces and the blanks
    at the ends of lines removed; the ``[start, end)`` spans of ``keep`` and the line breaks at
    their edges stay as written.

    Example:
        >>> unwrap("Tea is an old\\n  drink.\\n\\n  - green\\n  - black")
        'Tea is an old drink.\\n\\n- green\\n- black'
        >>> unwrap("Run:\\nf()  // once\\n  g()", keep=[(5, 23)])
        'Run:\\nf()  // once\\n  g()'
    """
    return Unwrapped.of(text, keep).text


def _merged(spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` sorted, with those that overlap or touch made one (a ``<pre>`` inside another).

    Example:
        >>> _merged([(8, 9), (0, 5), (2, 3), (5, 6)])
        [(0, 6), (8, 9)]
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _kept(match: re.Match[str], keep: Sequence[tuple[int, int]], starts: list[int]) -> bool:
    """Whether ``match`` lies in or touches a span of ``keep`` (:func:`_merged`)."""
    i = bisect.bisect_right(starts, match.end()) - 1
    return i >= 0 and match.start() <= keep[i][1]


@dataclass(frozen=True)
class Unwrapped:
    """A text unwrapped, and where each of its pieces lies in the original.

    Attributes:
        text: :func:`unwrap` of the original.
        starts: Start in ``text`` of each piece (sorted; the first is 0).
        origins: Start in the original of the same piece. A piece is either a stretch copied
            as it is or the one space that replaced a line break (removed blanks have none).
    """

    text: str
    starts: tuple[int, ...]
    origins: tuple[int, ...]

    @classmethod
    def of(cls, original: str, keep: Sequence[tuple[int, int]] = ()) -> Unwrapped:
        """Unwrap ``original`` (the spans of ``keep`` as written: :func:`unwrap`) and keep the
        map."""
        parts: list[str] = []
        starts: list[int] = []
        origins: list[int] = []
        at = last = 0
        kept = _merged(keep)
        kept_starts = [start for start, _ in kept]
        for match in _TIDY.finditer(original):
            if kept and _kept(match, kept, kept_starts):
                continue
            copied = original[last : match.start()]
            if copied:
                starts.append(at)
                origins.append(last)
                parts.append(copied)
                at += len(copied)
            if match.group("join"):
                starts.append(at)
                origins.append(match.start())
                parts.append(" ")
                at += 1
            last = match.end()
        starts.append(at)
        origins.append(last)
        parts.append(original[last:])
        return cls("".join(parts), tuple(starts), tuple(origins))

    def original(self, offset: int) -> int:
        """The original offset of the character at ``offset`` of :attr:`text`."""
        piece = bisect.bisect_right(self.starts, offset) - 1
        return self.origins[piece] + offset - self.starts[piece]

    def span(self, start: int, end: int) -> tuple[int, int]:
        """The original span of ``text[start:end]`` (a non-empty span)."""
        return self.original(start), self.original(end - 1) + 1
