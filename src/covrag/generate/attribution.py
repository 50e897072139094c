"""Which documents a sentence names, so a sentence that says "the MPL-2.0 grants ..." is checked
against the MPL-2.0's passages only.

The writer is asked to say which document says what. A small model then copies a passage of one
document and attributes it to another: on covrag's citation benchmark (real licence texts),
Qwen2.5-Coder-1.5B wrote "The MPL-2.0 grants each contributor a ... patent license" over the
Apache License's words, which alignment alone accepts (the words are the passage's). The rule:

    a sentence that names documents of the context is supported only by passages of those
    documents, or by a passage that names them itself (a cross-reference the sentence copies);
    a sentence that names none may be supported by any passage.

A document's names are its title (:func:`~covrag.llm.prompts.document_of`) and its file's name
without the extension (``MPL-2.0.txt`` -> ``MPL-2.0``), matched as whole words, a versioned name
also as prose spells it ("Apache License 2.0" names ``Apache-2.0``; Qwen wrote it over the
GPL's patent clause) and by its letters part alone, in the name's case and with no version
after it ("The GPL also requires that the notice be included ...", which Qwen wrote over the
Apache License's NOTICE clause, names ``GPL-3``; "GPL version 2" does not). A one-word name
without digits or punctuation ("Artistic", "BSD") must match its case as written, so the common
word "artistic" does not name ``Artistic.txt``; other names match in any case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from covrag.llm.prompts import document_of
from covrag.types import Passage

#: Names shorter than this are not looked for (too many false matches).
MIN_NAME = 3


def document_names(passage: Passage) -> tuple[str, ...]:
    """The names a sentence may use for the passage's document: its title, its file's stem."""
    names = []
    title = document_of(passage)
    if title:
        names.append(title)
    for key in ("doc_id", "source"):
        value = passage.metadata.get(key)
        if isinstance(value, str) and value.strip():
            stem = value.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]
            names.append(stem.rsplit(".", 1)[0] if "." in stem[1:] else stem)
    return tuple(dict.fromkeys(n for n in names if len(n) >= MIN_NAME))


_ENDING = re.compile(r"(?:\.\d\w*)?(?:\.(?:txt|md|html?|pdf|rst))?$", re.IGNORECASE)


def bare_name(name: str) -> str:
    """A document's name without its file ending and a manual page's section
    (``ssh_config.5.txt`` and ``ssh_config.5`` -> ``ssh_config``).

    Example:
        >>> bare_name("ssh_config.5.txt"), bare_name("curl")
        ('ssh_config', 'curl')
    """
    return _ENDING.sub("", name, count=1)


# the patterns of a name, built once: every sentence is matched against every document's
# names, in the citation check and in the benchmark's misattribution count
@lru_cache(maxsize=4096)
def _pattern(name: str) -> re.Pattern[str]:
    words = name.split()
    plain = len(words) == 1 and name.isalpha()
    body = r"\s+".join(re.escape(w) for w in words)
    return re.compile(rf"(?<![\w-]){body}(?![\w-])", 0 if plain else re.IGNORECASE)


# A name of a letters part and a version ("Apache-2.0", "GPL-3", "LGPL-2.1").
_VERSIONED = re.compile(r"([A-Za-z]{2,})[-_ ]?v?(\d+(?:\.\d+)*)")


@lru_cache(maxsize=4096)
def _spelled(name: str) -> re.Pattern[str] | None:
    """A versioned name as prose writes it: its letters part, up to three words, the version
    ("Apache License 2.0", "Apache License, Version 2.0", "GNU GPL version 3", "GPLv3" for
    ``Apache-2.0`` and ``GPL-3``); None for a name without a version."""
    found = _VERSIONED.fullmatch(name)
    if found is None:
        return None
    head, version = (re.escape(part) for part in found.groups())
    between = r"(?:[\s,-]+[A-Za-z]+){0,3}?[\s,-]+(?:v|version\s+)?"
    ending = r"(?:\.0)*(?![\d.]*\d)(?![\w-])"  # "GPL 3.0" is GPL-3; "Apache 2.01" no
    return re.compile(rf"(?<![\w-]){head}(?:{between}|v?){version}{ending}", re.IGNORECASE)


@lru_cache(maxsize=4096)
def _unversioned(name: str) -> re.Pattern[str] | None:
    """A versioned name's letters part written alone, as the name writes it ("the GPL" for
    ``GPL-3``, "the Apache License" for ``Apache-2.0``), with no version after it ("GPL
    version 2" names another document); None for a name without a version, or whose letters
    part is shorter than :data:`MIN_NAME`. A version within three words after it ("Apache
    License 2.01") makes it another document's name."""
    found = _VERSIONED.fullmatch(name)
    if found is None or len(found.group(1)) < MIN_NAME:
        return None
    head = re.escape(found.group(1))
    version = r"(?:[\s,-]+[A-Za-z]+){0,3}?[\s,-]*(?:v|version\s*)?\d"  # as in _spelled
    return re.compile(rf"(?<![\w-]){head}(?![\w-])(?!{version})")


def writes_name(text: str, name: str) -> bool:
    """Whether ``text`` names a document by ``name`` (one of :func:`document_names`): the name
    as a whole word, a versioned name spelled out, or its letters part alone.

    Example:
        >>> writes_name("The GPL requires the notice.", "GPL-3")
        True
        >>> writes_name("GPL version 2 requires it.", "GPL-3"), writes_name("the LGPL", "GPL-3")
        (False, False)
    """
    if _pattern(name).search(text):
        return True
    spelled = _spelled(name)
    if spelled is not None and spelled.search(text) is not None:
        return True
    alone = _unversioned(name)
    return alone is not None and alone.search(text) is not None


def named_documents(sentence: str, passages: Iterable[Passage]) -> frozenset[str]:
    """The documents (by :func:`~covrag.llm.prompts.document_of`) of ``passages`` that
    ``sentence`` names."""
    names: dict[str, tuple[str, ...]] = {}  # document -> its names, from its first passage
    for passage in passages:
        document = document_of(passage)
        if document is not None and document not in names:
            names[document] = document_names(passage)
    return frozenset(d for d, ns in names.items() if any(writes_name(sentence, n) for n in ns))


def candidates(sentence: str, passages: Sequence[Passage]) -> tuple[Passage, ...]:
    """The passages that may support ``sentence``: those of the documents it names, or all of
    them when it names none. A passage that itself names every document the sentence names
    stays a candidate: the sentence may copy its cross-reference (ssh_config's text says "ssh(1)
    will send a message ..."; a sentence copying it names ssh, and ssh_config's passage still
    holds it)."""
    named = named_documents(sentence, passages)
    if not named:
        return tuple(passages)
    return tuple(
        p for p in passages if document_of(p) in named or named <= named_documents(p.text, passages)
    )
