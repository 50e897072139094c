from __future__ import annotations

import json

import pytest

from covrag.errors import StructuredOutputError
from covrag.plan.decompose import LLMDecomposer, clean_question, near_duplicates, question_problem
from llm_support import ScriptedLLM, check_failure, tiny_llm


def reply(*questions: str) -> str:
    return json.dumps({"sub_questions": list(questions)})


def test_clean_question_and_problems() -> None:
    assert clean_question(' 1. "Why do cities ban cars?" ') == "Why do cities ban cars?"
    assert clean_question("- What does it cost?") == "What does it cost?"
    assert question_problem("Cars pollute.", "Q?") is not None
    assert "too short" in (question_problem("Why?", "Q?") or "")
    assert "repeats the question" in (
        question_problem("Should cities ban cars?", "should cities ban cars") or ""
    )
    assert question_problem("What does a ban cost shops?", "Should cities ban cars?") is None


def test_invalid_questions_are_retried_with_the_reason() -> None:
    llm = ScriptedLLM(
        [
            reply("Cars pollute the air.", "What does a ban cost?"),
            reply("1. How much do cars pollute?", "What does a ban cost shops?"),
        ]
    )
    result = LLMDecomposer(llm, n=2, dedup=None).decompose("Should cities ban cars?")
    assert result.texts == ("How much do cars pollute?", "What does a ban cost shops?")
    assert [a.id for a in result.aspects] == ["sq1", "sq2"]
    assert all(a.polarity == "neutral" for a in result.aspects)
    assert "is not a question" in llm.requests[1][0][-1].content
    schema = llm.requests[0][1]
    assert schema is not None and schema["properties"]["sub_questions"]["minItems"] == 2


def test_repeats_are_dropped_and_topped_up_once() -> None:
    llm = ScriptedLLM(
        [
            reply("How much do cars pollute?", "How much do cars pollute ?", "Who loses jobs?"),
            reply("What do bans cost shops?"),
        ]
    )
    result = LLMDecomposer(llm, n=3, dedup=None).decompose("Should cities ban cars?")
    assert result.texts == (
        "How much do cars pollute?",
        "Who loses jobs?",
        "What do bans cost shops?",
    )
    assert result.dropped == ("How much do cars pollute ?",)
    assert result.calls == 2
    top_up = llm.requests[1][0][-1].content
    assert "already covered" in top_up and "- Who loses jobs?" in top_up


@pytest.mark.model
def test_near_duplicates_by_embedding() -> None:
    pytest.importorskip("sentence_transformers")
    from covrag.embed import default_encoder

    texts = [
        "How much air pollution do cars cause?",
        "How much do cars pollute the air?",
        "What would a car ban cost local shops?",
    ]
    assert near_duplicates(texts, 0.8, default_encoder()) == [1]
    assert near_duplicates(texts, 0.99, default_encoder()) == []


def test_gives_up_after_the_retries() -> None:
    llm = ScriptedLLM([reply("no question"), reply("still none"), reply("nope")])
    with pytest.raises(StructuredOutputError, match="3 attempts"):
        LLMDecomposer(llm, n=1, dedup=None, retries=2).decompose("Should cities ban cars?")


@pytest.mark.slow
def test_tiny_model_decomposes() -> None:
    llm = tiny_llm()
    decomposer = LLMDecomposer(llm, n=3, dedup=None, max_tokens=160)
    try:
        result = decomposer.decompose("Should cities ban cars from their centres?")
    except StructuredOutputError as exc:
        check_failure(exc, 3)
        assert llm.usage.calls == 3 and llm.usage.retries == 2
        return
    assert 1 <= len(result.aspects) <= 3
    assert all(t.endswith("?") and len(t.split()) >= 3 for t in result.texts)
    assert len(set(result.texts)) == len(result.texts)
    assert llm.usage.calls == result.calls >= 1
