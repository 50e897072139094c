from __future__ import annotations

import pytest

from covrag.generate.citations import split_sentences as answer_sentences
from covrag.plan.decompose import normalise, question_problem
from covrag.plan.qtree import word_overlap
from covrag.text import STOPWORDS, content_words, is_heading, split_sentences, words


def test_words_are_lower_cased_runs_of_letters_and_digits() -> None:
    assert words("What about NATO?") == ["what", "about", "nato"]
    assert words("COVID-19 in 2020's U.K.") == ["covid", "19", "in", "2020", "s", "u", "k"]
    assert words("  ") == []
    assert words("What about NATO?") == words("what about nato?")


def test_content_words_leave_out_question_scaffolding() -> None:
    assert content_words("What is the role of NATO in Europe?") == {"role", "nato", "europe"}
    assert content_words("Who is the antagonist?") == {"antagonist"}
    assert {"what", "the", "of"} <= STOPWORDS


def test_sentences_split_after_an_end_mark_before_a_capital_or_digit() -> None:
    assert split_sentences("One. Two! 3 three? four") == ["One.", "Two!", "3 three? four"]
    assert split_sentences("no end") == ["no end"]
    assert split_sentences("e.g. lower case goes on. Next one.") == [
        "e.g. lower case goes on.",
        "Next one.",
    ]
    # An opening quote or bracket before the capital still starts a sentence.
    assert split_sentences('He said so. "Rain" fell. (Later) it cleared. [2] Done.') == [
        "He said so.",
        '"Rain" fell.',
        "(Later) it cleared.",
        "[2] Done.",
    ]
    # Not after a closing quote, nor before a lower-case word behind a bracket.
    assert split_sentences('"It rained." Then. It was (so) wet. (see below)') == [
        '"It rained." Then.',
        "It was (so) wet. (see below)",
    ]
    assert split_sentences("It ended. “Quoted” text. ‘Single’ too.") == [
        "It ended.",
        "“Quoted” text.",
        "‘Single’ too.",
    ]
    assert split_sentences("  padded.   Text  ") == ["padded.", "Text"]
    assert split_sentences("") == [""]


def test_answers_split_their_lines_with_the_same_sentence_ends() -> None:
    text = "Uniforms cut bullying. (They cost money.) [1]\nIt ended. “Quoted” text."
    assert answer_sentences(text) == [
        "Uniforms cut bullying.",
        "(They cost money.) [1]",
        "It ended.",
        "“Quoted” text.",
    ]


def test_a_short_question_in_capitals_counts_its_words() -> None:
    # Before covrag.text, "What about NATO?" counted ["hat", "about"] and was rejected.
    assert question_problem("What about NATO?", "Should Europe spend more on defence?") is None
    assert "too short" in (question_problem("Why NATO?", "Q?") or "")
    assert normalise("What about NATO?") == "what about nato"


def test_word_overlap_ignores_case_and_scaffolding() -> None:
    assert word_overlap("Who leads NATO?", "who leads nato") == 1.0
    assert word_overlap("What is the role of NATO?", "What is the role of the EU?") == 1 / 3


def test_writes_takes_an_option_with_its_case_and_other_names_in_any_case() -> None:
    from covrag.text import writes

    assert writes("run it with -D set", "-D") and not writes("run it with -D set", "-d")
    assert writes("Use --Location", "--Location") and not writes("Use --Location", "--location")
    assert writes("Call Subprocess.Run here", "subprocess.run")
    assert not writes("the ServerAliveIntervals", "ServerAliveInterval")  # a whole word
    assert not writes("e-mail", "mail")  # a dash joins words


def test_writes_loose_reads_a_dotted_name_by_its_last_part_and_plurals_as_one() -> None:
    from covrag.text import writes

    assert writes("copy2(src, dst) copies", "shutil.copy2", loose=True)
    assert not writes("copy2(src, dst) copies", "shutil.copy2")
    assert writes("Each URL is read", "URLs", loose=True)
    assert writes("the URLs are read", "URL", loose=True)
    assert not writes("the URLs are read", "URL")
    assert not writes("run it with -D set", "-d", loose=True)  # an option keeps its case


def test_writes_loose_finds_an_acronym_inside_a_camel_case_name() -> None:
    from covrag.text import writes

    # readline's option writes CRLF (the Node.js corpus has no "CRLF" as a word)
    assert writes("Set the crlfDelay option to Infinity.", "CRLF", loose=True)
    assert writes("call useCRLF() or readCrlf()", "CRLF", loose=True)
    assert not writes("Set the crlfDelay option to Infinity.", "CRLF")  # loose only
    # no camel-case boundary, or no acronym: not written
    assert not writes("CRLFDELAY and nocrlf", "CRLF", loose=True)
    assert not writes("the lzmaFilter of xz", "LZMA2", loose=True)
    assert not writes("a ccFlags setting", "CC", loose=True)  # two letters are too short


@pytest.mark.parametrize(
    ("line", "heading"),
    [
        # headings quoted as answer sentences on the answer benchmark's corpora
        ("GNU LESSER GENERAL PUBLIC LICENSE Version 2.1, February 1999", True),
        ("GNU GENERAL PUBLIC LICENSE TERMS AND CONDITIONS FOR COPYING, DISTRIBUTION AND", True),
        ("The GNU General Public License", True),
        ("Frequently Asked Questions about zlib", True),
        ("MODULE REFERENCE https://docs.python.org/3.11/library/json.html", True),
        ("Installing Python Packages in Debian ==========", True),
        ("GIT-STASH(1)                      Git Manual                      GIT-STASH(1)", True),
        # statements, synopses and option entries are not
        ("-c, --create Create a new archive.", False),
        ("tar --create [--file ARCHIVE] [OPTIONS] [FILE...]", False),
        ("UNIX-style usage tar -A [OPTIONS] ARCHIVE ARCHIVE", False),
        ("-H, --header can be used several times in a command line", False),
        ("class TemporaryDirectory(builtins.object)", False),
        ("http://www.apache.org/licenses/LICENSE-2.0", False),
        ("The Apache License 2.0 grants a patent license", False),
        ('Licensed under the Apache License, Version 2.0 (the "License");', False),
    ],
)
def test_a_heading_is_told_from_a_statement(line: str, heading: bool) -> None:
    assert is_heading(line) is heading
