"""The context sentences nearest the question, added to a checked answer as quotations
(:mod:`covrag.generate.nearest`), with the packaged MiniLM encoder; the writer is scripted."""

from __future__ import annotations

import pytest

from covrag.errors import ConfigError
from covrag.generate import CitedWriter, CritiqueRewriteGenerator, NearestQuotes, SupportChecker
from covrag.generate.citations import InvalidCitation, ParsedAnswer
from covrag.generate.records import Draft, support_warnings
from covrag.types import Answer, Citation, Passage, SupportCheck
from llm_support import ScriptedLLM

QUESTION = "How do I keep an SSH connection from timing out when idle?"
CONFIG = Passage(
    "ssh_config#1",
    "ServerAliveCountMax Sets the number of server alive messages which may be sent without "
    "ssh receiving any messages back from the server. ServerAliveInterval Sets a timeout "
    "interval in seconds after which, if no data has been received from the server, ssh will "
    "send a message to request a response, keeping the connection from timing out when idle.",
)
OTHER = Passage(
    "ssh#2",
    "The -v option prints debugging messages about the progress of ssh. Multiple -v options "
    "increase the verbosity, up to three of them.",
)
PASSAGES = (CONFIG, OTHER)
WRITTEN = (
    "ServerAliveCountMax sets the number of server alive messages which may be sent without "
    "ssh receiving any messages back from the server."
)


def checked_draft(*sentences: Citation, fallback: str | None = None) -> Draft:
    return Draft(ParsedAnswer(Answer(sentences)), "raw", 3, checked=True, fallback=fallback)


def written(text: str = WRITTEN, passage: Passage = CONFIG) -> Citation:
    start = passage.text.lower().index(text[:30].lower())
    check = SupportCheck((passage.id,), "aligned", 1.0, passage.id, (start, start + len(text)))
    return Citation(text, (passage.id,), check=check)


def test_the_sentence_nearest_the_question_is_added_quoted_and_cited() -> None:
    draft = NearestQuotes(1).add(QUESTION, checked_draft(written()), PASSAGES)
    first, added = draft.answer.sentences
    assert first.text == WRITTEN
    assert added.text.startswith("\u201cServerAliveInterval Sets a timeout interval")
    assert added.passage_ids == (CONFIG.id,)
    assert added.check is not None and added.check.verified == "aligned"
    start, end = added.check.span or (0, 0)
    assert f"\u201c{CONFIG.text[start:end]}\u201d" == added.text  # an exact span of the passage
    assert any("1 quotation(s) added" in w for w in support_warnings(draft))


def test_what_the_answer_states_already_is_not_added_again() -> None:
    draft = NearestQuotes(5).add(QUESTION, checked_draft(written()), PASSAGES)
    texts = [s.text for s in draft.answer.sentences]
    assert texts[0] == WRITTEN
    assert not any("ServerAliveCountMax Sets the number" in t for t in texts[1:])
    # the other sentence near the question; ssh(1)'s -v sentences are under the least cosine
    assert len(texts) == 2 and texts[1].startswith("\u201cServerAliveInterval")
    everything = NearestQuotes(5, least=-1.0).add(QUESTION, checked_draft(written()), PASSAGES)
    texts = [s.text for s in everything.answer.sentences]
    assert len(texts) == 4  # the three other sentences of the context, each once
    assert len(set(texts)) == len(texts)
    with pytest.raises(ConfigError, match="least must lie"):
        NearestQuotes(3, least=2.0)


def test_quotations_go_before_a_closing_framing_sentence_and_citations_follow_them() -> None:
    framing = Citation("The corpus does not answer: the server side.", (), framing=True)
    parsed = ParsedAnswer(Answer((written(), framing)), (InvalidCitation(1, 9),))
    draft = Draft(parsed, "raw", 3, checked=True)
    out = NearestQuotes(2, least=-1.0).add(QUESTION, draft, PASSAGES)
    sentences = out.answer.sentences
    assert sentences[-1] is framing and len(sentences) == 4
    assert out.parsed.invalid == (InvalidCitation(3, 9),)


def test_nothing_is_added_to_a_refusal_an_unchecked_draft_or_with_quotes_zero() -> None:
    refusal = Citation("No answer is given.", (), framing=True)
    unsupported = Citation(
        "Use curl.", (CONFIG.id,), check=SupportCheck((CONFIG.id,), "unsupported", 0.0)
    )
    cases = [
        (NearestQuotes(3), checked_draft(refusal, fallback="refuse")),
        (NearestQuotes(3), checked_draft(unsupported)),
        (NearestQuotes(3), Draft(ParsedAnswer(Answer((written(),))), "raw", 3)),
        (NearestQuotes(0), checked_draft(written())),
    ]
    for adder, draft in cases:
        assert adder.add(QUESTION, draft, PASSAGES) is draft
    with pytest.raises(ConfigError, match="quotes must be >= 0"):
        NearestQuotes(-1)


def test_the_generator_adds_them_to_every_checked_draft() -> None:
    llm = ScriptedLLM([f"{WRITTEN} [1]"])
    generator = CritiqueRewriteGenerator(
        CitedWriter(llm), passes=0, checker=SupportChecker(complete=0), nearest=NearestQuotes(2)
    )
    result = generator.generate(QUESTION, PASSAGES)
    sentences = result.drafts[-1].answer.sentences
    assert sentences[0].text == WRITTEN and sentences[0].check is not None
    assert sentences[0].check.verified == "aligned"
    assert sentences[1].text.startswith("\u201cServerAliveInterval")
    assert len(sentences) == 2  # the -v sentences are not near the question


def test_the_fallback_quotations_are_led_by_the_nearest() -> None:
    start = OTHER.text.index("Multiple")
    check = SupportCheck((), "aligned", 1.0, OTHER.id, (start, len(OTHER.text)))
    quoted = Citation(f"\u201c{OTHER.text[start:]}\u201d", (OTHER.id,), check=check)
    draft = NearestQuotes(1).add(QUESTION, checked_draft(quoted, fallback="quote"), PASSAGES)
    first, second = draft.answer.sentences
    assert first.text.startswith("\u201cServerAliveInterval") and second is quoted
    assert any("1 quotation(s) added before the quotations" in w for w in support_warnings(draft))


def test_a_heading_is_never_quoted_as_an_answer_sentence() -> None:
    from covrag.generate.quotes import quoted_answer

    # licences-06's answer quoted five such lines; each is the sentence nearest a question
    # about the GPL's versions, and none states anything
    question = "How does version 3 of the GNU General Public License treat patents?"
    licence = Passage(
        "GPL-3#1",
        "GNU GENERAL PUBLIC LICENSE Version 3, 29 June 2007\n\n"
        "Each contributor grants you a non-exclusive, worldwide, royalty-free patent license "
        "under the contributor's essential patent claims.",
    )
    heading = "GNU GENERAL PUBLIC LICENSE Version 3, 29 June 2007"
    draft = NearestQuotes(3, least=-1.0).add(question, checked_draft(written()), (licence,))
    quoted = [s.text for s in draft.answer.sentences[1:]]
    assert quoted and all(heading not in text for text in quoted), quoted
    assert quoted[0].startswith("\u201cEach contributor grants you")
    # nor by the fallback's quotations
    assert all(heading not in s.text for s in quoted_answer((licence,), None))


def test_a_faq_s_question_is_never_quoted_as_an_answer_sentence() -> None:
    from covrag.generate.quotes import quoted_answer

    # the FAQs corpus: 24 of 91 quotations were the FAQs' own questions, nearest the user's
    question = "Why does xz use only one or two cores when I ask it for many threads?"
    faq = Passage(
        "xz-faq#17",
        "Q:  I told xz to use many threads but it is using only one or two processor cores. "
        "What is wrong?\n\n"
        "A:  Since multi-threaded compression is done by splitting the data into blocks that "
        "are compressed individually, if the input file is too small for the block size, then "
        "many threads cannot be used.",
    )
    draft = NearestQuotes(3, least=-1.0).add(question, checked_draft(written()), (faq,))
    quoted = [s.text for s in draft.answer.sentences[1:]]
    assert quoted and all("Q:" not in t and not t.rstrip("\u201d").endswith("?") for t in quoted)
    assert quoted[0].startswith("\u201cA:  Since multi-threaded compression")
    assert all("Q:" not in s.text for s in quoted_answer((faq,), None))
