"""The passages that define what the pool's best passages name: a manual's cross-references.

Reference documentation points from one entry to another: ssh_config(5)'s ``TCPKeepAlive``
entry says "you probably want the ServerAliveInterval option", and the entry that answers the
question ("ServerAliveInterval Sets a timeout interval in seconds ...") is words apart from it
and from the question, so no search for the question or its sub-questions finds it (the answer
benchmark's SSH question, docs/experiments/36-flat-relevance.md). :func:`with_definitions`
follows such pointers: for each identifier that the pool's first passages name (a config key
written in CamelCase such as ``ServerAliveInterval``, a long option such as ``--json``, a
``snake_case`` function or constant) and that no pooled passage defines, the passage of the
*same document* that defines it (a paragraph of it opens with the identifier) joins the pool,
after the passages retrieved. Another document's entry of the same name is never taken: two
tools' options share names (curl's and ssh's keepalives). Which passages reach the context is
still the selector's choice. A passage that joined this way carries the name it defines in
its metadata (:data:`DEFINES`), and ``ask``'s run file lists them (``retrieval.definitions``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from covrag.types import DEFINES, Passage

#: A config key with an inner capital (``ServerAliveInterval``, ``TCPKeepAlive``), a long
#: option (``--keepalive-time``), or a name with an underscore (``copy_file``, ``Z_STREAM_END``).
IDENTIFIER = re.compile(
    r"(?<![\w-])(?:"
    r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*"
    r"|--[a-z0-9][a-z0-9-]*[a-z0-9]"
    r"|[A-Za-z][A-Za-z0-9]*_[A-Za-z0-9_]*[A-Za-z0-9]"
    r")(?![\w-])"
)
#: How many of the pool's passages are read for identifiers (``ask`` reads those nearest the
#: question).
TOP = 5
#: How many definitions join the pool at most.
MOST = 4


def identifiers(text: str) -> list[str]:
    """The identifiers ``text`` names, in order of first mention, each once.

    Example:
        >>> identifiers("You probably want the ServerAliveInterval option; see --json.")
        ['ServerAliveInterval', '--json']
    """
    return list(dict.fromkeys(IDENTIFIER.findall(text)))


#: Other spellings an entry may list before the name: ``-q, --quiet`` (``-o file, --output``).
_ALIASES = r"(?:-{1,2}[\w-]+(?:[ =][<\[]?[\w-]+[>\]]?)?,\s*)*"


def defines(passage: Passage, identifier: str) -> bool:
    """Whether a paragraph of ``passage`` opens with ``identifier`` (then a space, a bracket,
    ``=``, ``,`` or its end), or with a list of other spellings of an option and then it
    (``-q, --quiet, --silent``): the shape of a manual's or an API reference's entry."""
    pattern = rf"(?:^|\n\s*\n)[ \t]*{_ALIASES}{re.escape(identifier)}(?=[\s(\[=,<]|$)"
    return re.search(pattern, passage.text) is not None


def document(passage: Passage) -> str:
    """The document a passage was cut from: its ``source``, else its id before ``#``."""
    source = passage.metadata.get("source")
    return source if isinstance(source, str) and source else passage.id.split("#", 1)[0]


def with_definitions(
    pool: Sequence[Passage],
    corpus: Iterable[Passage],
    *,
    read: Sequence[Passage] | None = None,
    most: int = MOST,
) -> tuple[Passage, ...]:
    """``pool`` followed by the definitions that the passages ``read`` (default: the pool's
    first :data:`TOP`) point to (module docs), at most ``most``, in the order the identifiers
    are first named there."""
    if most <= 0 or not pool:
        return tuple(pool)
    wanted: dict[tuple[str, str], None] = {}
    defined: dict[str, bool] = {}  # name -> whether a pooled passage defines it
    for passage in pool[:TOP] if read is None else read:
        for name in identifiers(passage.text):
            if name not in defined:
                defined[name] = any(defines(p, name) for p in pool)
            if not defined[name]:
                wanted[(document(passage), name)] = None
    if not wanted:
        return tuple(pool)
    have = {p.id for p in pool}
    sources = {source for source, _ in wanted}
    by_document: dict[str, list[Passage]] = {}  # the wanted documents' passages only
    for passage in corpus:
        if (source := document(passage)) in sources:
            by_document.setdefault(source, []).append(passage)
    added: list[Passage] = []
    for source, name in wanted:
        found = next(
            (p for p in by_document.get(source, ()) if p.id not in have and defines(p, name)),
            None,
        )
        if found is not None:
            added.append(replace(found, metadata={**found.metadata, DEFINES: name}))
            have.add(found.id)
            if len(added) == most:
                break
    return (*pool, *added)
