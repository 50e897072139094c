"""How prompts show passages: numbered ``[1]``, ``[2]``..., each cut to a number of words.

The writer, the critic and the answer judge share this form, so a model reads passages the same way
whichever stage asks.
"""

from __future__ import annotations

from collections.abc import Sequence

from covrag.types import Passage


def truncate_words(text: str, max_words: int | None) -> str:
    """The first ``max_words`` words of ``text`` (all of it when None), with ``...`` when cut."""
    if max_words is None:
        return text.strip()
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    return " ".join(words[:max_words]) + " ..."


def passages_block(passages: Sequence[Passage], max_words: int | None) -> str:
    """The numbered passages as the prompts show them."""
    return "\n".join(
        f"[{i}] {truncate_words(p.text, max_words)}" for i, p in enumerate(passages, start=1)
    )
