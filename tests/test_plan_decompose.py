from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from covrag.errors import ConfigError, StructuredOutputError
from covrag.plan.decompose import (
    LLMDecomposer,
    clean_question,
    near_duplicates,
    question_problem,
    representative,
)
from llm_support import ScriptedLLM, check_failure, items_reply, tiny_llm


def reply(*questions: str) -> str:
    return items_reply(*questions)


def test_clean_question_and_problems() -> None:
    assert clean_question(' 1. "Why do cities ban cars?" ') == "Why do cities ban cars?"
    assert clean_question("- What does it cost?") == "What does it cost?"
    assert clean_question("What does it cost??") == "What does it cost?"
    assert question_problem("Cars pollute.", "Q?") is not None
    assert "too short" in (question_problem("Why?", "Q?") or "")
    assert "repeats the question" in (
        question_problem("Should cities ban cars?", "should cities ban cars") or ""
    )
    assert question_problem("What does a ban cost shops?", "Should cities ban cars?") is None


def test_asks_for_more_candidates_than_needed_with_their_factors() -> None:
    llm = ScriptedLLM([reply("How much do cars pollute?", "What does a ban cost shops?")])
    result = LLMDecomposer(llm, n=2, dedup=None).decompose("Should cities ban cars?")
    assert result.texts == ("How much do cars pollute?", "What does a ban cost shops?")
    assert [a.id for a in result.aspects] == ["sq1", "sq2"]
    assert [a.metadata["factor"] for a in result.aspects] == ["How much do", "What does a"]
    assert all(a.polarity == "neutral" for a in result.aspects)
    schema = llm.requests[0][1]
    assert schema is not None
    assert schema["properties"]["items"]["minItems"] == 2
    assert schema["properties"]["items"]["maxItems"] == 3  # ceil(1.5 n) candidates
    assert "List 3 distinct factors" in llm.requests[0][0][-1].content


def test_the_points_style_asks_for_specific_claims_and_tops_up_in_its_words() -> None:
    llm = ScriptedLLM(
        [reply("Do car bans cut smog?", "No question"), reply("Do car bans hurt shops?")]
    )
    result = LLMDecomposer(llm, n=2, candidates=2, dedup=None, style="points").decompose(
        "Should cities ban cars?"
    )
    assert result.texts == ("Do car bans cut smog?", "Do car bans hurt shops?")
    first, top_up = (request[0][-1].content for request in llm.requests)
    assert "List 2 distinct points" in first and "yes/no question" in first
    assert '{"factor": "local shops"' in first  # the worked example, braces written once
    assert "These points are already covered" in top_up
    with pytest.raises(ConfigError, match="style must be one of factors, points"):
        LLMDecomposer(llm, style="claims")


def test_unusable_candidates_are_dropped_and_only_an_unusable_reply_is_retried() -> None:
    llm = ScriptedLLM(
        [
            reply("Cars pollute the air.", "Should cities ban cars?"),
            reply("1. How much do cars pollute?", "No question here", "What do bans cost shops?"),
        ]
    )
    result = LLMDecomposer(llm, n=2, dedup=None).decompose("Should cities ban cars?")
    assert result.texts == ("How much do cars pollute?", "What do bans cost shops?")
    assert result.dropped == ("No question here",)
    assert result.calls == 2
    feedback = llm.requests[1][0][-1].content
    assert "no usable sub-question" in feedback and "is not a question" in feedback


def test_repeats_are_dropped_and_topped_up_once() -> None:
    llm = ScriptedLLM(
        [
            reply("How much do cars pollute?", "How much do cars pollute ?", "Who loses jobs?"),
            reply("What do bans cost shops?"),
        ]
    )
    result = LLMDecomposer(llm, n=3, candidates=3, dedup=None).decompose("Should cities ban cars?")
    assert result.texts == (
        "How much do cars pollute?",
        "Who loses jobs?",
        "What do bans cost shops?",
    )
    assert result.dropped == ("How much do cars pollute ?",)
    assert result.calls == 2
    top_up = llm.requests[1][0][-1].content
    assert "already covered" in top_up and "- Who loses jobs?: Who loses jobs?" in top_up
    schema = llm.requests[1][1]
    assert schema is not None and schema["properties"]["items"]["minItems"] == 1


def test_without_an_encoder_the_first_n_are_kept_and_the_rest_spare() -> None:
    llm = ScriptedLLM([reply("How much do cars pollute?", "Who loses jobs?", "What do shops pay?")])
    result = LLMDecomposer(llm, n=2, dedup=None).decompose("Should cities ban cars?")
    assert result.texts == ("How much do cars pollute?", "Who loses jobs?")
    assert result.spare == ("What do shops pay?",)


def test_representative_keeps_the_rows_that_stand_for_the_others() -> None:
    # rows 0 and 1 are one cluster, 2 and 3 another, 4 an outlier near cluster 2
    vectors = np.array([[1, 0, 0], [0.99, 0.14, 0], [0, 1, 0], [0, 0.99, 0.14], [0, 0.8, 0.6]])
    vectors = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    assert representative(vectors, 5) == [0, 1, 2, 3, 4]
    two = representative(vectors, 2)
    assert len(two) == 2 and two[0] in (0, 1) and two[1] in (2, 3)


def test_a_cached_llm_reruns_without_redoing_the_selection(tmp_path: Path) -> None:
    from covrag.llm.cache import CachedLLM, ResponseCache

    first = reply("How much do cars pollute?", "Who loses jobs?")
    cached = CachedLLM(ScriptedLLM([first, first]), ResponseCache(tmp_path / "llm.sqlite"))
    decomposer = LLMDecomposer(cached, n=2, dedup=None)
    result = decomposer.decompose("Should cities ban cars?")
    memos = cached.cache.memo_keys()  # kept in the response cache, the one cache of LLM results
    assert len(memos) == 1 and memos[0].startswith("decompose:")
    assert not (tmp_path / "decompose").exists()
    again = LLMDecomposer(cached, n=2, dedup=None).decompose("Should cities ban cars?")
    assert again == result and again.aspects[0].metadata["factor"] == "How much do"
    # other settings (here n) do not reuse the memo
    other = LLMDecomposer(cached, n=1, dedup=None, candidates=2)
    assert other.decompose("Should cities ban cars?").texts == ("How much do cars pollute?",)
    cached.cache.put_memo(memos[0], {"kept": 3})  # a damaged memo is ignored, not fatal
    assert LLMDecomposer(cached, n=2, dedup=None).decompose("Should cities ban cars?") == result


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
    decomposer = LLMDecomposer(llm, n=3, dedup=None)
    try:
        result = decomposer.decompose("Should cities ban cars from their centres?")
    except StructuredOutputError as exc:
        check_failure(exc, 3)
        # 3 failed attempts, after a first reply with some usable question when a top-up failed
        assert 3 <= llm.usage.calls <= 6 and llm.usage.retries >= 2
        return
    assert 1 <= len(result.aspects) <= 3
    assert all(t.endswith("?") and len(t.split()) >= 3 for t in result.texts)
    assert len(set(result.texts)) == len(result.texts)
    assert llm.usage.calls == result.calls >= 1
