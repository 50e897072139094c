"""Nugget checks on real documents: does the pool, the context, the answer state what a right
answer needs, and does each answer sentence cite a passage that states it?

A *nugget* is one fact a right answer states (DES, Pradeep et al.'s nugget evaluation), written
by a person who read the documents: a sentence, whether it is *vital*, the documents that state
it (with a verbatim quote) and its *terms*, the words any correct statement of it must contain,
as groups of alternatives (``[["ServerAliveInterval"]]``, ``[["-z", "--gzip"], ["--exclude"]]``).
The checks are lexical and deterministic, so they can be read and argued with:

- a **passage states** a nugget when it comes from one of the nugget's source documents and every
  term group has an alternative in its text (:func:`passage_states`);
- an answer **sentence states** a nugget when every term group matches in it, and states it
  **with support** when it also cites a passage that states it (:func:`check_answer`);
- a cited sentence is **supported by a reader's check** when one passage it cites holds at least
  :data:`ALIGN_SHARE` of its content words or a run of :data:`RUN_WORDS` of its words
  (:func:`reader_supported`);
- a sentence **narrates** when it talks about the passages or documents instead of the subject
  ("Passage 3 explains ...", "the document says ...") (:func:`narrates`).

Terms match on :func:`normalise`'s text, as whole tokens: ``-z`` does not match ``-zip``,
``gzip`` does not match ``gzipped``; an all-lower-case word may take a plural ``s``/``es``; a
hyphen or a space inside a term matches either. Words match in any case; an option (``-L``,
``--exclude``) matches as written, case included (``-L`` and ``-l`` are different options),
and not as the start of a longer one (``--exclude`` does not match ``--exclude-backups``).

The file format (one question a line) is ``benchmarks/answers/FORMAT.md``'s; the rules live in
:class:`covrag.schema.nuggets.NuggetQuestionLine`.
"""

from __future__ import annotations

import functools
import math
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from covrag.errors import DataError
from covrag.files import iter_lines
from covrag.generate.attribution import writes_name
from covrag.generate.tidy import narrates
from covrag.schema._base import read_model
from covrag.schema._json import decode_json
from covrag.schema.nuggets import NuggetQuestionLine
from covrag.text import content_words, words
from covrag.types import Passage

#: Share of a sentence's content words one cited passage must hold (the reader's check).
ALIGN_SHARE = 0.6
#: Words in a row a sentence and a cited passage must share (the reader's check, the other way).
RUN_WORDS = 8
#: Characters around a quote a term must fall within (:func:`check_sources`).
QUOTE_WINDOW = 400


@dataclass(frozen=True)
class Source:
    """A document that states a nugget, and where (a verbatim quote)."""

    doc: str
    quote: str


@dataclass(frozen=True)
class Nugget:
    """One fact a right answer states (see the module docs)."""

    id: str
    text: str
    terms: tuple[tuple[str, ...], ...]
    sources: tuple[Source, ...]
    vital: bool = False

    @property
    def docs(self) -> frozenset[str]:
        """The names of the documents that state it."""
        return frozenset(s.doc for s in self.sources)


@dataclass(frozen=True)
class NuggetQuestion:
    """A question of the benchmark: ``kind`` is single, across, howto or unanswerable."""

    id: str
    corpus: str
    kind: str
    question: str
    nuggets: tuple[Nugget, ...] = ()
    why: str = ""

    @property
    def answerable(self) -> bool:
        return self.kind != "unanswerable"


def read_nugget_questions(path: str | os.PathLike[str]) -> list[NuggetQuestion]:
    """The questions of a nugget JSONL file.

    Raises:
        DataError: bad JSON, a missing or mistyped field, an answerable question without
            nuggets, an unanswerable one with nuggets or without ``why``, a duplicate id; the
            message names the file, the line and the field.
    """
    name = str(path)
    questions: list[NuggetQuestion] = []
    seen: set[str] = set()
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        record = decode_json(line, path=name, line=number)
        if not isinstance(record, dict):
            raise DataError("each line must be a JSON object", path=name, line=number)
        row = read_model(NuggetQuestionLine, record, path=name, line=number)
        if row.id in seen:
            raise DataError(f"duplicate id {row.id!r}", path=name, line=number, field="id")
        seen.add(row.id)
        nuggets = tuple(
            Nugget(
                n.id,
                n.text,
                tuple(tuple(g) for g in n.terms),
                tuple(Source(s.doc, s.quote) for s in n.sources),
                n.vital,
            )
            for n in row.nuggets
        )
        questions.append(
            NuggetQuestion(row.id, row.corpus, row.kind, row.question, nuggets, row.why)
        )
    return questions


# -- matching -------------------------------------------------------------------------------

_HYPHENS = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d"
_ASCII = str.maketrans(
    {**dict.fromkeys(_HYPHENS, "-"), "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
)
# A word broken at a line end by the typesetter (U+2010 or a soft hyphen): joined.
_SOFT_BREAK = re.compile(r"(?<=[^\W\d_])[\u2010\u00ad][ \t]*\r?\n[ \t]*(?=[^\W\d_])")
_SPACE = re.compile(r"\s+")


def normalise(text: str, *, lower: bool = True) -> str:
    """``text`` with words hyphenated at a line end by a typesetter (U+2010, soft hyphen)
    joined, other soft hyphens dropped, Unicode hyphens, dashes and quotes made ASCII, white
    space collapsed, and (``lower``) lower-cased.

    Example:
        >>> normalise("Re\u2010\\n   ceived “ServerAlive”  –  OK")
        'received "serveralive" - ok'
    """
    text = _SOFT_BREAK.sub("", text).replace("\u00ad", "")
    text = unicodedata.normalize("NFKC", text)  # ligatures a PDF reader returns: "ﬁ" -> "fi"
    text = _SPACE.sub(" ", text.translate(_ASCII)).strip()
    return text.lower() if lower else text


def _is_option(term: str) -> bool:
    return bool(re.match(r"-{1,2}[A-Za-z0-9]", term))


@functools.lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str]:
    """The pattern of one term alternative (see the module docs). An option (``-L``,
    ``--exclude``) matches as written, case included, and not as the start of a longer option
    (``--exclude`` does not match ``--exclude-backups``); other terms match in any case."""
    option = _is_option(term)
    term = normalise(term, lower=not option)
    pieces = re.split(r"(?<=[A-Za-z0-9])[- ](?=[A-Za-z0-9])", term) if not option else [term]
    body = "[- ]?".join(re.escape(p).replace(r"\ ", " ") for p in pieces)
    left = r"(?<![A-Za-z0-9-])" if option else r"(?<![A-Za-z0-9])"
    plural = "(?:e?s)?" if re.fullmatch(r"[a-z]+(?:[- ][a-z]+)*", term) else ""
    right = ""
    if term[-1:].isalnum():
        right = r"(?![A-Za-z0-9]|-[A-Za-z0-9])" if option else r"(?![A-Za-z0-9])"
    return re.compile(left + body + plural + right, 0 if option else re.IGNORECASE)


def matches(terms: Sequence[Sequence[str]], text: str, *, normalised: bool = False) -> bool:
    """Whether every term group has an alternative in ``text`` (``normalised``: ``text`` is
    already :func:`normalise`'s with ``lower=False``)."""
    said = text if normalised else normalise(text, lower=False)
    return all(any(term_pattern(t).search(said) for t in group) for group in terms)


def document_name(passage: Passage) -> str:
    """The file a passage was cut from, relative names compared by their last components
    (``source``, else ``doc_id``)."""
    value = passage.metadata.get("source") or passage.metadata.get("doc_id") or ""
    return str(value).replace("\\", "/")


def from_document(passage: Passage, docs: frozenset[str]) -> bool:
    """Whether ``passage`` was cut from one of ``docs`` (file names relative to the corpus)."""
    name = document_name(passage)
    return any(name == d or name.endswith("/" + d) for d in docs)


def passage_states(nugget: Nugget, passage: Passage) -> bool:
    """Whether ``passage`` comes from a source document of ``nugget`` and holds its terms."""
    return from_document(passage, nugget.docs) and matches(nugget.terms, passage.text)


def check_sources(nugget: Nugget, texts: Mapping[str, str]) -> list[str]:
    """What is wrong with a nugget's sources, given each document's text by name: a document
    that is missing, a quote it does not hold, a term group with no alternative within
    :data:`QUOTE_WINDOW` characters of the quote. Empty when all is well."""
    problems = []
    for source in nugget.sources:
        if source.doc not in texts:
            problems.append(f"{nugget.id}: no document {source.doc!r}")
            continue
        text = normalise(texts[source.doc], lower=False)
        at = text.lower().find(normalise(source.quote))
        quote = source.quote
        if at < 0:
            problems.append(
                f"{nugget.id}: {source.doc} does not hold the quote {source.quote[:60]!r}"
            )
            continue
        window = text[max(0, at - QUOTE_WINDOW) : at + len(normalise(quote)) + QUOTE_WINDOW]
        for group in nugget.terms:
            if not matches([group], window, normalised=True):
                problems.append(
                    f"{nugget.id}: no term of {list(group)} near the quote in {source.doc}"
                )
    return problems


# -- the reader's checks on answer sentences ------------------------------------------------


def reader_supported(sentence: str, passage: str) -> bool:
    """Whether ``passage`` holds most of ``sentence``'s content words or a long run of it."""
    wanted = content_words(sentence)
    if wanted and len(wanted & content_words(passage)) / len(wanted) >= ALIGN_SHARE:
        return True
    said, held = words(sentence), words(passage)
    n = min(RUN_WORDS, len(said))
    if n == 0:
        return False
    runs = {tuple(held[i : i + n]) for i in range(len(held) - n + 1)}
    return any(tuple(said[i : i + n]) in runs for i in range(len(said) - n + 1))


# -- one answer ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CitedSentence:
    """An answer sentence and the passage ids it cites."""

    text: str
    cites: tuple[str, ...] = ()


@dataclass(frozen=True)
class NuggetVerdict:
    """What the checks found for one nugget of one question."""

    nugget: str
    vital: bool
    in_pool: bool
    in_context: bool
    stated: tuple[int, ...]
    supported: tuple[int, ...]


@dataclass(frozen=True)
class AnswerCheck:
    """One answer checked against its question's nuggets.

    Attributes:
        question: The question's id.
        verdicts: One per nugget.
        sentences: The answer's sentences.
        reader_ok: Per sentence: a cited passage supports it by the reader's check (None for a
            sentence that cites nothing).
        narrating: Indices of sentences that narrate (:func:`narrates`).
        misattributed: Indices of sentences that name documents of the pool and cite none of
            them, nor a passage that names them itself (one document's content given to
            another's subject; a cross-reference copied from the cited passage is not one).
        refused: The answer declined (no cited sentence).
    """

    question: NuggetQuestion
    verdicts: tuple[NuggetVerdict, ...]
    sentences: tuple[CitedSentence, ...]
    reader_ok: tuple[bool | None, ...]
    narrating: tuple[int, ...]
    misattributed: tuple[int, ...]
    refused: bool
    repeated: tuple[int, ...] = field(default=())

    def _share(self, flag: str, vital_only: bool) -> float:
        rows = [v for v in self.verdicts if v.vital or not vital_only]
        if not rows:
            return math.nan
        return sum(1 for v in rows if getattr(v, flag)) / len(rows)

    @property
    def pool_recall(self) -> float:
        return self._share("in_pool", False)

    @property
    def context_recall(self) -> float:
        return self._share("in_context", False)

    @property
    def v_strict(self) -> float:
        """Vital nuggets stated with support (DES's V_strict)."""
        return self._share("supported", True)

    @property
    def st_recall(self) -> float:
        """All nuggets stated with support (the answer's StRecall)."""
        return self._share("supported", False)

    @property
    def stated_recall(self) -> float:
        """All nuggets stated, supported or not."""
        return self._share("stated", False)

    @property
    def transfer(self) -> float:
        """Of the nuggets the context holds, the share the answer states with support."""
        held = [v for v in self.verdicts if v.in_context]
        return sum(1 for v in held if v.supported) / len(held) if held else math.nan

    @property
    def cited(self) -> int:
        return sum(1 for ok in self.reader_ok if ok is not None)

    @property
    def reader_supported(self) -> int:
        return sum(1 for ok in self.reader_ok if ok)

    @property
    def refusal_right(self) -> bool:
        """Refused an unanswerable question, or answered an answerable one."""
        return self.refused != self.question.answerable


def _names(passage: Passage) -> tuple[str, ...]:
    """The names a sentence may use for a passage's document: the attribution rule's, plus a
    manual page's name without its section (``ssh_config.5.txt`` -> ``ssh_config``)."""
    from covrag.generate.attribution import bare_name, document_names

    names = list(document_names(passage))
    stem = document_name(passage).rsplit("/", 1)[-1]
    bare = bare_name(stem)
    if bare and bare not in names and len(bare) >= 3:
        names.append(bare)
    return tuple(names)


def _named(sentence: str, pool: Sequence[Passage]) -> set[str]:
    """Documents of ``pool`` a sentence names (file paths such as ``~/.ssh/config`` are not
    names; a versioned name spelled out is: :func:`covrag.generate.attribution.writes_name`)."""
    said = " ".join(w for w in sentence.split() if "/" not in w)
    found: set[str] = set()
    seen: set[str] = set()
    for p in pool:
        doc = document_name(p)
        if doc in seen:
            continue
        seen.add(doc)
        if any(writes_name(said, name) for name in _names(p)):
            found.add(doc)
    return found


def check_answer(
    question: NuggetQuestion,
    pool: Sequence[Passage],
    context: Sequence[str],
    sentences: Sequence[CitedSentence],
    evidence: Sequence[Passage] = (),
) -> AnswerCheck:
    """Check one answer: ``pool`` is every retrieved passage (with the ``source`` of its
    document in its metadata), ``context`` the ids of the selected ones, ``sentences`` the
    answer's sentences with the ids they cite, ``evidence`` the passages beyond the pool the
    citation check looked up (:mod:`covrag.generate.evidence`), which sentences may cite but
    which count in no recall."""
    by_id = {p.id: p for p in (*pool, *evidence)}
    chosen = [by_id[i] for i in context if i in by_id]
    said = [normalise(s.text, lower=False) for s in sentences]
    verdicts = []
    for nugget in question.nuggets:
        stated = tuple(i for i, s in enumerate(said) if matches(nugget.terms, s, normalised=True))
        supported = tuple(
            i
            for i in stated
            if any(p in by_id and passage_states(nugget, by_id[p]) for p in sentences[i].cites)
        )
        verdicts.append(
            NuggetVerdict(
                nugget.id,
                nugget.vital,
                any(passage_states(nugget, p) for p in pool),
                any(passage_states(nugget, p) for p in chosen),
                stated,
                supported,
            )
        )
    reader_ok: list[bool | None] = []
    misattributed = []
    for i, s in enumerate(sentences):
        cited = [by_id[p] for p in s.cites if p in by_id]
        if not cited:
            reader_ok.append(None)
            continue
        reader_ok.append(any(reader_supported(s.text, p.text) for p in cited))
        named = _named(s.text, pool)
        if named and not named & {document_name(p) for p in cited}:
            # a cross-reference the sentence copies from its passage is not a misattribution
            if not any(named <= _named(p.text, pool) for p in cited):
                misattributed.append(i)
    lowered = [s.lower() for s in said]
    repeated = tuple(i for i in range(len(said)) if said[i] and lowered[i] in lowered[:i])
    return AnswerCheck(
        question,
        tuple(verdicts),
        tuple(sentences),
        tuple(reader_ok),
        # framing and refusals cite nothing: they are the system's words, not the answer's
        tuple(i for i, s in enumerate(sentences) if s.cites and narrates(s.text)),
        tuple(misattributed),
        refused=not any(ok is not None for ok in reader_ok),
        repeated=repeated,
    )
