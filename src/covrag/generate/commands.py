"""A command line the answer composes from documented options: supported option by option.

A how-to answer's most useful sentence is a command (``find . -mtime -7 -type f -exec grep -l
TODO {} +``), and no manual writes that line: alignment (:mod:`covrag.generate.alignment`)
finds no passage holding it, so the check dropped it and the answer kept quotations about
neighbouring options instead (the answer benchmark's find, curl and pip questions,
docs/experiments/36-flat-relevance.md). :func:`composed` checks such a sentence the way a
reader checks it against the manuals: the sentence is a command line (its first word a
program), the context holds a document of each program it runs (a document named after it or
a part of it: ``find.1.txt``; ``git-stash.1.txt`` for ``git``), and every option it passes
(``-mtime``, ``--exclude``; a value after ``=`` aside; each of combined short options such as
``-czvf`` when no passage writes them together) is written, as a word, in a context
passage of one of those documents. The sentence then cites those passages, verified
``composed``; an option that no such passage writes leaves it unsupported. What the check does
not verify, and says by the name ``composed``: that the options combine as the command does.
"""

from __future__ import annotations

import dataclasses
import re
import shlex
from collections.abc import Sequence

from covrag.llm.prompts import document_of
from covrag.text import STOPWORDS
from covrag.types import Citation, Passage, SupportCheck

#: A program's name as a command line's first word.
_PROGRAM = re.compile(r"^[a-z][a-z0-9_+-]*$")
#: An option word (``-L``, ``--json``, ``--exclude=PATTERN``): the part before ``=``.
OPTION_WORD = re.compile(r"^(--?[A-Za-z][A-Za-z0-9-]*)(?:=.*)?$")
#: Words after which a command line runs another program.
RUNS = {"|", "||", "&&", ";", "-exec", "-execdir", "-ok", "xargs", "sudo", "env"}
#: Quotes, backticks and closing punctuation around a command written as a sentence.
_WRAP = "`'\"\u201c\u201d\u2018\u2019 "


def command_words(text: str) -> list[str] | None:
    """The words of ``text`` when it is a command line (its first word a program's name: lower
    case, no path; at most one of its words a function word such as "with" or "the": "tar can
    leave files out with --exclude" is prose, whose claim no option checks), else None; a
    leading ``$`` prompt and wrapping quotes are dropped.

    Example:
        >>> command_words("`curl -L --json '{\\"a\\": 1}' https://example.com`")
        ['curl', '-L', '--json', '{"a": 1}', 'https://example.com']
        >>> command_words("Use curl to follow redirects.") is None
        True
    """
    line = text.strip().rstrip(".:;").strip(_WRAP)
    line = line[1:].lstrip() if line.startswith("$") else line
    try:
        words = shlex.split(line, posix=True)
    except ValueError:
        return None
    if not words:
        return None
    first = words[0].rstrip(".")
    if not _PROGRAM.match(first) or len(words) < 2:
        return None
    if sum(w.lower() in STOPWORDS for w in words) > 1:
        return None
    return [first, *words[1:]]


def _programs(words: Sequence[str]) -> list[str]:
    """The programs the command runs: its first word, and each word after ``|``, ``-exec``,
    ``xargs`` and the like."""
    starts = [0] + [i + 1 for i, w in enumerate(words) if w in RUNS and i + 1 < len(words)]
    names = [words[i].rstrip(".") for i in starts]
    return [n for n in names if _PROGRAM.match(n)]


def documents_program(program: str, name: str | None) -> bool:
    """Whether a document named ``name`` documents ``program``: named after it (``find``), or
    after a part of it (``git-stash``, ``ssh_config``, ``pip-user-guide``)."""
    return name is not None and (name == program or name.startswith((f"{program}-", f"{program}_")))


def program_named(document: str | None) -> str | None:
    """The program a document is named after: ``find.1.txt`` -> ``find``."""
    return document.split(".", 1)[0].lower() if document else None


def program_of(passage: Passage) -> str | None:
    """The program a passage's document is named after (:func:`program_named`)."""
    return program_named(document_of(passage))


def split(option: str) -> list[str]:
    """``option``, or the short options it combines (``-czvf`` -> ``-c``, ``-z``, ``-v``,
    ``-f``: one dash and two to five letters)."""
    letters = option[1:]
    if option.startswith("--") or not 1 < len(letters) <= 5 or not letters.isalpha():
        return [option]
    return [f"-{c}" for c in letters]


def option_at(text: str, option: str) -> re.Match[str] | None:
    """Where ``text`` writes ``option`` as written, as a whole option (``-z`` not in ``-zip``)."""
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text)


def composed(sentence: Citation, passages: Sequence[Passage]) -> Citation | None:
    """``sentence`` checked as a command line composed of documented options (module docs):
    citing the passages that write its options, verified ``composed``; None when it is not a
    command line, a program's document is not in the context, or an option is not written."""
    words = command_words(sentence.text)
    if words is None:
        return None
    documented = {p.id: program_of(p) for p in passages}
    programs = _programs(words)
    if not all(any(documents_program(g, d) for d in documented.values()) for g in programs):
        return None  # a program the context has no document of
    own = [p for p in passages if any(documents_program(g, documented[p.id]) for g in programs)]
    options = list(dict.fromkeys(m.group(1) for w in words if (m := OPTION_WORD.match(w))))
    if not options:
        return None
    cited: list[Passage] = []
    for option in options:
        parts = [option] if any(option_at(p.text, option) for p in own) else split(option)
        for part in parts:
            holder = next((p for p in own if option_at(p.text, part)), None)
            if holder is None:
                return None
            if holder not in cited:
                cited.append(holder)
    first = cited[0]
    match = next(m for o in (*options, *split(options[0])) if (m := option_at(first.text, o)))
    check = SupportCheck(
        sentence.passage_ids, "composed", 1.0, first.id, (match.start(), match.end())
    )
    return dataclasses.replace(sentence, passage_ids=tuple(p.id for p in cited), check=check)
