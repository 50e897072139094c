"""An unsupported sentence replaced by the passage sentence that says what it meant
(:mod:`covrag.generate.requote`), under the default ``unsupported="quote"`` policy."""

from __future__ import annotations

from covrag.generate import SupportChecker, support_warnings
from covrag.generate.citations import ParsedAnswer
from covrag.generate.quotes import quote_span
from covrag.generate.records import Draft
from covrag.generate.requote import best_quote, quote_spans, requote, word_weights
from covrag.types import Answer, Aspect, Citation, Passage

SHUTIL = {"title": "shutil"}
CURL = {"title": "curl"}
SSH = {"title": "ssh_config"}

PASSAGES = (
    Passage(
        "shutil#1",
        "Help on module shutil:\n\nNAME shutil - Utility functions for copying and archiving "
        "files and directory trees.",
        metadata=SHUTIL,
    ),
    Passage(
        "shutil#28",
        "If source and destination are the same file, a SameFileError will be raised.\n\n"
        "copy2(src, dst, *, follow_symlinks=True) Copy data and metadata. Return the file's "
        "destination.",
        metadata=SHUTIL,
    ),
    Passage(
        "shutil#27",
        'copy(src, dst, *, follow_symlinks=True) Copy data and mode bits ("cp src dst"). '
        "Return the file's destination.",
        metadata=SHUTIL,
    ),
    Passage(
        "curl#137",
        "--keepalive-time <seconds> This option sets the time a connection needs to remain "
        "idle before sending keepalive probes and the time between individual keepalive probes.",
        metadata=CURL,
    ),
    Passage(
        "ssh#97",
        "ServerAliveInterval Sets a timeout interval in seconds after which if no data has been "
        "received from the server, ssh will send a message through the encrypted channel.",
        metadata=SSH,
    ),
)


def test_spans_end_at_a_blank_line_too() -> None:
    text = PASSAGES[1].text
    pieces = [text[s:e] for s, e in quote_spans(text)]
    assert pieces[0] == (
        "If source and destination are the same file, a SameFileError will be raised."
    )
    assert pieces[1].startswith("copy2(src, dst, *, follow_symlinks=True) Copy data and metadata.")


def test_a_paraphrase_is_replaced_by_the_sentence_holding_its_rare_words() -> None:
    weights = word_weights(PASSAGES)
    assert weights["copy"] < weights["metadata"]  # written by three passages, not one
    found = best_quote("shutil.copy2 copies the data and the metadata too.", PASSAGES, weights)
    assert found is not None
    passage, (start, end), share = found
    assert passage.id == "shutil#28" and share > 0.5
    assert passage.text[start:end].startswith("copy2(src, dst")


def test_no_quotation_for_another_tools_option_or_for_words_alone() -> None:
    weights = word_weights(PASSAGES)
    # the sentence's code name (ServerAliveInterval) must be in the quotation: curl's
    # keepalive passage shares "keepalive", "idle", "connection" but is not what was meant
    sentence = "Set ServerAliveInterval so an idle connection sends keepalive probes."
    found = best_quote(sentence, PASSAGES, weights)
    assert found is None or found[0].id == "ssh#97"
    # a sentence sharing only common words with every passage keeps no quotation
    assert best_quote("The weather in Paris is mild in spring.", PASSAGES, weights) is None
    # a heading is never a quotation ("Help on module shutil:" has three words)
    spans = [PASSAGES[0].text[s:e] for s, e in quote_spans(PASSAGES[0].text)]
    assert spans[0] == "Help on module shutil:"
    aspect = Aspect("sq1", "What does the shutil module do?")
    span = quote_span(PASSAGES[0], aspect, word_weights(PASSAGES))
    assert span is not None
    assert PASSAGES[0].text[span[0] : span[1]].startswith("NAME shutil - Utility functions")


def test_the_checker_quotes_in_place_keeps_the_written_sentence_and_says_so() -> None:
    written = (
        Citation("shutil.copy copies data and the mode bits of the file.", ()),
        Citation("copy2 also copies the metadata of the file.", ("shutil#1",)),
        Citation("The weather in Paris is mild in spring.", ("shutil#1",)),
    )
    draft = Draft(ParsedAnswer(Answer(written)), "raw", 3)
    checked = SupportChecker().check(draft, PASSAGES)
    texts = [s.text for s in checked.answer.sentences]
    assert texts[0].startswith("\u201ccopy(src, dst")
    assert texts[1].startswith("\u201ccopy2(src, dst")
    # nothing the writer wrote holds, so the answer is the fallback's quotations, led by the two
    # that stand for what it wrote, none quoted twice
    assert checked.fallback == "quote" and len(texts) == len(set(texts)) > 2
    spans = [(s.check.passage_id, s.check.span) for s in checked.answer.sentences if s.check]
    assert len(spans) == len(set(spans))
    for s in checked.answer.sentences:
        assert s.check is not None and s.check.verified == "aligned" and s.check.span is not None
        passage = next(p for p in PASSAGES if p.id == s.passage_ids[0])
        assert f"\u201c{passage.text[s.check.span[0] : s.check.span[1]]}\u201d" == s.text
    # the check records what the writer wrote, and where it came from
    assert checked.answer.sentences[1].check.written == ("shutil#1",)  # type: ignore[union-attr]
    assert {s.text for s in checked.answer.dropped} == {w.text for w in written}
    warnings = support_warnings(checked)
    assert warnings[0].endswith("the answer quotes the selected passages instead")
    assert warnings[1].startswith("the quotations are led by 2 quoted in place of sentences")
    # the old policy drops them all: nothing is left, so the answer is the fallback, unled
    dropped = SupportChecker(unsupported="drop").check(draft, PASSAGES)
    assert dropped.fallback == "quote"
    unled = [s.text for s in dropped.answer.sentences]
    assert [t for t in unled if t not in texts[:2]] == texts[2:] and len(unled) > len(texts[2:])


def test_a_quotation_beside_a_sentence_the_writer_wrote_is_no_fallback() -> None:
    passage = PASSAGES[1]
    start = passage.text.index("copy2(")
    written = (
        Citation(passage.text[start:], ("shutil#28",)),  # stated as written: it holds
        Citation("shutil.copy copies data and the mode bits of the file.", ()),
    )
    checked = SupportChecker().check(Draft(ParsedAnswer(Answer(written)), "raw", 2), PASSAGES)
    assert checked.fallback is None
    texts = [s.text for s in checked.answer.sentences]
    assert texts[0] == passage.text[start:] and texts[1].startswith("\u201ccopy(src, dst")


def test_a_span_is_quoted_once() -> None:
    sentences = [
        Citation("copy2 copies data and metadata.", ()),
        Citation("copy2 keeps the metadata of the file.", ()),
    ]
    from covrag.types import SupportCheck

    unsupported = [
        Citation(s.text, s.passage_ids, check=SupportCheck((), "unsupported", 0.0))
        for s in sentences
    ]
    out, replaced = requote(unsupported, PASSAGES)
    quoted = [s for s in out if s.supported]
    assert len(quoted) == 1 and len(replaced) == 1


def test_a_sentence_stated_as_written_is_not_quoted_again_nor_code_replaced() -> None:
    from covrag.types import SupportCheck

    passage = PASSAGES[1]
    start = passage.text.index("copy2(")
    stated = Citation(
        passage.text[start:],
        ("shutil#28",),
        check=SupportCheck(("shutil#28",), "aligned", 1.0, "shutil#28", (start, len(passage.text))),
    )
    paraphrase = Citation(
        "copy2 also copies the metadata of the file.",
        (),
        check=SupportCheck((), "unsupported", 0.0),
    )
    out, replaced = requote([stated, paraphrase], PASSAGES)
    assert replaced == [] and out[1] is paraphrase  # its one quotation is already stated
    code = Citation("char buffer;", (), check=SupportCheck((), "unsupported", 0.0))
    assert best_quote(code.text, PASSAGES, word_weights(PASSAGES)) is None


def test_a_sentence_naming_an_option_is_replaced_by_its_definition() -> None:
    from covrag.generate.requote import defines, definitions
    from covrag.types import SupportCheck

    assert defines("ServerAliveInterval Sets a timeout interval", "ServerAliveInterval")
    assert defines("copy2(src, dst) Copy data and metadata.", "shutil.copy2")
    assert defines("-q, --quiet, --silent Quiet; do not write anything.", "--quiet")
    assert defines("-o ctl_path Specify the control path.", "-o")
    # a name written in passing is no definition, nor one that only begins the same way
    assert not defines(
        "As such, you probably want the ServerAliveInterval option.", "ServerAliveInterval"
    )
    assert not defines("ServerAliveIntervals are sent.", "ServerAliveInterval")
    assert not defines("-qq twice as quiet", "-q")
    # a paraphrase holding too few of the definition's words to be quoted for them
    said = Citation(
        "To keep an SSH session alive, use ServerAliveInterval so that a periodic message "
        "goes to the remote end.",
        (),
        check=SupportCheck((), "unsupported", 0.0),
    )
    assert best_quote(said.text, PASSAGES, word_weights(PASSAGES)) is None
    found = definitions(said.text, PASSAGES)
    assert [(p.id, p.text[a:b]) for p, (a, b) in found] == [
        ("ssh#97", PASSAGES[4].text)  # the whole definition: one sentence
    ]
    out, replaced = requote([said], PASSAGES)
    assert replaced == [said]
    assert out[0].passage_ids == ("ssh#97",) and out[0].text.startswith("\u201cServerAliveInterval")
    assert out[0].check is not None and out[0].check.verified == "aligned"
    # curl's --keepalive-time is not quoted for a sentence that never names it
    assert all(p.id != "curl#137" for p, _ in found)


def test_a_sentence_naming_two_functions_gets_both_definitions_once() -> None:
    from covrag.generate.requote import definitions

    sentence = "shutil.copy2 keeps timestamps while shutil.copy keeps only permission bits."
    found = definitions(sentence, PASSAGES)
    assert [p.id for p, _ in found] == ["shutil#28", "shutil#27"]
    # a definition already in the answer is not quoted again
    taken = {(found[0][0].id, found[0][1])}
    assert [p.id for p, _ in definitions(sentence, PASSAGES, taken)] == ["shutil#27"]


KEEPALIVE = Passage(
    "ssh_config#97",
    "The default is no.\n\n"
    "TCPKeepAlive Specifies whether the system should send TCP keepalive messages to the other "
    "side. If they are sent, death of the connection or crash of one of the machines will be "
    "properly noticed. This option only uses TCP keepalives (as opposed to using ssh level "
    "keepalives), so takes a long time to notice when the connection dies.",
    metadata=SSH,
)


def test_a_quotation_opening_with_a_pronoun_names_its_subject() -> None:
    from covrag.generate.quotes import quotation, quote
    from covrag.generate.requote import named_span

    text = KEEPALIVE.text
    leaning = text.index("This option only")
    span = (leaning, len(text))
    head = text.index("TCPKeepAlive")
    assert named_span(text, span) == (head, len(text))
    # a sentence that names its subject, or one opening its paragraph, is quoted as it is
    named = (head, text.index(" If they"))
    assert named_span(text, named) == named
    assert named_span("It is 0. It counts.", (9, 19)) == (9, 19)
    # a paragraph that leans too, but names the option the sentence points back to (tar's NEWS)
    notes = (
        "This release restores the traditional functionality of the --keep-old-files.  This "
        "option causes tar to avoid replacing existing files while extracting and to treat such "
        "files as errors."
    )
    pointing = notes.index("This option")
    assert named_span(notes, (pointing, len(notes))) == (0, len(notes))
    # ... and one that names nothing the sentence does not is no help
    vague = "This release is faster.  This option causes tar to skip --keep-old-files."
    assert named_span(vague, (25, len(vague))) == (25, len(vague))
    # a paragraph longer than a quotation may be keeps the sentence alone
    long = Passage("x#1", "Name " + "word " * 130 + "end. This is it.", metadata=SSH)
    cut = (long.text.index("This is"), len(long.text))
    assert named_span(long.text, cut) == cut
    # every quoting path builds its quotation so: the fallback's, by sub-question
    asked = Aspect("sq1", "Why does TCP keepalive take a long time to notice a dead connection?")
    quoted = quote(KEEPALIVE, asked)
    assert quoted is not None and quoted.text.startswith("\u201cTCPKeepAlive Specifies")
    assert quoted.check is not None and quoted.check.span == (head, len(text))
    start, end = quoted.check.span
    assert quoted.text == f"\u201c{text[start:end]}\u201d"
    assert quotation(KEEPALIVE, span).text == quoted.text


def test_a_quotation_read_from_its_paragraph_s_start_is_not_quoted_twice() -> None:
    import numpy as np

    from covrag.generate.nearest import _fold
    from covrag.generate.quotes import quotation, quoted_answer
    from covrag.generate.records import WritingContext
    from covrag.types import CoverageMatrix

    text = KEEPALIVE.text
    head = text.index("TCPKeepAlive")
    whole = (head, len(text))
    # the fallback: one sub-question's quotation is the entry's first sentence, the other's the
    # sentence leaning on it, read from the same start: the wider one alone, in the first's place
    asked = (
        Aspect("sq1", "Does the system send TCP keepalive messages to the other side?"),
        Aspect("sq2", "Why does TCP keepalive take a long time to notice a dead connection?"),
    )
    matrix = CoverageMatrix((KEEPALIVE.id,), ("sq1", "sq2"), np.array([[0.9, 0.9]]), threshold=0.5)
    quotes = quoted_answer((KEEPALIVE,), WritingContext(asked, matrix))
    spans = [q.check.span for q in quotes if q.check is not None]
    assert spans == [whole], [q.text for q in quotes]
    # the nearest quotes: a wider quotation takes the place of the kept one it holds
    first = quotation(KEEPALIVE, (head, text.index(" If they")))
    written = Citation("TCP keepalives are slow to notice a dead connection.", (KEEPALIVE.id,))
    kept, added = _fold((written, first), [quotation(KEEPALIVE, (text.index("This"), len(text)))])
    assert added == [] and kept[0] == written
    assert kept[1].check is not None and kept[1].check.span == whole
    # and one a kept quotation holds is not added
    kept, added = _fold(kept, [first])
    assert added == [] and len(kept) == 2


def test_the_same_words_quoted_from_two_overlapping_passages_are_quoted_once() -> None:
    from covrag.generate.nearest import _fold
    from covrag.generate.quotes import quotation, without_contained

    # passages cut with an overlap share text (licences-09: the Apache License's appendix
    # heading, quoted from its chunks #15 and #16 one after the other)
    heading = "APPENDIX: How to apply the Apache License to your work."
    tail = Passage("Apache#15", f"END OF TERMS AND CONDITIONS {heading}")
    head = Passage("Apache#16", f"{heading} To apply the Apache License to your work, attach it.")
    from_head = quotation(head, (0, len(heading)))
    from_tail = quotation(tail, (tail.text.index("APPENDIX"), len(tail.text)))
    assert from_head.text == from_tail.text
    written = Citation("Attach the boilerplate notice to your work.", (head.id,))
    kept, added = _fold((written,), [from_head, from_tail])
    assert kept == (written,) and added == [from_head]
    # a quotation holding another passage's words takes its place
    wider = quotation(head, (0, len(head.text)))
    kept, added = _fold((written, from_tail), [wider])
    assert added == [] and kept == (written, wider)
    assert without_contained((from_tail, from_head)) == (from_tail,)


PROXY = Passage(  # pip's user guide, as the answer benchmark's guides corpus holds it
    "pip-user_guide#4",
    "pip can be configured to connect through a proxy server in various ways:\n\n"
    "* using the ``--proxy`` command-line option to specify a proxy in the form "
    "``scheme://[user:passwd@]proxy.server:port``\n* using ``proxy`` in a config file\n"
    "* by setting the standard environment-variables ``http_proxy``, ``https_proxy`` and "
    "``no_proxy``.\n\nThe current version of pip works on:",
    metadata={"title": "pip-user_guide.rst"},
)


def test_a_sentence_that_ends_with_a_colon_is_quoted_with_what_it_introduces() -> None:
    pieces = [PROXY.text[s:e] for s, e in quote_spans(PROXY.text)]
    # the sentence and its list are one piece: quoted alone it promised "various ways"
    assert pieces[0].startswith("pip can be configured") and pieces[0].endswith("``no_proxy``.")
    # the passage ends at the last colon: what it introduces is not here, so no path that
    # chooses a quotation takes it
    assert pieces[-1] == "The current version of pip works on:"
    aspect = Aspect("sq1", "On which versions does the current version of pip work?")
    span = quote_span(PROXY, aspect, word_weights([PROXY]))
    assert span is not None and not PROXY.text[span[0] : span[1]].endswith(":")
    # a short heading that ends with a colon stays a heading ("Help on module shutil:")
    assert [PASSAGES[0].text[s:e] for s, e in quote_spans(PASSAGES[0].text)][0] == (
        "Help on module shutil:"
    )


def test_a_sentence_that_introduces_a_list_is_quoted_with_the_whole_list() -> None:
    # the Mozilla Public License 2.0, section 2.3, one item a paragraph
    text = (
        "Notwithstanding Section 2.1(b) above, no patent license is granted by a Contributor:\n\n"
        "(a) for any code that a Contributor has removed from Covered Software; or\n\n"
        "(b) for infringements caused by: (i) Your and any other third party's modifications of "
        "Covered Software, or (ii) the combination of its Contributions with other software; or"
        "\n\n(c) under Patent Claims infringed by Covered Software in the absence of its "
        "Contributions.\n\nThis License does not grant any rights in the trademarks."
    )
    pieces = [text[s:e] for s, e in quote_spans(text)]
    assert pieces[0].startswith("Notwithstanding") and pieces[0].endswith("its Contributions.")
    assert pieces[1] == "This License does not grant any rights in the trademarks."
    # an introduction followed by a sentence that is no list item takes that sentence only
    prose = "You can stash the changes, like this:\n\n$ git stash\n\nThen the tree is clean."
    assert [prose[s:e] for s, e in quote_spans(prose)] == [
        "You can stash the changes, like this:\n\n$ git stash",
        "Then the tree is clean.",
    ]


def test_a_heading_after_a_bulleted_list_is_no_item_of_it() -> None:
    # pip's installation guide: the list, then the next section's heading
    text = (
        "Usually, pip is automatically installed if you are:\n\n"
        "* working in a virtual environment\n\n* using Python downloaded from python.org\n\n"
        "Supported Methods\n\nIf your Python environment does not have pip installed, use one."
    )
    pieces = [text[s:e] for s, e in quote_spans(text)]
    assert pieces[0].endswith("downloaded from python.org") and pieces[1] == "Supported Methods"
