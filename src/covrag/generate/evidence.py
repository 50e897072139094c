"""Evidence for what a draft names: the entries that define its options and settings.

A small writer answers a how-to question from what it knows. Asked which files under a project
changed last week and hold the word TODO, Qwen2.5-Coder-1.5B wrote ``find . -mtime -7 -type f
-exec grep -l "TODO" {} +``, a right answer, but the context held find's ``-atime`` and
``-ctime`` entries, not ``-mtime``'s, and no grep entry for ``-l``: the check found no passage
for the command, and the answer became quotations about neighbouring options (the answer
benchmark's manuals-07). The same draft-first shape, research then revise, is RARR's (Gao et
al., 2023, "RARR: Researching and Revising What Language Models Say, Using Language Models"):
look up evidence for what the draft says, and keep what the evidence holds.

Here the lookup is exact, not a search: for each name a draft writes that no passage of the
context defines, the passage that defines it (a paragraph of it opens with the name,
:func:`covrag.retrieve.definitions.defines`) is looked up in the corpus:

- an option of a command line (:func:`~covrag.generate.commands.command_words`), in a document
  of the program that takes it (``find``'s ``-mtime`` in ``find.1``, ``grep``'s ``-l`` in
  ``grep.1``, never another tool's entry of the same name); combined short options
  (``-czvf``) that no entry defines whole are looked up one by one;
- a module's function a sentence names (``shutil.copytree``), in that module's documents
  (``shutil.txt``), whose entry opens with the function's own name (``copytree(src, dst,
  ...)``);
- an option a sentence names beside a program that has documents ("tar's --exclude", "run grep
  with -q"), in that program's documents only (on the release notes of grep and tar, a sentence
  about tar's ``--exclude`` took grep's entry of the same name before this rule);
- another option, setting or name a sentence names (:func:`~covrag.text.code_names`), in the
  documents of the context, in the context's order, else in the one document of the corpus that
  defines it (none when two do: tools share option names).

An option of a command line that no entry of its program's documents defines (tar's manual
lists ``-f`` under ``--file``) is looked up as written in them, as the check of a command reads
it. At most :data:`MOST` passages join, in the order the draft names them. The citation check then
reads the draft against the context and these passages: the command is checked option by
option, and a sentence no passage holds is replaced by the definition of what it names
(:mod:`covrag.generate.requote`). The writer never sees them; the run file lists them
(``generation.drafts[i].evidence``), and they are numbered after the context where shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence

from covrag.generate.commands import (
    OPTION_WORD,
    RUNS,
    command_words,
    documents_program,
    option_at,
    program_named,
    split,
)
from covrag.llm.prompts import document_of
from covrag.retrieve.definitions import defines
from covrag.text import code_names
from covrag.types import Passage

#: How many passages join a draft's check at most.
MOST = 4


def command_names(words: Sequence[str], programs: bool = False) -> Iterator[tuple[str, str]]:
    """The (program, option) pairs of a command line's words: each option with the program
    whose part of the line passes it (``find ... -exec grep -l``: ``-l`` is grep's); with
    ``programs``, also (program, "") for each program it runs."""
    program = words[0]
    if programs:
        yield program, ""
    for i, word in enumerate(words):
        if i and words[i - 1] in RUNS:
            program = word
            if programs:
                yield program, ""
            continue
        if word in RUNS and word.startswith("-"):  # find's -exec is find's option
            yield program, word
            continue
        match = OPTION_WORD.match(word)
        if match is not None and i:
            yield program, match.group(1)


def wanted(sentences: Sequence[str]) -> list[tuple[str | None, str, tuple[str, ...]]]:
    """The names the sentences write, in order, each once: (program, option, ()) for a command
    line's options; (None, name, programs) for a code name of another sentence, with the
    programs it may belong to: those the draft's command lines run, then the words of its
    sentence (a sentence explaining an option of the command: "the -f option names the
    archive")."""
    lines = [(text, command_words(text)) for text in sentences]
    commands = [words for _, words in lines if words is not None]
    run = [program for words in commands for program, _ in command_names(words, programs=True)]
    passed = {
        part for words in commands for _, o in command_names(words) for part in (o, *split(o))
    }
    found: dict[tuple[str | None, str], tuple[str, ...]] = {}
    for text, words in lines:
        if words is not None:
            for program, option in command_names(words):
                found.setdefault((program, option), ())
            continue
        hints = tuple(dict.fromkeys([*run, *(w.lower() for w in re.findall(r"[\w-]+", text))]))
        for name in code_names(text):
            if "." in name and not name.startswith("-"):  # a module's function: its entry
                module, attribute = _as_written(name, text).rsplit(".", 1)
                found.setdefault((module.split(".")[0].lower(), attribute), ())
            elif name not in passed:  # an option of the draft's command: its program's
                found.setdefault((None, name), hints)
    return [(program, name, hints) for (program, name), hints in found.items()]


def of_programs(programs: Sequence[str], documents: Iterable[str | None]) -> list[str | None]:
    """The ``documents`` named after one of ``programs`` (``tar`` -> ``tar.1``,
    ``tar-NEWS.txt``), in the programs' order, each once."""
    documents = list(documents)
    return list(
        dict.fromkeys(
            d for g in programs if g for d in documents if documents_program(g, program_named(d))
        )
    )


def _as_written(name: str, text: str) -> str:
    """``name`` as ``text`` writes it (code names give dotted names lower-cased)."""
    match = re.search(re.escape(name), text, re.IGNORECASE)
    return match.group(0) if match else name


class Evidence:
    """Looks up the definitions a draft needs (module docs) in a corpus.

    Args:
        corpus: The passages to look in: an index's passages (``covrag ask``), or the pool.
        most: At most this many passages per draft.

    Example:
        >>> evidence = Evidence(index_passages)  # doctest: +SKIP
        >>> evidence.lookup(["find . -mtime -7 -type f"], context)  # doctest: +SKIP
        (Passage(id='find.1.txt#38', ...),)
    """

    def __init__(self, corpus: Sequence[Passage], most: int = MOST) -> None:
        self.corpus = tuple(corpus)
        self.most = most
        self._by_document: dict[str | None, list[Passage]] | None = None

    def __repr__(self) -> str:
        return f"Evidence({len(self.corpus)} passages, most={self.most})"

    def by_document(self) -> dict[str | None, list[Passage]]:
        """The corpus's passages by document, in corpus order (grouped once)."""
        if self._by_document is None:
            grouped: dict[str | None, list[Passage]] = {}
            for passage in self.corpus:
                grouped.setdefault(document_of(passage), []).append(passage)
            self._by_document = grouped
        return self._by_document

    def _documents(
        self, program: str | None, hints: Sequence[str], context: Sequence[Passage]
    ) -> list[str | None]:
        """Where to look for a name, in order: the program's documents; else the context's
        documents, those of the programs ``hints`` names first."""
        if program is not None:
            return of_programs([program], self.by_document())
        documents = list(dict.fromkeys(document_of(p) for p in context))
        return list(dict.fromkeys([*of_programs(hints, documents), *documents]))

    def _first(
        self, test: Callable[[Passage], bool], documents: Sequence[str | None]
    ) -> Passage | None:
        """The first passage ``test`` accepts, in the order of ``documents``, then of each
        document's passages."""
        grouped = self.by_document()
        for document in documents:
            found = next((p for p in grouped.get(document, ()) if test(p)), None)
            if found is not None:
                return found
        return None

    def _definition(self, name: str, documents: Sequence[str | None]) -> Passage | None:
        """The first passage of ``documents`` that defines ``name``."""
        return self._first(lambda p: defines(p, name), documents)

    def _writing(self, option: str, documents: Sequence[str | None]) -> Passage | None:
        """The first passage of ``documents`` that writes ``option`` (an entry that defines
        it being none: tar's manual lists ``-f`` under ``--file``)."""
        return self._first(lambda p: option_at(p.text, option) is not None, documents)

    def _anywhere(self, name: str) -> Passage | None:
        """The definition of ``name`` when exactly one document of the corpus defines it."""
        found = [
            p
            for passages in self.by_document().values()
            if (p := next((q for q in passages if defines(q, name)), None)) is not None
        ]
        return found[0] if len(found) == 1 else None

    def lookup(self, sentences: Sequence[str], context: Sequence[Passage]) -> tuple[Passage, ...]:
        """The passages that define what ``sentences`` name and no passage of ``context``
        defines, at most :attr:`most`, in the order they are named."""
        added: list[Passage] = []
        for program, name, hints in wanted(sentences):
            documents = self._documents(program, hints, context)
            if program is not None and not documents:
                continue  # no document of the program: nothing to check the option against
            owned = (
                of_programs(hints, self.by_document())
                if program is None and name.startswith("-")
                else []
            )
            if owned:  # an option of a program the sentence names: that program's entry only
                documents = owned
            bound = program is not None or bool(owned)
            known = [p for p in (*context, *added) if not bound or document_of(p) in documents]
            for part in self._parts(name, known, documents):
                if len(added) >= self.most:
                    return tuple(added)
                if any(defines(p, part) for p in known):
                    continue
                found = self._definition(part, documents)
                if found is None and not bound:
                    found = self._anywhere(part)
                elif (
                    found is None
                    and program is not None
                    and part.startswith("-")
                    and not any(option_at(p.text, part) for p in known)
                ):
                    found = self._writing(part, documents)  # composed reads it written
                if found is not None and found not in (*context, *added):
                    added.append(found)
                    known.append(found)
        return tuple(added)

    def _parts(
        self, name: str, known: Sequence[Passage], documents: Sequence[str | None]
    ) -> list[str]:
        """``name``, or the short options it combines when neither the passages known nor the
        documents define it whole (``-czvf``)."""
        parts = split(name)
        if len(parts) == 1 or any(defines(p, name) for p in known):
            return [name]
        return [name] if self._definition(name, documents) is not None else parts
