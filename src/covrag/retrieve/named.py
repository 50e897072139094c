"""The passages that write what a question names, when the retrieved pool has none of them.

The name filter (:mod:`covrag.selectors.floor`) refuses a question about something no pooled
passage writes ("TOML", "LZMA2", "HTTP/2"): the documents do not cover it. The pool is 50
passages of a corpus, though, and a name the question mentions in passing can be written only
where the searches did not reach: on seven pages of the Node.js reference, "I spawn() a tool
... crashes with an unhandled 'error' event (spawn ENOENT)" was refused because no pooled
passage wrote ENOENT, which child_process's and fs's pages both write. :func:`with_named` adds,
for each such name, the corpus passages that write it (at most ``most`` a name, those sharing
most of the question's words first), so that the filter refuses only what the corpus does not
write.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from covrag.text import content_words, name_core, subject_names, writes
from covrag.types import Passage

#: Passages added for one name at most.
MOST = 2


def with_named(
    pool: Sequence[Passage], corpus: Iterable[Passage], question: str, *, most: int = MOST
) -> tuple[Passage, ...]:
    """``pool`` followed by, for each name of ``question`` (:func:`covrag.text.subject_names`)
    that no passage of ``pool`` writes, at most ``most`` passages of ``corpus`` that write it,
    those sharing the most content words with the question first (then in corpus order)."""
    missing = [
        n for n in subject_names(question) if not any(writes(p.text, n, loose=True) for p in pool)
    ]
    if not missing or most <= 0:
        return tuple(pool)
    have = {p.id for p in pool}
    asked = content_words(question)
    cores = {n: name_core(n) for n in missing}
    found: dict[str, list[tuple[int, int, Passage]]] = {n: [] for n in missing}
    for order, passage in enumerate(corpus):
        if passage.id in have:
            continue
        lowered = passage.text.lower()
        for name in missing:
            # a passage that does not hold the name's letters cannot write it: the regex of
            # writes() runs only on the few that do (a refused question scans the whole corpus)
            if cores[name] in lowered and writes(passage.text, name, loose=True):
                shared = len(asked & content_words(passage.text))
                found[name].append((-shared, order, passage))
    added: dict[str, Passage] = {}
    for name in missing:
        for _, _, passage in sorted(found[name], key=lambda row: row[:2])[:most]:
            added.setdefault(passage.id, passage)
    return (*pool, *added.values())
