"""Citation parsing: [n] marks to passage ids, invalid numbers reported, never kept."""

from __future__ import annotations

from covrag.generate.citations import (
    InvalidCitation,
    parse_citations,
    render_answer,
    split_sentences,
)

IDS = ("p1", "p2", "p3")


def test_each_sentence_gets_its_cited_ids() -> None:
    parsed = parse_citations("Uniforms cut bullying [1]. They cost money [2][3]. So what?", IDS)
    assert [(s.text, s.passage_ids) for s in parsed.answer.sentences] == [
        ("Uniforms cut bullying.", ("p1",)),
        ("They cost money.", ("p2", "p3")),
        ("So what?", ()),
    ]
    assert parsed.invalid == () and parsed.uncited == (2,)
    assert parsed.cited_passage_ids == ("p1", "p2", "p3")


def test_lists_ranges_and_repeats() -> None:
    parsed = parse_citations("A fact [1, 3]. Another [1-3]. Again [2; 2].", IDS)
    assert [s.passage_ids for s in parsed.answer.sentences] == [
        ("p1", "p3"),
        ("p1", "p2", "p3"),
        ("p2",),
    ]


def test_invalid_citations_are_reported_and_dropped() -> None:
    parsed = parse_citations("Real [2]. Invented [0][4]. Both [3, 9].", IDS)
    assert [s.passage_ids for s in parsed.answer.sentences] == [("p2",), (), ("p3",)]
    assert parsed.invalid == (
        InvalidCitation(1, 0),
        InvalidCitation(1, 4),
        InvalidCitation(2, 9),
    )


def test_citation_after_the_full_stop_belongs_to_the_sentence_before() -> None:
    parsed = parse_citations("Uniforms cut bullying. [1]\nThey cost money. [2].", IDS)
    assert [(s.text, s.passage_ids) for s in parsed.answer.sentences] == [
        ("Uniforms cut bullying.", ("p1",)),
        ("They cost money.", ("p2",)),
    ]


def test_markdown_and_list_markers_are_removed() -> None:
    text = "**Answer**\n- Uniforms cut **bullying** [1].\n2. They cost money [2].\n\n"
    assert split_sentences(text) == [
        "Answer",
        "Uniforms cut bullying [1].",
        "They cost money [2].",
    ]


def test_no_citations_and_empty_text() -> None:
    parsed = parse_citations("Uniforms are debated. Opinions differ.", IDS)
    assert parsed.uncited == (0, 1) and parsed.invalid == ()
    empty = parse_citations("  \n\n ", IDS)
    assert empty.answer.sentences == () and empty.uncited == ()
    only_marks = parse_citations("[1] [7]", IDS)
    assert only_marks.answer.sentences == ()
    assert only_marks.invalid == (InvalidCitation(0, 7),)


def test_render_answer_round_trips() -> None:
    parsed = parse_citations("Uniforms cut bullying [1]. They cost money [2][3].", IDS)
    text = render_answer(parsed.answer, IDS)
    assert text == "Uniforms cut bullying [1].\nThey cost money [2][3]."
    assert parse_citations(text, IDS).answer == parsed.answer


def test_a_looping_reply_keeps_each_sentence_once() -> None:
    text = "Uniforms keep students safe [1]. They cost money [2]. " + (
        "Uniforms keep  students safe [2]. They cost money [2]. " * 20
    )
    parsed = parse_citations(text, ["a", "b"])
    sentences = [(s.text, s.passage_ids) for s in parsed.answer.sentences]
    assert sentences == [("Uniforms keep students safe.", ("a", "b")), ("They cost money.", ("b",))]
    assert parsed.repeated == 40


def test_numbers_after_the_word_passage_are_citations_too() -> None:
    # the 1.5B writer cited a command as "[Passages 1, 4, 12]" (answer benchmark, manuals-02)
    parsed = parse_citations(
        'tar -czvf a.tar.gz --exclude="x" [Passages 1, 4, 12]\nIt is kept [passage 2]. '
        "So is this [Source 3].",
        ["a", "b", "c", "d"],
    )
    assert [(s.text, s.passage_ids) for s in parsed.answer.sentences] == [
        ('tar -czvf a.tar.gz --exclude="x"', ("a", "d")),
        ("It is kept.", ("b",)),
        ("So is this.", ("c",)),
    ]
    assert parsed.invalid == (InvalidCitation(0, 12),)
    # a bracket with other words in it is text, not a citation
    kept = parse_citations("Read [the passage on keys] first [1].", ["a"]).answer.sentences[0]
    assert kept.text == "Read [the passage on keys] first." and kept.passage_ids == ("a",)


def test_a_command_keeps_its_words_when_citations_are_removed() -> None:
    # only the spaces a citation leaves go: "find . -mtime" and "cd .." are commands
    text = (
        "Run find . -mtime -7 -type f [2]. Then cd .. and list it [1] , twice [1]. [2].\n"
        "It ends here [3]."
    )
    parsed = parse_citations(text, ["a", "b", "c"])
    assert [s.text for s in parsed.answer.sentences] == [
        "Run find . -mtime -7 -type f.",
        "Then cd .. and list it, twice.",
        "It ends here.",
    ]
    assert [s.passage_ids for s in parsed.answer.sentences] == [("b",), ("a", "b"), ("c",)]
