"""The citation check: alignment with exact spans, repair of mis-pointed citations, the support
judge (the real shipped cross-encoder), the policy for unsupported sentences and the fallback."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from covrag.coverage.base import CoverageEstimator
from covrag.errors import ConfigError
from covrag.generate import (
    CitedWriter,
    CritiqueRewriteGenerator,
    SupportChecker,
    SynthesisWriter,
    WritingContext,
    support_warnings,
)
from covrag.generate.alignment import align, sentence_spans
from covrag.generate.answer_coverage import answer_coverage
from covrag.generate.citations import ParsedAnswer
from covrag.generate.quotes import quoted_answer
from covrag.generate.records import Draft
from covrag.generate.support import JUDGE_THRESHOLD
from covrag.types import (
    Answer,
    Aspect,
    Citation,
    CoverageMatrix,
    Passage,
    SupportCheck,
    Topic,
)
from generate_support import ASPECTS, PASSAGES, KeywordCoverage
from llm_support import ScriptedLLM

QUESTION = "Should schools require uniforms?"

LONG = (
    Passage("p1", "Many schools ask for uniforms. Uniforms reduce bullying because nobody stands "
            "out in the playground."),
    Passage("p2", "Uniforms cost parents a lot of money every single year, families say."),
    Passage("p3", "Critics argue that uniforms limit how students express their identity."),
    Passage("p4", "Some schools let pupils choose their own clothes on Fridays."),
)  # fmt: skip


@dataclasses.dataclass(frozen=True, repr=False)
class NoSupport(CoverageEstimator):
    """A judge that finds no paraphrase anywhere (the logic around the judge, not the judge)."""

    name = "none"

    def estimate(self, topic: Topic) -> CoverageMatrix:
        probs = np.zeros((len(topic.passages), len(topic.aspects)))
        return CoverageMatrix(topic.passage_ids, topic.aspect_ids, probs)


def test_alignment_spans_are_exact_and_paraphrase_is_not_aligned() -> None:
    text = LONG[0].text
    for sentence, expected in (
        ("Uniforms reduce bullying because nobody stands out in the playground.",
         "Uniforms reduce bullying because nobody stands out in the playground"),
        ("uniforms REDUCE bullying, because nobody stands out!",  # case and punctuation
         "Uniforms reduce bullying because nobody stands out"),
        # one word changed: most content words, so the passage sentence holding them
        ("Uniforms cut bullying because nobody stands out in the playground.",
         "Uniforms reduce bullying because nobody stands out in the playground."),
        ('One source says: "Many schools ask for uniforms."', "Many schools ask for uniforms"),
    ):  # fmt: skip
        found = align(sentence, text)
        assert found is not None, sentence
        assert text[found.span[0] : found.span[1]] == expected
    assert align("Pupils are picked on less when everyone dresses the same.", text) is None
    assert align("Uniforms reduce costs.", text) is None  # two shared words are not a copy
    # a sentence naming the passage's document is aligned without the name
    named = "The Annual School Report says uniforms reduce bullying because nobody stands out."
    assert align(named, text) is None and align(named, text, "Annual School Report") is not None
    # sentence spans cover the text's sentences exactly
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "Many schools ask for uniforms.",
        "Uniforms reduce bullying because nobody stands out in the playground.",
    ]


def test_a_reply_that_copies_passage_n_and_cites_n_plus_1_ends_with_the_right_citations() -> None:
    # What Qwen2.5-Coder-1.5B did in the user test: sentence i copies passage i, cites i + 1.
    reply = "\n".join(
        [
            "Uniforms reduce bullying because nobody stands out in the playground [2].",
            "Uniforms cost parents a lot of money every single year [3].",
            "Critics argue that uniforms limit how students express their identity [4].",
        ]
    )
    generator = CritiqueRewriteGenerator(
        CitedWriter(ScriptedLLM([reply])), passes=0, checker=SupportChecker(NoSupport())
    )
    draft = generator.generate(QUESTION, LONG).drafts[0]
    sentences = draft.answer.sentences
    assert [s.passage_ids for s in sentences] == [("p1",), ("p2",), ("p3",)]
    assert [s.check.written for s in sentences if s.check] == [("p2",), ("p3",), ("p4",)]
    by_id = {p.id: p for p in LONG}
    for sentence in sentences:
        check = sentence.check
        assert check is not None and check.verified == "aligned" and check.repaired
        assert check.passage_id is not None and check.span is not None
        held = by_id[check.passage_id].text[check.span[0] : check.span[1]]
        assert held and held in sentence.text  # the span is the copied text itself
    assert draft.answer.dropped == () and draft.fallback is None
    assert any("3 sentence(s) cited no passage, or passages that do not support" in w for w in
               support_warnings(draft))  # fmt: skip


def test_a_reply_citing_nothing_falls_back_to_quotes_or_a_refusal() -> None:
    reply = "School dress codes are a matter of public debate.\nThe weather is mild in spring."
    topic = Topic("t", QUESTION, PASSAGES, ASPECTS)
    context = WritingContext(ASPECTS, KeywordCoverage().estimate(topic))
    quoted = CritiqueRewriteGenerator(
        CitedWriter(ScriptedLLM([reply])), passes=0, checker=SupportChecker(NoSupport())
    ).generate(QUESTION, PASSAGES, context=context)
    final = quoted.drafts[-1]
    assert final.fallback == "quote"
    assert [s.text for s in final.answer.dropped] == [
        "School dress codes are a matter of public debate.",
        "The weather is mild in spring.",
    ]
    by_id = {p.id: p for p in PASSAGES}
    # one quotation per passage, grouped by the sub-question it covers, each an exact span
    assert [(s.aspect_id, s.passage_ids) for s in final.answer.sentences] == [
        ("a1", ("p1",)), ("a2", ("p2",)), ("a3", ("p3",)),
    ]  # fmt: skip
    for s in final.answer.sentences:
        assert s.check is not None and s.check.span is not None and s.check.passage_id
        span_text = by_id[s.check.passage_id].text[s.check.span[0] : s.check.span[1]]
        assert s.text == f"\u201c{span_text}\u201d"
    assert any("quotes the selected passages" in w for w in support_warnings(final))
    assert any("quotes the selected passages" in p for p in final.problems)

    refused = CritiqueRewriteGenerator(
        CitedWriter(ScriptedLLM([reply])),
        passes=0,
        checker=SupportChecker(NoSupport(), fallback="refuse"),
    ).generate(QUESTION, PASSAGES, context=context)
    answer = refused.answer
    assert len(answer.sentences) == 1 and answer.sentences[0].framing
    assert "No answer is given" in answer.sentences[0].text and len(answer.dropped) == 2
    assert support_warnings(refused.drafts[-1]) == (
        "no sentence of the model's answer is supported by a passage: no answer is given",
    )


def test_unsupported_sentences_are_dropped_or_kept_marked() -> None:
    sentences = (
        Citation("Uniforms reduce bullying because nobody stands out in the playground.", ("p2",)),
        Citation("The weather is mild in spring.", ("p1",)),
        Citation("The corpus does not answer: cost.", (), framing=True),
    )
    draft = Draft(ParsedAnswer(Answer(sentences)), "raw", 3)
    dropped = SupportChecker(NoSupport(), complete=0).check(draft, LONG)
    assert [s.text for s in dropped.answer.sentences] == [sentences[0].text, sentences[2].text]
    assert [s.text for s in dropped.answer.dropped] == ["The weather is mild in spring."]
    assert dropped.answer.sentences[1].check is None  # framing is the writer's, never checked
    marked = SupportChecker(NoSupport(), unsupported="mark", complete=0).check(draft, LONG)
    assert [s.check.verified if s.check else None for s in marked.answer.sentences] == [
        "aligned", "unsupported", None,
    ]  # fmt: skip
    assert marked.answer.sentences[1].passage_ids == ("p1",)  # as written, and marked
    assert any("marked" in w for w in support_warnings(marked))
    with pytest.raises(ConfigError, match="unsupported"):
        SupportChecker(NoSupport(), unsupported="keep")
    with pytest.raises(ConfigError, match="fallback"):
        SupportChecker(NoSupport(), fallback="guess")


def test_by_default_only_alignment_supports_and_no_judge_is_loaded() -> None:
    checker = SupportChecker()
    assert checker.judge is None and checker.threshold is None
    passages = (Passage("e1", "Curfews keep young people off the streets at night."),)
    copied = Citation("Curfews keep young people off the streets at night.", ("e1",))
    paraphrase = Citation("A curfew means fewer teenagers outside after dark.", ("e1",))
    kept, dropped = checker.check_sentences([copied, paraphrase], passages)
    assert kept.check is not None and kept.check.verified == "aligned"
    assert dropped.check is not None and dropped.check.verified == "unsupported"


@pytest.mark.model
def test_the_shipped_cross_encoder_judges_a_paraphrase_and_re_points_it() -> None:
    # the shipped coverage cross-encoder as the support judge, when asked for
    checker = SupportChecker(threshold=JUDGE_THRESHOLD)
    passages = (
        Passage("e1", "Curfews keep young people off the streets at night, which cuts the "
                "number of crimes committed by teenagers."),
        Passage("e2", "Taxes on sugary drinks raise money for public health programmes."),
    )  # fmt: skip
    # paraphrases (no passage holds their words), each citing the wrong passage
    paraphrase = Citation("Keeping teens home at night means fewer juvenile offences.", ("e2",))
    other = Citation("Sugar taxes fund health services.", ("e1",))
    off_topic = Citation("The weather in Paris is mild in spring.", ("e1",))
    assert all(align(s.text, p.text) is None for s in (paraphrase, other) for p in passages)
    probs = checker._scores([paraphrase.text, other.text, off_topic.text], passages)
    judged, repointed, unsupported = checker.check_sentences(
        [paraphrase, other, off_topic], passages
    )
    assert judged.check is not None and judged.check.verified == "judged"
    assert judged.passage_ids == ("e1",) and judged.check.written == ("e2",)
    assert judged.check.score == pytest.approx(probs[0, 0], abs=1e-6)
    assert probs[0, 0] >= checker.threshold > probs[0, 1]
    assert repointed.passage_ids == ("e2",) and repointed.check is not None
    assert repointed.check.verified == "judged" and repointed.check.repaired
    assert unsupported.check is not None and unsupported.check.verified == "unsupported"
    assert unsupported.check.score < checker.threshold
    span = judged.check.span
    assert span is not None and passages[0].text[span[0] : span[1]] == passages[0].text


def test_answer_coverage_needs_a_supported_sentence_citing_a_covering_passage() -> None:
    matrix = CoverageMatrix(("p1", "p2", "p3"), ("a1", "a2", "a3"), np.eye(3) * 0.9, threshold=0.5)
    held = SupportCheck(("p1",), "aligned", 1.0, "p1", (0, 10))
    answer = (
        Citation("Bullying falls.", ("p1",), check=held),
        Citation("Unchecked claim on cost.", ("p2",)),  # not checked: states nothing
    )
    rows = answer_coverage(Answer(answer), matrix, ASPECTS, ["p1", "p2"])
    assert [(r.aspect_id, r.in_context, r.in_answer) for r in rows] == [
        ("a1", True, True), ("a2", True, False), ("a3", False, False),
    ]  # fmt: skip
    assert rows[0].answer_sentences == (0,) and rows[1].context_passages == ("p2",)


def test_quoted_answer_without_sub_questions_quotes_every_passage_once() -> None:
    quotes = quoted_answer(LONG, None)
    assert [q.passage_ids for q in quotes] == [(p.id,) for p in LONG]
    assert quotes[0].text == "\u201cMany schools ask for uniforms.\u201d"
    # two passages cut with an overlap hold the same sentence: it is quoted once
    twin = Passage("twin", f"{LONG[0].text} More follows here in a longer text.")
    again = quoted_answer((LONG[0], twin), None)
    assert [q.text for q in again] == ["\u201cMany schools ask for uniforms.\u201d"]


def test_the_writers_show_document_titles_and_ask_to_name_documents() -> None:
    titled = tuple(
        dataclasses.replace(p, metadata={"title": title, "doc_id": title[:3]})
        for p, title in zip(LONG[:2], ("School Survey 2024", "Parents' Budget Report"), strict=True)
    )
    llm = ScriptedLLM(["Uniforms cost parents a lot of money every single year [2]."])
    CitedWriter(llm).write(QUESTION, titled)
    prompt = llm.requests[0][0][-1].content
    assert '[1] (from "School Survey 2024") Many schools' in prompt
    assert '[2] (from "Parents\' Budget Report") Uniforms cost' in prompt
    assert "say which one it belongs to" in prompt
    llm = ScriptedLLM(["Uniforms cost parents money [1]."])
    CitedWriter(llm).write(QUESTION, titled[:1])  # one document: nothing to tell apart
    assert "which one it belongs to" not in llm.requests[0][0][-1].content
    # the synthesising writer's part prompts name the documents too
    topic = Topic("t", QUESTION, titled, ASPECTS[:2])
    context = WritingContext(ASPECTS[:2], KeywordCoverage().estimate(topic))
    reply = '{"sentences": [{"text": "Families pay each year.", "cites": [2]}]}'
    llm = ScriptedLLM([reply, reply], supports_schema=True)
    SynthesisWriter(llm, retries=0).write(QUESTION, titled, context=context)
    assert any('(from "Parents\' Budget Report")' in r[0][-1].content for r in llm.requests)


def test_checks_and_dropped_sentences_round_trip_through_the_run_file_schema() -> None:
    from covrag.errors import DataError
    from covrag.schema._base import read_model
    from covrag.schema.answer import RunAnswer
    from covrag.schema.runfile import dump

    held = SupportCheck(("p2",), "aligned", 0.9, "p1", (31, 100))
    answer = Answer(
        (Citation("Uniforms reduce bullying.", ("p1",), "a1", check=held),),
        (Citation("Made up.", ("p3",), check=SupportCheck(("p3",), "unsupported", 0.1)),),
    )
    written = dump(RunAnswer.of(answer))
    assert written["sentences"][0]["check"] == {
        "cited_as_written": ["p2"], "verified": "aligned", "score": 0.9,
        "passage_id": "p1", "span": [31, 100],
    }  # fmt: skip
    assert read_model(RunAnswer, written).to_answer() == answer
    written["sentences"][0]["check"]["span"] = [5, 5]
    with pytest.raises(DataError, match="start < end"):
        read_model(RunAnswer, written)
    written["sentences"][0]["check"]["verified"] = "guessed"
    with pytest.raises(DataError, match="verified"):
        read_model(RunAnswer, written)


def test_a_sentence_naming_a_document_is_supported_only_by_that_documents_passages() -> None:
    from covrag.generate.attribution import named_documents

    said = "Each Contributor hereby grants to You a perpetual, worldwide, free patent license"
    grant = f"{said}."
    passages = (
        Passage("a#1", grant, metadata={"doc_id": "Apache-2.0.txt", "title": "Apache-2.0"}),
        Passage("m#1", "Covered Software is provided under this License on an as is basis.",
                metadata={"doc_id": "MPL-2.0.txt", "title": "MPL-2.0"}),
        Passage("x#1", "The artistic freedom of a Package author is kept.",
                metadata={"doc_id": "Artistic.txt", "title": "Artistic"}),
    )  # fmt: skip
    checker = SupportChecker(judge=NoSupport())
    right, wrong, plain = checker.check_sentences(
        [
            Citation(f"Under the Apache-2.0, {said.lower()}.", ("m#1",)),
            Citation(f"The MPL-2.0 says: {said}.", ("a#1",)),  # Apache's words, MPL's name
            Citation(f"{said}.", ("m#1",)),  # names no document: any passage may hold it
        ],
        passages,
    )
    assert right.check is not None and right.check.verified == "aligned"
    assert right.passage_ids == ("a#1",)  # re-pointed to the document it names
    assert wrong.check is not None and wrong.check.verified == "unsupported"
    assert plain.check is not None and plain.check.verified == "aligned"
    assert plain.passage_ids == ("a#1",)
    # names match as whole words; a one-word plain name must match its case
    assert named_documents("the artistic merit of the MPL-2.0's text", passages) == {"MPL-2.0"}
    assert named_documents("Under the Artistic License", passages) == {"Artistic"}
    assert named_documents("an MPL-2.0x licence", passages) == frozenset()
    # a versioned name as prose spells it, and not another version
    assert named_documents("The Apache License, Version 2.0 grants it", passages) == {"Apache-2.0"}
    assert named_documents("Apache License 2.01 and Apache 1.1", passages) == frozenset()
    spelled = Citation(f"The Mozilla MPL version 2 says: {said}.", ("a#1",))
    assert named_documents(spelled.text, passages) == frozenset()  # MPL-2.0 is not MPL 2
    apache = Citation(f"The Apache License 2.0 says: {said}.", ("m#1",))
    (held,) = checker.check_sentences([apache], passages)
    assert held.passage_ids == ("a#1",)


def test_a_versioned_name_written_without_its_version_names_the_document() -> None:
    from covrag.generate.attribution import named_documents

    notice = (
        "You must include the notice in the Source form or documentation, if provided along "
        "with the Derivative Works"
    )
    passages = (
        Passage("a#10", f"{notice}.", metadata={"source": "Apache-2.0.txt"}),
        Passage("g#6", "The Program is any work.", metadata={"source": "GPL-3.txt"}),
        Passage("l#1", "This library is free software.", metadata={"source": "LGPL-2.1.txt"}),
    )  # fmt: skip
    # as the 1.5B writer wrote it over the Apache License's NOTICE clause (licences-05)
    gpl = Citation(f"The GPL also requires that {notice[9:]}.", ("a#10",))
    (checked,) = SupportChecker(judge=NoSupport()).check_sentences([gpl], passages)
    assert checked.check is not None and checked.check.verified == "unsupported"
    assert named_documents(gpl.text, passages) == {"GPL-3.txt"}
    # the LGPL is not the GPL, and a version after the letters names another document
    assert named_documents("Under the LGPL the library stays free.", passages) == {"LGPL-2.1.txt"}
    assert named_documents("GPL version 2 says so.", passages) == frozenset()
    assert named_documents("Apache License 2.01 and Apache 1.1", passages) == frozenset()


def test_a_cross_reference_copied_from_a_passage_keeps_that_passage_as_support() -> None:
    # ssh_config's own text names ssh(1): a sentence copying it names ssh, and is still held
    # by ssh_config's passage, not only by the ssh page's
    said = (
        "ServerAliveInterval sets a timeout interval in seconds after which ssh(1) will send a "
        "message through the encrypted channel"
    )
    passages = (
        Passage("c#1", f"{said} to request a response from the server.",
                metadata={"doc_id": "ssh_config.txt", "title": "ssh_config"}),
        Passage("s#1", "ssh connects and logs into the specified destination.",
                metadata={"doc_id": "ssh.txt", "title": "ssh"}),
        Passage("k#1", "--keepalive-time sets the idle time before keepalive probes.",
                metadata={"doc_id": "curl.txt", "title": "curl"}),
    )  # fmt: skip
    checker = SupportChecker(judge=NoSupport())
    copied, borrowed = checker.check_sentences(
        [
            Citation(f"{said}.", ("c#1",)),
            # curl's words given to ssh: curl's passage does not name ssh, so it cannot hold it
            Citation("In ssh, --keepalive-time sets the idle time before keepalive probes.",
                     ("k#1",)),
        ],
        passages,
    )  # fmt: skip
    assert copied.check is not None and copied.check.verified == "aligned"
    assert copied.passage_ids == ("c#1",)
    assert borrowed.check is not None and borrowed.check.verified == "unsupported"


def test_options_and_setting_names_must_be_written_in_the_cited_document() -> None:
    def doc(pid: str, name: str, text: str) -> Passage:
        return Passage(pid, text, metadata={"doc_id": name, "title": name})

    passages = (
        doc("t#1", "tar", "-c, --create Create a new archive. Arguments supply the names of "
                          "the files to be archived."),
        doc("t#2", "tar", "-z, --gzip Filter the archive through gzip. -f, --file=ARCHIVE "
                          "Use archive file ARCHIVE."),
        doc("t#3", "tar", "--exclude=PATTERN Exclude files matching PATTERN."),
        doc("g#1", "git-stash", "git stash apply Like pop, but do not remove the state from "
                                "the stash list."),
    )  # fmt: skip
    from covrag.generate.support import held_names

    by_id = {p.id: p for p in passages}
    held = SupportCheck(("t#1",), "judged", 0.9, "t#1", (0, 10))
    combined = held_names(
        Citation("Run tar -czf out.tgz --exclude=PATTERN dir.", ("t#1",), check=held),
        passages,
        by_id,
    )
    # -c is in t#1; -z and -f (of -czf) in t#2, --exclude in t#3: each part cited
    assert combined.supported and combined.passage_ids == ("t#1", "t#2", "t#3")
    stash = SupportCheck(("g#1",), "judged", 0.9, "g#1", (0, 10))
    invented = held_names(
        Citation("Run git stash apply --index-only to restore them.", ("g#1",), check=stash),
        passages,
        by_id,
    )
    assert invented.check is not None and invented.check.verified == "unsupported"
    # another document's option is not borrowed: tar's -z does not hold a git sentence
    borrowed = held_names(
        Citation("Run git stash apply -z.", ("g#1",), check=stash), passages, by_id
    )
    assert not borrowed.supported
    # through the checker: an aligned sentence whose names its passage writes stays as it is
    checker = SupportChecker(judge=NoSupport())
    (aligned,) = checker.check_sentences(
        [Citation("-c, --create Create a new archive.", ("t#1",))], passages
    )
    assert aligned.supported and aligned.passage_ids == ("t#1",)


def test_a_span_two_sub_questions_would_quote_is_quoted_once() -> None:
    one = Passage("p1", "Uniforms cost parents money every year.")
    # the keyword judge: both sub-questions' first word is in the passage, so both cover it
    same = (Aspect("a1", "Uniforms cost what?"), Aspect("a2", "Uniforms cost parents what?"))
    topic = Topic("t", QUESTION, (one,), same)
    context = WritingContext(same, KeywordCoverage().estimate(topic))
    quotes = quoted_answer((one,), context)
    assert [q.text for q in quotes if not q.framing] == [
        "\u201cUniforms cost parents money every year.\u201d"
    ]


def test_a_document_named_in_a_sentence_is_not_a_name_its_passage_must_write() -> None:
    from covrag.generate.support import held_names

    passage = Passage(
        "c#1",
        "ServerAliveInterval Sets a timeout interval in seconds.",
        metadata={"source": "/docs/ssh_config.5.txt", "doc_id": "ssh_config.5.txt"},
    )
    check = SupportCheck(("c#1",), "judged", 0.9, "c#1", (0, 5))
    sentence = Citation("Set ServerAliveInterval in the ssh_config file.", ("c#1",), check=check)
    assert held_names(sentence, [passage], {"c#1": passage}).supported
    other = Citation("Set ServerAliveCountMax in ssh_config.", ("c#1",), check=check)
    assert not held_names(other, [passage], {"c#1": passage}).supported


def test_a_short_written_answer_is_completed_by_the_passages_quotations() -> None:
    reply = (
        "Uniforms reduce bullying because nobody stands out [1].\n"
        "The weather is mild in spring [2]."
    )
    topic = Topic("t", QUESTION, PASSAGES, ASPECTS)
    context = WritingContext(ASPECTS, KeywordCoverage().estimate(topic))

    def checked(checker: SupportChecker) -> Draft:
        generator = CritiqueRewriteGenerator(
            CitedWriter(ScriptedLLM([reply])), passes=0, checker=checker
        )
        return generator.generate(QUESTION, PASSAGES, context=context).drafts[-1]

    written = "Uniforms reduce bullying because nobody stands out."
    short = checked(SupportChecker(complete=0))
    assert [s.text for s in short.answer.sentences] == [written]
    full = checked(SupportChecker(complete=3))
    assert full.fallback is None and full.answer.sentences[0].text == written
    # then the fallback's quotation of each other sub-question's passage, cited, an exact span;
    # p1's sentence, which the written one states, is not quoted again
    quoted = full.answer.sentences[1:]
    assert [(s.aspect_id, s.passage_ids) for s in quoted] == [("a2", ("p2",)), ("a3", ("p3",))]
    by_id = {p.id: p for p in PASSAGES}
    for s in quoted:
        assert s.check is not None and s.check.span is not None
        start, end = s.check.span
        assert s.text == f"\u201c{by_id[s.passage_ids[0]].text[start:end]}\u201d"
    assert [s.text for s in full.answer.dropped] == ["The weather is mild in spring."]
    assert any("keeps 1 sentence(s) the model wrote" in w for w in support_warnings(full))
    # an answer keeping as many of the model's sentences as asked is left as it is, and a
    # checker that refuses instead of quoting never quotes
    assert len(checked(SupportChecker(complete=1)).answer.sentences) == 1
    assert len(checked(SupportChecker(fallback="refuse", complete=3)).answer.sentences) == 1
    with pytest.raises(ConfigError, match="complete"):
        SupportChecker(complete=-1)
