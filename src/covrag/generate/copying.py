"""Whether a sentence copies a passage: the normalised longest common substring.

A sentence *copies* a passage when the longest run of characters the two share, after both are
normalised (lower case, every run of non-alphanumerics one space), covers at least
:data:`COPY_THRESHOLD` of the sentence:

    copy(s, p) = |LCS_substring(norm(s), norm(p))| / |norm(s)|  >=  0.9

So a passage sentence quoted whole, or with a word changed at one end, is a copy; a paraphrase
is not. A sentence that puts a copied run in quotation marks behind a short attribution
(``One source says: "..."``, the synthesising writer's fallback) is a copy too: the share is
also taken of the quoted span alone, when that span is most of the sentence.

The *copy rate* of an answer is the share of its sentences that copy some passage of its context
(``covrag eval-answers`` reports it; the synthesising writer rejects such sentences).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

COPY_THRESHOLD = 0.9
_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalise(text: str) -> str:
    """Lower case, every run of characters other than letters and digits one space."""
    return _NON_WORD.sub(" ", text.lower()).strip()


_QUOTED = re.compile(r'["\u201c]([^"\u201c\u201d]+)["\u201d]')


def copied_share(sentence: str, passage: str) -> float:
    """The share of ``sentence`` (normalised) that is one run of ``passage`` (normalised); for a
    sentence that is mostly one quoted span, the larger of that and the span's own share."""
    return max(_share(span, normalise(passage)) for span in _spans(sentence))


def _spans(sentence: str) -> list[str]:
    """The normalised sentence, and its longest quoted span when that is most of the sentence."""
    whole = normalise(sentence)
    quoted = normalise(max(_QUOTED.findall(sentence), key=len, default=""))
    return [whole, quoted] if quoted and len(quoted) >= 0.5 * len(whole) else [whole]


def _share(a: str, b: str) -> float:
    """The share of normalised ``a`` that is one run of normalised ``b``."""
    if not a or not b:
        return 0.0
    match = SequenceMatcher(None, a, b, autojunk=False).find_longest_match(0, len(a), 0, len(b))
    return match.size / len(a)


def copies(sentence: str, passages: Sequence[str], threshold: float = COPY_THRESHOLD) -> bool:
    """Whether ``sentence`` copies one of ``passages`` (see the module docstring).

    Example:
        >>> copies("Uniforms reduce bullying.", ["Uniforms reduce bullying because..."])
        True
        >>> copies("Fewer pupils are bullied when all dress alike.", ["Uniforms reduce bullying."])
        False
    """
    spans = _spans(sentence)  # the sentence is normalised once, each passage once
    return any(
        _share(span, text) >= threshold for text in map(normalise, passages) for span in spans
    )
