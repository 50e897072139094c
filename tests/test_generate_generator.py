"""Cited generation and critique-and-rewrite: the scripted LLM for the edge cases around the model,
the real tiny model (SmolLM2 through xllamacpp) for the whole loop."""

from __future__ import annotations

import dataclasses
import json

import pytest

from covrag.errors import ConfigError
from covrag.generate import (
    CitedWriter,
    Critic,
    CritiqueContext,
    CritiqueRewriteGenerator,
    truncate_words,
)
from covrag.types import Passage
from generate_support import ASPECTS, PASSAGES, KeywordCoverage, tiny_llm_one_thread
from llm_support import ScriptedLLM

QUESTION = "Should schools require uniforms?"
FULL = "Uniforms cut bullying [1]. Parents bear the cost [2]. Pupils cannot express themselves [3]."
CRITIQUE = json.dumps({"underused": [3], "missing": "Self-expression is left out."})


def coverage_of_context() -> CritiqueContext:
    from covrag.types import Topic

    topic = Topic("q", QUESTION, PASSAGES, ASPECTS)
    return CritiqueContext(ASPECTS, KeywordCoverage().estimate(topic))


def test_first_answer_numbers_passages_truncates_them_and_parses_citations() -> None:
    long = Passage("p4", " ".join(f"w{i}" for i in range(300)))
    llm = ScriptedLLM(["Uniforms cut bullying [1]. Parents pay [2]."])
    draft = CitedWriter(llm, max_words=250).write(QUESTION, [*PASSAGES, long])
    prompt = llm.requests[0][0][-1].content
    assert "[1] Uniforms reduce bullying" in prompt and "[4] w0 w1" in prompt
    assert "w249 ..." in prompt and "w250" not in prompt
    assert "about 12 sentences" in prompt and "Cite only passages 1 to 4" in prompt
    assert [s.passage_ids for s in draft.answer.sentences] == [("p1",), ("p2",)]
    assert draft.problems == () and draft.cost.calls == 1 and draft.cost.prompt_tokens == 3
    assert truncate_words("a b c", 2) == "a b ..." and truncate_words(" a  b ", None) == "a  b"


def test_no_citations_invalid_citations_and_empty_answers_are_reported() -> None:
    writer = CitedWriter(ScriptedLLM(["Uniforms are debated.", "Made up [7]. Real [1][9].", " "]))
    uncited = writer.write(QUESTION, PASSAGES)  # nothing cited: kept as written, and said
    assert uncited.problems == ("no sentence cites a passage",)
    assert [s.text for s in uncited.answer.sentences] == ["Uniforms are debated."]
    invalid = writer.write(QUESTION, PASSAGES)
    # "Made up" cites only a passage that does not exist: it is left out, not stated.
    assert [(s.text, s.passage_ids) for s in invalid.answer.sentences] == [("Real.", ("p1",))]
    assert invalid.left_out == ("Made up.",) and invalid.uncited == 1
    assert [(c.sentence, c.number) for c in invalid.parsed.invalid] == [(0, 9)]
    assert any("[9]" in p and "do not exist" in p for p in invalid.problems)
    assert any("left out" in p and "'Made up.'" in p for p in invalid.problems)
    empty = writer.write(QUESTION, PASSAGES)
    assert empty.answer.sentences == ()
    assert empty.problems == ("the model returned an empty answer",)


def test_writer_rejects_an_empty_or_duplicated_context() -> None:
    writer = CitedWriter(ScriptedLLM([]))
    with pytest.raises(ConfigError, match="at least one passage"):
        writer.write(QUESTION, [])
    with pytest.raises(ConfigError, match="twice"):
        writer.write(QUESTION, [PASSAGES[0], PASSAGES[0]])


def test_rewrite_loop_points_at_unused_passages_and_missing_aspects() -> None:
    llm = ScriptedLLM(
        [
            "Uniforms cut bullying [1].",  # first answer: p2 and p3 never cited
            CRITIQUE,
            FULL,
            json.dumps({"underused": [], "missing": ""}),
            FULL,
        ]
    )
    critic = Critic(llm, mode="pointers", estimator=KeywordCoverage())
    generator = CritiqueRewriteGenerator(CitedWriter(llm), critic, passes=2)
    steps: list[str] = []
    result = generator.generate(
        QUESTION, PASSAGES, context=coverage_of_context(), on_step=steps.append
    )
    assert steps == ["write", "critique 1", "rewrite 1", "critique 2", "rewrite 2"]
    assert len(result.drafts) == 3 and len(result.critiques) == 2
    first = result.critiques[0]
    assert first.llm_underused == ("p3",) and first.never_cited == ("p2", "p3")
    # "cost" and "express" are in the context (p2, p3) but not in the answer "Uniforms cut
    # bullying": the keyword estimator finds a2 and a3 missing and points at p2 and p3.
    assert first.missing_aspects == ("a2", "a3")
    assert dict(first.pointers) == {"a2": ("p2",), "a3": ("p3",)}
    assert "under-uses passages [3]" in first.feedback
    assert "never cites passages [2], [3]" in first.feedback
    assert "Passages [2], [3] make points" in first.feedback
    rewrite_prompt = llm.requests[2][0][-1].content
    assert "about 18 sentences" in rewrite_prompt
    assert "Your previous answer:\nUniforms cut bullying [1]." in rewrite_prompt
    assert first.feedback in rewrite_prompt
    assert result.drafts[1].answer.sentences[2].passage_ids == ("p3",)
    # Nothing left to point at in pass 2.
    assert result.critiques[1].feedback == "" and result.critiques[1].never_cited == ()
    assert result.cost.calls == 5
    record = result.to_json()
    assert len(record["drafts"]) == 3 and record["critiques"][0]["pointers"]["a2"] == ["p2"]


def test_feedback_modes() -> None:
    answer = "Uniforms cut bullying [1]."
    context = CritiqueContext(
        ASPECTS,
        coverage_of_context().coverage,
        labels={"p1": frozenset({"a1"}), "p2": frozenset({"a2"}), "p3": frozenset()},
    )

    def critique(mode: str) -> str:
        llm = ScriptedLLM([answer, CRITIQUE])
        draft = CitedWriter(llm).write(QUESTION, PASSAGES)
        critic = Critic(llm, mode=mode, estimator=KeywordCoverage())
        return critic.critique(QUESTION, PASSAGES, draft, context).feedback

    assert critique("self").splitlines() == [
        "- A reviewer says the answer under-uses passages [3].",
        "- The reviewer's note: Self-expression is left out.",
    ]
    # Gold labels: only a2 (in p2) is in the context and missing from the answer.
    assert "- Passages [2] make points" in critique("oracle-pointers")
    assert "- The answer misses this point: cost to parents [2]" in critique("oracle-nuggets")
    with pytest.raises(ConfigError, match="feedback mode"):
        Critic(ScriptedLLM([]), mode="nuggets")


def test_an_unusable_critique_is_skipped_not_fatal() -> None:
    llm = ScriptedLLM(["Uniforms cut bullying [1].", "not json", "still not json", "Better [1]."])
    critic = Critic(llm, mode="pointers", estimator=None, retries=1)
    result = CritiqueRewriteGenerator(CitedWriter(llm), critic, passes=1).generate(
        QUESTION, PASSAGES
    )
    assert result.critiques[0].llm_underused == ()
    assert result.critiques[0].feedback == "- The answer never cites passages [2], [3]."
    assert result.answer.sentences[0].text == "Better."


def test_passes_need_a_critic() -> None:
    with pytest.raises(ConfigError, match="need a critic"):
        CritiqueRewriteGenerator(CitedWriter(ScriptedLLM([])), None, passes=1)
    result = CritiqueRewriteGenerator(CitedWriter(ScriptedLLM(["A [1]."])), None, passes=0)
    assert len(result.generate(QUESTION, PASSAGES).drafts) == 1


def test_tiny_model_writes_critiques_and_rewrites() -> None:
    llm = tiny_llm_one_thread()
    writer = CitedWriter(llm, sentences=2, rewrite_sentences=3, max_tokens=48)
    critic = Critic(llm, estimator=KeywordCoverage(), max_tokens=40, retries=0)
    generator = CritiqueRewriteGenerator(writer, critic, passes=1)
    result = generator.generate(QUESTION, PASSAGES, context=coverage_of_context())
    assert len(result.drafts) == 2 and len(result.critiques) == 1
    known = {p.id for p in PASSAGES}
    for draft in result.drafts:
        assert draft.raw.strip() and draft.cost.completion_tokens > 0
        assert all(set(s.passage_ids) <= known for s in draft.answer.sentences)
        assert all(not 1 <= c.number <= 3 for c in draft.parsed.invalid)
    assert result.cost.calls >= 2 and result.cost.prompt_tokens > 100


def test_outline_and_exclusions_guide_the_first_answer_and_every_rewrite() -> None:
    llm = ScriptedLLM(["Uniforms cut bullying [1].", CRITIQUE, FULL])
    writer = CitedWriter(llm, exclude=["religion"])
    generator = CritiqueRewriteGenerator(writer, Critic(llm, mode="self"), passes=1)
    outline = ("How uniforms affect bullying", "What uniforms cost")
    result = generator.generate(QUESTION, PASSAGES, outline=outline)
    assert result.outline == outline
    write_prompt, rewrite_prompt = llm.requests[0][0][-1].content, llm.requests[2][0][-1].content
    for prompt in (write_prompt, rewrite_prompt):
        assert "Follow this outline" in prompt
        assert "1. How uniforms affect bullying\n2. What uniforms cost" in prompt
        assert "Do not write about: religion." in prompt
    assert "outline" not in llm.requests[1][0][-1].content  # the critique reads no outline


def test_a_rewrite_may_write_only_so_much_more_than_its_draft() -> None:
    """A rewrite's token cap follows the draft's length per sentence (a looping rewrite stops
    there), and is 1.5 x max_tokens when the draft tells nothing (cut off)."""
    llm = ScriptedLLM([FULL, CRITIQUE, FULL])
    writer = CitedWriter(llm, rewrite_sentences=18, max_tokens=800)
    generator = CritiqueRewriteGenerator(writer, Critic(llm, mode="self"), passes=1)
    generator.generate(QUESTION, PASSAGES)
    # The scripted draft spent 2 tokens on 3 sentences: 2 / 3 * 18 * 1.25 + 32 < the floor, 64.
    assert [p.max_tokens for p in llm.params_seen] == [800, 300, 64]
    llm.replies.append("A [1].")
    draft = writer.write(QUESTION, PASSAGES[:1])
    assert writer.rewrite_scale(draft) == (2 * 18 * 1.25 + 32) / 800  # 2 tokens, 1 sentence
    assert writer.rewrite_scale(dataclasses.replace(draft, cut_off=True)) == 1.5


def test_a_critic_given_the_writers_system_prompt_reuses_the_drafts_prefix() -> None:
    """The critique starts as the draft did (system prompt, question, passages), so the tiny
    model restores that prefix from its prompt cache instead of reading the passages again."""
    llm = tiny_llm_one_thread()
    passages = [
        Passage(f"q{i}", f"Passage {i} says that uniforms matter. " + "Schools differ. " * 30)
        for i in range(3)
    ]
    writer = CitedWriter(llm, sentences=2, max_tokens=16)
    draft = writer.write(QUESTION, passages)
    shared = Critic(llm, mode="self", max_tokens=24, retries=0, system_prompt=writer.system_prompt)
    before = llm.usage.reused_prompt_tokens
    shared.llm_critique(QUESTION, passages, draft)
    reused = llm.usage.reused_prompt_tokens - before
    assert reused > 200  # the system prompt, the question and the passages


def test_a_rewrites_problems_are_logged_as_the_rewrites(caplog: pytest.LogCaptureFixture) -> None:
    """A rejected rewrite's problems are not the answer's: the log names the rewrite, so that the
    screen does not say the answer quotes the passages when the kept draft is the model's."""
    from covrag.generate import SupportChecker

    first = "Uniforms reduce bullying because nobody stands out [1]."
    llm = ScriptedLLM([first, CRITIQUE, "The moon is made of green cheese [2]."])
    generator = CritiqueRewriteGenerator(
        CitedWriter(llm), Critic(llm, mode="self"), passes=1, checker=SupportChecker(complete=0)
    )
    with caplog.at_level("WARNING", logger="covrag"):
        result = generator.generate(QUESTION, PASSAGES)
    assert result.critiques[0].verdict.startswith("rejected")
    assert result.drafts[-1] is result.drafts[0] and result.drafts[0].fallback is None
    messages = [r.getMessage() for r in caplog.records]
    unsupported = "no sentence of the model's answer is supported by a passage"
    assert any(
        m.startswith("rewrite 1 of the answer to 3 passages: " + unsupported) for m in messages
    )
    assert not any(m.startswith("answer to 3 passages: " + unsupported) for m in messages)
    assert any(m.startswith("pass 1: rejected") for m in messages)
