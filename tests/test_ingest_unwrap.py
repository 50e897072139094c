"""Hard-wrapped text: paragraphs unwrapped before chunking, offsets exact into the original."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covrag.ingest import Chunker, Document, read_document
from covrag.ingest.unwrap import Unwrapped, _merged, unwrap
from covrag.text import split_sentences
from covrag.tokens import WhitespaceTokenCounter

pytest.importorskip("semchunk")

SENTENCES = [
    f"Clause {i} says that the licensee {verb} the software under these terms."
    for i, verb in enumerate(["may copy", "may modify", "may share", "must credit"] * 6, 1)
]


def _wrapped(sentences: list[str], paragraph: int = 4) -> str:
    """Paragraphs of ``paragraph`` sentences, hard-wrapped at 72 columns and indented."""
    blocks = [
        textwrap.fill(" ".join(sentences[i : i + paragraph]), 72, initial_indent="   ",
                      subsequent_indent="   ")
        for i in range(0, len(sentences), paragraph)
    ]  # fmt: skip
    return "\n\n".join(blocks) + "\n"


def test_unwrap_joins_lines_of_a_paragraph_and_keeps_paragraphs_lists_and_tables() -> None:
    text = (
        "Permission is hereby granted,\n   free of charge, to any person.\n\n"
        "Conditions:\n- keep the notice\n- keep the list\n1. first\n(a) second\n"
        "| a | b |\n| 1 | 2 |"
    )
    assert unwrap(text) == (
        "Permission is hereby granted, free of charge, to any person.\n\n"
        "Conditions:\n- keep the notice\n- keep the list\n1. first\n(a) second\n"
        "| a | b |\n| 1 | 2 |"
    )
    # Windows line ends and trailing blanks are joined the same way.
    assert unwrap("one line  \r\n  and the next") == "one line and the next"


def test_hard_wrapped_text_gives_passages_that_start_at_sentences(tmp_path: Path) -> None:
    text = _wrapped(SENTENCES)
    assert max(len(line) for line in text.splitlines()) <= 72
    (tmp_path / "licence.txt").write_text(text, encoding="utf-8")
    document = read_document(tmp_path / "licence.txt")
    passages = Chunker(40, 15, WhitespaceTokenCounter()).split(document, "licence.txt")
    assert len(passages) > 4
    starts = {s.split()[0] + " " + s.split()[1] for s in SENTENCES}
    for passage in passages:
        start, end = passage.metadata["start"], passage.metadata["end"]
        # The passage reads as prose: no line break inside a paragraph, no indentation.
        assert "\n" not in passage.text.replace("\n\n", "")
        assert "  " not in passage.text.replace("\n\n", " ")
        # It starts at a sentence and the original span holds exactly its content.
        assert " ".join(passage.text.split()[:2]) in starts
        assert unwrap(document.text[start:end]) == passage.text
        assert not document.text[start].isspace() and not document.text[end - 1].isspace()
        assert all(s in SENTENCES for s in split_sentences(passage.text.replace("\n\n", " ")))
    # Overlap is whole sentences of the passage before.
    shared = [
        a
        for a, b in zip(passages, passages[1:], strict=False)
        if b.metadata["start"] < a.metadata["end"]
    ]
    assert shared


def test_a_sentence_longer_than_the_overlap_is_not_cut_to_make_one() -> None:
    long = " ".join(f"word{i}" for i in range(15)) + "."
    text = " ".join([long] * 6)
    document = Document("/d/long.txt", "long", text, "0" * 64)
    passages = Chunker(40, 12, WhitespaceTokenCounter()).split(document, "long.txt")
    assert all(p.text.startswith("word0 ") for p in passages)
    ends = [(p.metadata["start"], p.metadata["end"]) for p in passages]
    assert all(b[0] >= a[1] for a, b in zip(ends, ends[1:], strict=False))  # no overlap possible


#: Texts of prose words, line breaks, blanks, list markers, table bars and a line comment.
TEXTS = st.lists(
    st.sampled_from(
        ["Tea", "is", "old.", "It", "came", "\n", "\n\n", "  ", "- ", "1. ", "|", "// a"]
    ),
    min_size=1,
    max_size=80,
)


@settings(max_examples=60, deadline=None)
@given(TEXTS)
def test_the_map_and_the_invariant_hold_on_any_text(pieces: list[str]) -> None:
    text = " ".join(pieces)
    flat = Unwrapped.of(text)
    assert flat.text == unwrap(text)
    for i, char in enumerate(flat.text):
        original = flat.original(i)
        assert text[original] == char or (char == " " and text[original].isspace())
    document = Document("/d/x.txt", "x", text, "0" * 64)
    if not text.strip():
        return
    for passage in Chunker(8, 2, WhitespaceTokenCounter()).split(document, "x"):
        start, end = passage.metadata["start"], passage.metadata["end"]
        assert unwrap(text[start:end]) == passage.text


def test_words_hyphenated_at_a_line_end_are_joined_with_exact_offsets() -> None:
    # man(1) output breaks words with U+2010; a soft hyphen does the same; an ASCII hyphen
    # may be the word's own, so it stays and only the break goes
    text = (
        "if no data has been re\u2010\n       ceived from the server, an impor\u00ad\n"
        "  tant command-\n   line tool. A dash -\n then a space."
    )
    assert unwrap(text) == (
        "if no data has been received from the server, an important command-line tool. "
        "A dash - then a space."
    )
    mapped = Unwrapped.of(text)
    assert mapped.text == unwrap(text)
    at = mapped.text.index("received")
    start, end = mapped.span(at, at + len("received"))
    assert text[start:end] == "re\u2010\n       ceived"
    # a line break before a capital or a list item is not a broken word
    assert unwrap("a re\u2010\nB") == "a re\u2010 B"
    assert unwrap("first-\n- item") == "first-\n- item"


@settings(max_examples=60, deadline=None)
@given(TEXTS, st.lists(st.tuples(st.integers(0, 300), st.integers(1, 40)), max_size=3))
def test_verbatim_spans_are_kept_and_the_invariant_holds(
    pieces: list[str], spans: list[tuple[int, int]]
) -> None:
    text = " ".join(pieces)
    # spans inside the text, in any order, nested or overlapping ones too
    keep = [(start, min(start + size, len(text))) for start, size in spans if start < len(text)]
    flat = Unwrapped.of(text, keep)
    assert flat.text == unwrap(text, keep)
    for start, end in _merged(keep):  # each kept span is in the flat text as written
        assert text[start:end] in flat.text
    for i, char in enumerate(flat.text):
        original = flat.original(i)
        assert text[original] == char or (char == " " and text[original].isspace())
    if not text.strip():
        return
    document = Document("/d/x.html", "x", text, "0" * 64, verbatim=tuple(keep))
    for passage in Chunker(8, 2, WhitespaceTokenCounter()).split(document, "x"):
        start, end = passage.metadata["start"], passage.metadata["end"]
        shifted = [
            (max(a, start) - start, min(b, end) - start) for a, b in keep if a < end and b > start
        ]
        assert unwrap(text[start:end], shifted) == passage.text
