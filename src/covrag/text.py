"""Text heuristics every stage shares: sentences, words and content words, one behaviour each.

- :func:`split_sentences`: a sentence ends at ``.``, ``!`` or ``?`` followed by white space and
  a capital letter or digit, optionally behind an opening quote or bracket. LMVU's atomic pieces
  use this split, and the shipped LMVU model was fitted on features computed with it.
- :func:`words`: runs of ASCII letters and digits of the lower-cased text, so case never changes a
  count (``"What about NATO?"`` has three words).
- :func:`content_words`: the distinct words without question scaffolding (:data:`STOPWORDS`).

Imports nothing of covrag: every stage may use it.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_WORD = re.compile(r"[a-z0-9]+")

# Question scaffolding carries no topic: "Who is the protagonist of X and what is their role?"
# and "Who is the antagonist of X and what is their role?" ask different things.
STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how in is it its of on or that the "
    "their them there these they this to was were what when where which who why will with".split()
)


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text``, stripped; ``[text]`` itself when it holds no sentence.

    Example:
        >>> split_sentences("One. Two! 3 three? four")
        ['One.', 'Two!', '3 three? four']
    """
    pieces = [s.strip() for s in _SENTENCE_END.split(text.strip())]
    return [s for s in pieces if s] or [text]


def sentence_starts(text: str) -> list[int]:
    """Where each sentence after the first begins in ``text`` (the split of
    :func:`split_sentences`, as offsets).

    Example:
        >>> sentence_starts("One. Two! 3 three? four")
        [5, 10]
    """
    return [m.end() for m in _SENTENCE_END.finditer(text)]


def words(text: str) -> list[str]:
    """The words of ``text``, lower-cased, in order.

    Example:
        >>> words("What about NATO?")
        ['what', 'about', 'nato']
    """
    return _WORD.findall(text.lower())


def content_words(text: str) -> set[str]:
    """The distinct words of ``text`` that are not :data:`STOPWORDS`."""
    return set(words(text)) - STOPWORDS


def is_question(text: str) -> bool:
    """Whether ``text`` is worded as a question (it ends with ``?``)."""
    return text.rstrip().rstrip("\"'\u201d)").endswith("?")


# An option as written: one or two dashes after a blank or an opening bracket, then a letter
# ("-L", "--post301", "--keepalive-time"); a dotted name ("json.dump", "os.path.join").
_OPTION = re.compile(r"(?<![\w\-.])--?[A-Za-z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)*")
_DOTTED = re.compile(r"(?<![\w.])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
# A name in camel case or with an underscore ("ServerAliveInterval", "capture_output").
_CODE_NAME = re.compile(
    r"(?<![\w.])(?:[A-Z][a-z0-9]+[A-Z]\w*|[a-z][a-z0-9]*[A-Z]\w*|[A-Za-z]\w*_\w+|[A-Z]{2,}[a-z]\w*)"
)


def options(text: str) -> list[str]:
    """The command-line options of ``text`` as written (dashes and case kept).

    Example:
        >>> options("Use -L (--location), not e-mail or -- alone.")
        ['-L', '--location']
    """
    return _OPTION.findall(text)


def dotted_names(text: str) -> list[str]:
    """The dotted names of ``text`` (``json.dump``, ``os.path.join``), lower-cased, longer
    than three characters (so ``U.S.`` and ``e.g.`` are not names)."""
    found = [d.lower() for d in _DOTTED.findall(text) if any(c.isalpha() for c in d[1:])]
    return [d for d in found if len(d) > 3]


#: Endings of file names: a dotted name ending so (``out.tar.gz``) is an example file, not code.
_FILE_ENDINGS = frozenset(
    "gz tgz tar zip bz2 xz zst txt json py cfg conf ini toml yaml yml log csv md html pdf sh "
    "c h so o deb rpm".split()
)


def code_names(text: str) -> list[str]:
    """The identifiers of ``text`` a statement about software must get exactly right: options,
    dotted names (not file names such as ``out.tar.gz``), and names in camel case or with an
    underscore.

    Example:
        >>> code_names("Set ServerAliveInterval, or pass capture_output to subprocess.run with -q.")
        ['-q', 'subprocess.run', 'ServerAliveInterval', 'capture_output']
    """
    files = [d for d in dotted_names(text) if d.rsplit(".", 1)[-1] in _FILE_ENDINGS]
    names = options(text) + [d for d in dotted_names(text) if d not in files]
    names += [n for n in _CODE_NAME.findall(text) if not any(n.lower() in d for d in names)]
    return list(dict.fromkeys(names))


#: A number with dotted parts: a version ("2.0") or a section ("3.1").
_NUMBERED = r"\d+(?:\.\d+)*"
# A name as a question writes it: an acronym or a word with a digit or an inner capital ("TOML",
# "LZMA2", "PyPI", "CC0"), with the version a slash gives it ("HTTP/2", "MPL/2.0": a document
# about HTTP/1.1 is not about HTTP/2), beside the code names of :func:`code_names`.
_NAME = re.compile(
    rf"(?<![\w.-])(?:[A-Z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*(?:/{_NUMBERED})?"
    r"|[a-z]+[0-9][a-z0-9]*)(?![\w-])"
)
# A name with its version after a slash: "HTTP/2" -> ("HTTP", "2").
_VERSIONED = re.compile(rf"([A-Za-z][A-Za-z0-9]*)/({_NUMBERED})")
# What makes a name a value the question passes on rather than a thing it asks about: a number
# before it ("10 MB"), or words that introduce a literal ("the word TODO", "the string ERROR").
_LITERAL = re.compile(r"(?:\d\s*|\b(?:word|words|string|text|pattern|line|value|named|called)\s+)$")


def subject_names(question: str) -> list[str]:
    """The names a question asks about, which a document that answers it must write: its code
    names (:func:`code_names`) and acronyms or words with a digit or an inner capital, without
    quoted text, quantities ("10 MB") and literals ("the word TODO").

    Example:
        >>> subject_names('How do I read TOML with tomllib, or grep the word TODO in "a.txt"?')
        ['TOML']
    """
    bare = re.sub(r"\"[^\"]*\"|'[^']*'|`[^`]*`|\u201c[^\u201d]*\u201d", " ", question)
    found = code_names(bare)
    for m in _NAME.finditer(bare):
        if not _LITERAL.search(bare[: m.start()]):
            found.append(m.group(0))
    out = [n for n in found if not _LITERAL.search(bare[: max(bare.find(n), 0)])]
    return list(dict.fromkeys(out))


def writes(text: str, name: str, *, loose: bool = False) -> bool:
    """Whether ``text`` writes ``name`` as a whole word: an option as written, with its case
    (``-d`` is not ``-D``), another name in any case. ``loose`` (whether a passage writes a name
    a question asks about: :mod:`covrag.selectors.floor`'s name filter) also takes a dotted name
    by its last part (pydoc writes ``copy2(src, dst)`` under ``shutil``), and a name or an
    acronym in the singular or the plural ("URL" for "URLs", "URLs" for "URL"), and a name with a
    version after a slash as "HTTP/2", "HTTP 2", "HTTP2" or "HTTP/2.0" (never "HTTP/1.1"), and an
    acronym as a part of a camel-case name (readline's ``crlfDelay`` writes "CRLF").

    Example:
        >>> writes("pass -D to it", "-d"), writes("Read the urls.", "URLs", loose=True)
        (False, True)
        >>> writes("copy2(src, dst) copies metadata", "shutil.copy2", loose=True)
        True
    """
    if name.startswith("-"):
        return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text) is not None
    if not loose:
        return re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.IGNORECASE) is not None
    versioned = _VERSIONED.fullmatch(name)
    if versioned:  # "HTTP/2" as written, "HTTP 2", "HTTP2" or "HTTP/2.0"; never "HTTP/1.1"
        base = re.escape(versioned.group(1))
        version = re.escape(re.sub(r"(?:\.0)+$", "", versioned.group(2)))
        pattern = rf"(?<![\w-]){base}(?:/|\s|){version}(?:\.0)*(?![\w-]|\.\d)"
        return re.search(pattern, text, re.IGNORECASE) is not None
    last = _last_part(name)
    # an acronym's plural ("URLs", "IDs") is written when its singular is
    forms = [last, last[:-1]] if re.fullmatch(r"[A-Z0-9]{2,}s", last) else [last]
    return any(
        re.search(rf"(?<![\w-]){re.escape(form)}s?(?![\w-])", text, re.IGNORECASE) is not None
        for form in forms
    ) or _in_camel_case(text, last)


def _last_part(name: str) -> str:
    """A dotted name's last part ("copy2" for "shutil.copy2"); another name as it is."""
    return name.rsplit(".", 1)[-1] if "." in name.strip(".") else name


def name_core(name: str) -> str:
    """What every form of ``name`` that :func:`writes` accepts with ``loose`` holds, lower-cased:
    its last dotted part's first run of letters and digits ("http" for "HTTP/2", "url" for
    "URLs", "copy2" for "shutil.copy2", "crlf" for "CRLF", written in ``crlfDelay``). A text
    that does not hold it cannot write the name, so a scan can skip the regex there."""
    last = _last_part(name)
    run = re.search(r"[A-Za-z0-9]+", last)
    core = run.group(0).lower() if run else last.lower()
    return core[:-1] if re.fullmatch(r"[A-Z0-9]{2,}s", run.group(0) if run else "") else core


def _in_camel_case(text: str, acronym: str) -> bool:
    """Whether ``text`` writes ``acronym`` (three or more capitals and digits, a letter first) as
    a part of a camel-case name: "crlfDelay" writes CRLF, and so do "useCRLF" and "readCrlf";
    "CRLFDelay" and "nocrlf" do not (no camel-case boundary)."""
    if re.fullmatch(r"[A-Z][A-Z0-9]{2,}", acronym) is None:
        return False
    low, title = acronym.lower(), acronym[0] + acronym[1:].lower()
    pattern = rf"(?<![\w-]){low}(?=[A-Z])|(?<=[a-z])(?:{acronym}|{title})(?![a-z0-9])"
    return re.search(pattern, text) is not None


_URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+")
#: A heading numbered at its end, as the GPL's "TERMS AND CONDITIONS 0." reads once split.
_NUMBERED_HEADING = re.compile(rf"(.*\S)\s+{_NUMBERED}\.")
_TITLE_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
#: Words a title leaves in lower case ("Frequently Asked Questions about zlib").
_TITLE_SMALL = frozenset("a an and about as at by for from in of on or the to with".split())


def is_heading(text: str) -> bool:
    """Whether ``text`` (one line or sentence of a document) is a heading, not a statement: it
    ends without a sentence's punctuation and its words, URLs aside, are capitalised (all of
    them, or three in four of at most 12), as in "GNU GENERAL PUBLIC LICENSE Version 3, 29 June
    2007", "MODULE REFERENCE https://...", "Frequently Asked Questions about zlib", or in capitals
    with a number at its end ("TERMS AND CONDITIONS 0."). A URL or a number alone is no
    heading; a man page's synopsis ("tar --create [--file ARCHIVE]") and an option's entry
    ("-c, --create Create a new archive.") are none.

    Example:
        >>> is_heading("Mozilla Public License Version 2.0 ==================")
        True
        >>> is_heading("tar --create [--file ARCHIVE] [OPTIONS] [FILE...]")
        False
        >>> is_heading("TERMS AND CONDITIONS 0."), is_heading("Set the level to 9.")
        (True, False)
    """
    line = text.strip().strip("\u201c\u201d").strip()
    numbered = _NUMBERED_HEADING.fullmatch(line)
    if numbered:  # "TERMS AND CONDITIONS 0.": its words in capitals, all of them
        found = _TITLE_WORD.findall(numbered.group(1))
        return len(found) >= 2 and all(w.isupper() for w in found)
    if not line or line[-1] in ".!?;:":
        return False
    found = _TITLE_WORD.findall(_URL.sub(" ", line))
    if not found:
        return False
    capital = sum(1 for w in found if w[0].isupper() or w in _TITLE_SMALL)
    return capital == len(found) or (capital * 4 >= len(found) * 3 and len(found) <= 12)
