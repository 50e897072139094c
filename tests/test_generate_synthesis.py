"""The synthesising writer: the plan by aspect, its checks, the honest fallback and the checked
rewrite (a scripted LLM for the logic around the model, the tiny real model for the whole)."""

from __future__ import annotations

import json

from covrag.generate import (
    CitedWriter,
    Critic,
    CritiqueRewriteGenerator,
    SynthesisWriter,
    WritingContext,
    copied_share,
    copies,
    plan_parts,
    rewrite_verdict,
)
from covrag.types import Aspect, Passage, Topic
from generate_support import ASPECTS, PASSAGES, KeywordCoverage, tiny_llm_one_thread
from llm_support import ScriptedLLM

QUESTION = "Should schools require uniforms?"
# a4 ("religion") is in no passage: the corpus does not answer it.
WANTED = (*ASPECTS, Aspect("a4", "religion in school"))


def context(aspects: tuple[Aspect, ...] = WANTED) -> WritingContext:
    topic = Topic("q", QUESTION, PASSAGES, aspects)
    return WritingContext(aspects, KeywordCoverage().estimate(topic))


def paragraphs(*items: tuple[int, str, list[int]]) -> str:
    return json.dumps(
        {
            "paragraphs": [
                {"part": part, "sentences": [{"text": text, "cites": cites}]}
                for part, text, cites in items
            ]
        }
    )


def part(*sentences: tuple[str, list[int]]) -> str:
    """One part's reply, as the writer asks for it (one call per part)."""
    return json.dumps({"sentences": [{"text": text, "cites": cites} for text, cites in sentences]})


PARTS = [
    part(("Pupils who dress alike are picked on less.", [1])),
    part(("Families pay for the clothes each year.", [2])),
    part(("Pupils lose a way to show who they are.", [3])),
]
GOOD = paragraphs(
    (1, "Pupils who dress alike are picked on less.", [1]),
    (2, "Families pay for the clothes each year.", [2]),
    (3, "Pupils lose a way to show who they are.", [3]),
)


def test_copy_rate_definition() -> None:
    passage = "Uniforms reduce bullying because nobody stands out."
    assert copied_share("Uniforms reduce bullying because nobody stands out!", passage) == 1.0
    assert copies("uniforms  reduce bullying, because nobody stands out", [passage])
    assert not copies("Pupils who dress alike are picked on less.", [passage])
    assert not copies("", [passage]) and copied_share("x", "") == 0.0
    # A quoted passage behind an attribution is still a copy; a short quote inside own words is not.
    assert copies(f'One source says: "{passage}"', [passage])
    assert not copies('Pupils who dress alike are "picked on" less, one school found.', [passage])


def test_plan_follows_coverage_and_outline_and_names_what_is_missing() -> None:
    parts, missing = plan_parts(PASSAGES, context())
    assert [(p.aspect.id, p.passage_ids) for p in parts] == [
        ("a1", ("p1",)), ("a2", ("p2",)), ("a3", ("p3",)),
    ]  # fmt: skip
    assert [a.id for a in missing] == ["a4"]
    outline = ("What cost do parents bear?", "Can pupils express identity?", "Does bullying fall?")
    parts, _ = plan_parts(PASSAGES, context(), outline)
    assert [p.aspect.id for p in parts] == ["a2", "a3", "a1"]
    excluded = (*ASPECTS[:2], Aspect("a3", "express identity", polarity="exclude"))
    parts, missing = plan_parts(PASSAGES, context(excluded))
    assert [p.aspect.id for p in parts] == ["a1", "a2"] and missing == ()


def test_writes_one_cited_paragraph_per_aspect_and_frames_the_gaps() -> None:
    llm = ScriptedLLM(PARTS, supports_schema=True)
    draft = SynthesisWriter(llm, exclude=["religion"]).write(QUESTION, PASSAGES, context=context())
    prompts = [request[0][-1].content for request in llm.requests]
    assert len(prompts) == 3  # one call per part, each showing only its own passages
    assert "Part 2 of the answer, on the sub-question: cost to parents" in prompts[1]
    assert "[2] Uniforms cost" in prompts[1] and "[1]" not in prompts[1].split("Passages:")[1]
    assert "Do not write about: religion." in prompts[0] and llm.requests[0][1] is not None
    sentences = draft.answer.sentences
    assert [(s.aspect_id, s.passage_ids) for s in sentences[:3]] == [
        ("a1", ("p1",)), ("a2", ("p2",)), ("a3", ("p3",)),
    ]  # fmt: skip
    assert sentences[3].framing and sentences[3].passage_ids == ()
    assert sentences[3].text == 'The selected passages may not answer: "religion in school".'
    assert draft.problems == ()  # the framing sentence is not "uncited"


def test_a_copied_or_uncited_sentence_is_sent_back_then_quoted_honestly() -> None:
    copied = part(("Uniforms reduce bullying because nobody stands out.", [1]))
    uncited = part(("Families pay for the clothes.", [3]))  # cites none of part 2's passages
    llm = ScriptedLLM([copied, copied, uncited, uncited, PARTS[2]], supports_schema=True)
    draft = SynthesisWriter(llm, retries=1).write(QUESTION, PASSAGES, context=context())
    assert "part 1 sentence 1 copies a passage" in llm.requests[1][0][-1].content
    retry = llm.requests[3][0][-1].content
    assert "part 2 sentence 1 cites none of its part's passages [2]" in retry
    texts = [s.text for s in draft.answer.sentences]
    # Part 3 passed its checks and is kept; parts 1 and 2 quote their passage, marked as quotes.
    assert texts[0] == 'One source says: "Uniforms reduce bullying because nobody stands out."'
    assert texts[1].startswith('One source says: "Uniforms cost') and texts[2].startswith("Pupils")
    assert any("part(s) 1, 2 keep the sentences that pass" in p for p in draft.problems)


def test_a_paragraph_that_leaves_a_passage_out_keeps_its_good_sentences() -> None:
    """Failing twice, a paragraph keeps the sentences that pass their own checks, and only the
    passages none of them cites are quoted."""
    both = (ASPECTS[0], Aspect("a2", "money paid by parents"))
    extra = (*PASSAGES[:2], Passage("p4", "Parents spend money on uniforms that wear out."))
    writing = WritingContext(both, KeywordCoverage().estimate(Topic("q", QUESTION, extra, both)))
    left_out = part(("Families pay for the clothes.", [2]), ("See passage [3].", [3]))
    llm = ScriptedLLM([PARTS[0], left_out, left_out], supports_schema=True)
    draft = SynthesisWriter(llm, retries=1).write(QUESTION, extra, context=writing)
    second = [s for s in draft.answer.sentences if s.aspect_id == "a2"]
    assert [(s.text, s.passage_ids) for s in second] == [
        ("Families pay for the clothes.", ("p2",)),
        ('One source says: "Parents spend money on uniforms that wear out."', ("p4",)),
    ]


def test_a_sentence_about_the_passages_or_citing_too_many_is_sent_back() -> None:
    """The small model's way round "cite every passage": one sentence that cites them all and
    says nothing of what they say. Sent back; failing again, the part quotes every passage."""
    three = (*PASSAGES, Passage("p4", "Uniforms make pupils feel equal."),
             Passage("p5", "Bullies pick on clothes."))  # fmt: skip
    topic = Topic("q", QUESTION, three, ASPECTS[:1])
    writing = WritingContext(ASPECTS[:1], KeywordCoverage().estimate(topic))
    parts, _ = plan_parts(three, writing)
    assert len(parts) == 1 and len(parts[0].passage_ids) == 5  # every passage answers a1 best
    vague = part(("Opinion on bullying is mixed, as the passages show.", [1, 2, 3]))
    many = part(("Bullying falls, pupils feel equal, clothes matter.", [1, 2, 3, 4, 5]))
    llm = ScriptedLLM([vague, many], supports_schema=True)
    draft = SynthesisWriter(llm, retries=1).write(QUESTION, three, context=writing)
    retry = llm.requests[1][0][-1].content
    assert "part 1 sentence 1 talks about the passages" in retry
    assert "at most 3 passages per sentence" in llm.requests[0][0][-1].content
    quoted = [s for s in draft.answer.sentences if s.text.startswith("One source says")]
    assert sorted(s.passage_ids[0] for s in quoted) == sorted(parts[0].passage_ids)
    assert any("cites 5 passages" in p for p in draft.problems)


def test_every_passage_of_a_part_is_cited_in_its_paragraph() -> None:
    """A part answered by two passages needs both cited: a paragraph that leaves one out is
    sent back naming it, and the schema allows one sentence per passage of the largest part."""
    both = (ASPECTS[0], Aspect("a2", "money paid by parents"))
    extra = (*PASSAGES[:2], Passage("p4", "Parents spend money on uniforms that wear out."))
    topic = Topic("q", QUESTION, extra, both)
    writing = WritingContext(both, KeywordCoverage().estimate(topic))
    parts, _ = plan_parts(extra, writing)
    assert [p.passage_ids for p in parts][0] == ("p1",)
    assert sorted(parts[1].passage_ids) == ["p2", "p4"]
    one = [2] if parts[1].passage_ids[0] == "p2" else [3]  # p4 is passage [3]
    left_out = part(("Families pay for the clothes.", one))
    fixed = part(("Families pay for the clothes, and they wear out.", [2, 3]))
    llm = ScriptedLLM([PARTS[0], left_out, fixed], supports_schema=True)
    draft = SynthesisWriter(llm, retries=1).write(QUESTION, extra, context=writing)
    retry = llm.requests[2][0][-1].content
    other = 3 if one == [2] else 2
    assert f"part 2 leaves out [{other}]: state what each passage" in retry
    assert draft.answer.sentences[1].passage_ids == ("p2", "p4") and draft.problems == ()
    schema = json.dumps(llm.requests[1][1])
    assert '"maxItems": 3' in schema  # at least 3 sentences per part, 1 per passage beyond


def test_no_context_means_no_model_call_and_a_plain_statement() -> None:
    llm = ScriptedLLM([])
    generator = CritiqueRewriteGenerator(SynthesisWriter(llm), Critic(llm), passes=2)
    result = generator.generate("Should governments tax sugary drinks?", [], context=context())
    (sentence,) = result.answer.sentences
    assert sentence.framing and sentence.text.startswith("The corpus does not answer this question")
    assert llm.requests == [] and result.critiques == ()
    # The extractive writer gets the same answer: no passage, nothing to copy.
    extractive = CritiqueRewriteGenerator(CitedWriter(llm), Critic(llm), passes=1)
    again = extractive.generate("Should governments tax sugary drinks?", [], context=context())
    assert again.answer == result.answer and llm.requests == []


def test_rewrites_are_checked_and_a_worse_one_is_not_kept() -> None:
    failing = paragraphs(
        (1, "Pupils who dress alike are picked on less.", [1]),
        (2, "Families pay for the clothes each year.", [1]),
        (3, "Pupils lose a way to show who they are.", [1]),
    )
    critique = json.dumps({"underused": [], "missing": ""})
    llm = ScriptedLLM([*PARTS, critique, GOOD, critique, failing, failing], supports_schema=True)
    critic = Critic(llm, estimator=KeywordCoverage())
    result = CritiqueRewriteGenerator(SynthesisWriter(llm), critic, passes=2).generate(
        QUESTION, PASSAGES, context=context()
    )
    # Pass 1 repeats the draft: unchanged. Pass 2 fails the checks twice (parts 2 and 3 cite
    # another part's passage) and falls back to quotes: rejected, the draft is kept.
    assert [c.verdict for c in result.critiques] == [
        "unchanged", "rejected: the rewrite failed the writer's checks",
    ]  # fmt: skip
    assert result.drafts[2] == result.drafts[1] and result.answer == result.drafts[0].answer
    assert result.to_json()["critiques"][1]["verdict"].startswith("rejected")
    rewrite_prompt = llm.requests[4][0][-1].content
    assert "Your previous answer:\n(part 1) Pupils who dress alike are picked on less. [1]" in (
        rewrite_prompt
    )


def test_verdicts() -> None:
    replies = ["A [1]. B [2].", "A [1]. B [2].", "A [1]. C [2]. D [3].", "", "A [1]. B [1]."]
    writer = CitedWriter(ScriptedLLM(replies))
    first, same, better, empty, lost = (writer.write(QUESTION, PASSAGES) for _ in range(5))
    assert rewrite_verdict(first, lost) == "rejected: the rewrite lost the citations of p2"
    assert rewrite_verdict(first, same) == "unchanged"
    assert rewrite_verdict(first, better) == "accepted"
    assert rewrite_verdict(first, empty) == "rejected: the rewrite is empty"
    # An uncited sentence is left out of the answer, but still counts against its rewrite.
    uncited = CitedWriter(ScriptedLLM(["A [1]. E [2]. C."])).write(QUESTION, PASSAGES)
    assert uncited.left_out == ("C.",)
    assert rewrite_verdict(first, uncited) == "rejected: the rewrite leaves more sentences uncited"


def test_critique_names_missing_sub_questions_by_their_text() -> None:
    llm = ScriptedLLM(
        [part(("Dressing alike cuts bullying.", [1])), '{"underused": [], "missing": ""}'],
        supports_schema=True,
    )
    only_a1 = WritingContext(ASPECTS, context().coverage)
    draft = SynthesisWriter(llm).write(QUESTION, PASSAGES[:1], context=only_a1)
    critique = Critic(llm, estimator=KeywordCoverage()).critique(QUESTION, PASSAGES, draft, only_a1)
    assert '- The answer does not address "cost to parents", which passages [2] answer.' in (
        critique.feedback
    )
    assert "never cites passages [2], [3]" in critique.feedback


def test_tiny_model_answers_honestly_whatever_it_writes() -> None:
    llm = tiny_llm_one_thread()
    writer = SynthesisWriter(llm, max_tokens=160, retries=0)
    draft = writer.write(QUESTION, PASSAGES, context=context())
    known = {p.id for p in PASSAGES}
    sentences = draft.answer.sentences
    assert sentences and all(set(s.passage_ids) <= known for s in sentences)
    # Every sentence cites a passage or is the writer's framing, marked as such.
    assert all(s.passage_ids or s.framing for s in sentences)
    assert sentences[-1].framing and "religion in school" in sentences[-1].text
    assert {s.aspect_id for s in sentences if not s.framing} == {"a1", "a2", "a3"}


def test_the_extractive_writer_also_names_what_no_passage_answers() -> None:
    from covrag.generate.citations import render_answer

    llm = ScriptedLLM(["Uniforms cut bullying [1]."])
    draft = CitedWriter(llm).write(QUESTION, PASSAGES, context=context())
    last = draft.answer.sentences[-1]
    assert last.framing
    assert last.text == 'The selected passages may not answer: "religion in school".'
    assert draft.problems == ()
    # Prompts show the model its own sentences only, never the writer's framing.
    assert render_answer(draft.answer, ["p1", "p2", "p3"]) == "Uniforms cut bullying [1]."
