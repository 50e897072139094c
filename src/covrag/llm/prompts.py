"""How prompts show passages: numbered ``[1]``, ``[2]``..., each cut to a number of words.

The writer, the critic and the answer judge share this form, so a model reads passages the same way
whichever stage asks. A passage cut from a user's document (``covrag index --docs``) is shown
with the document's title (or, with none, its file name), so that an answer drawn from several
documents can say which document says what.
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


def document_of(passage: Passage) -> str | None:
    """The name of the document a passage was cut from: its title, else its file's name."""
    title = passage.metadata.get("title")
    if isinstance(title, str) and title.strip():
        return " ".join(title.split())
    source = passage.metadata.get("source")
    if isinstance(source, str) and source.strip():
        return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
    return None


def documents_of(passages: Sequence[Passage]) -> tuple[str, ...]:
    """The distinct documents the passages come from, in order of first passage."""
    return tuple(dict.fromkeys(d for p in passages if (d := document_of(p)) is not None))


def passage_line(number: int, passage: Passage, max_words: int | None) -> str:
    """One passage as the prompts show it: ``[n] (from "Title") text``."""
    document = document_of(passage)
    origin = f'(from "{document}") ' if document is not None else ""
    return f"[{number}] {origin}{truncate_words(passage.text, max_words)}"


def passages_block(passages: Sequence[Passage], max_words: int | None) -> str:
    """The numbered passages as the prompts show them."""
    return "\n".join(passage_line(i, p, max_words) for i, p in enumerate(passages, start=1))


def documents_rule(passages: Sequence[Passage]) -> str:
    """The writer's instruction to name documents, when the passages come from more than one
    (empty otherwise)."""
    if len(documents_of(passages)) < 2:
        return ""
    return (
        "The passages come from different documents, named before each passage. A fact belongs "
        "to the program or document whose passage states it: where it matters, say which one it "
        'belongs to (for example "In ssh_config, ..." or "curl\'s -L option ..."), never give '
        "one document's option or rule to another's subject, and still cite the passage numbers."
    )
