"""Answer sketches: statements an answer to a sub-question would make (covrag.plan.sketch)."""

from __future__ import annotations

import json

import pytest

from covrag.errors import ConfigError, StructuredOutputError
from covrag.plan.sketch import AnswerSketcher, sketch_problem
from covrag.types import Aspect, Topic
from llm_support import ScriptedLLM, check_failure, tiny_llm


def answers(*texts: str) -> str:
    return json.dumps({"answers": list(texts)})


def test_sketch_problems() -> None:
    assert sketch_problem("Do shops lose sales?", "Q?") is not None
    assert "too short" in (sketch_problem("Shops lose.", "Q?") or "")
    assert "longer than" in (sketch_problem("word " * 31, "Q?") or "")
    assert "repeats the question" in (
        sketch_problem("Car bans hurt shops", "car bans hurt shops?") or ""
    )
    assert sketch_problem("Shops in the centre lose customers.", "Do car bans hurt shops?") is None


def test_unusable_sketches_are_dropped_and_repeats_kept_once() -> None:
    llm = ScriptedLLM(
        [
            answers(
                "Shops lose customers.", "Do shops lose?", " shops  lose customers ", "Cafes gain."
            )
        ]
    )
    found = AnswerSketcher(llm, n=4).sketch("Do car bans hurt shops?", "Should cities ban cars?")
    assert found == ("Shops lose customers.",)  # a question, a repeat and a two-word reply go
    messages, schema = llm.requests[0]
    assert schema is not None and schema["properties"]["answers"]["maxItems"] == 4
    prompt = messages[-1].content
    assert "Main question: Should cities ban cars?" in prompt
    assert "Sub-question: Do car bans hurt shops?" in prompt
    assert '{"answers": ["TV stations' in prompt  # the worked example, braces written once


def test_a_reply_without_any_statement_is_retried_with_the_reason() -> None:
    llm = ScriptedLLM([answers("Do shops lose?"), answers("Shops in the centre lose sales.")])
    assert AnswerSketcher(llm, n=2).sketch("Do car bans hurt shops?") == (
        "Shops in the centre lose sales.",
    )
    assert "is a question, not a statement" in llm.requests[1][0][-1].content
    with pytest.raises(StructuredOutputError, match="no valid answer in 1 attempts"):
        AnswerSketcher(ScriptedLLM([answers("Why?")]), retries=0).sketch("Do bans hurt shops?")
    with pytest.raises(ConfigError, match="n must be"):
        AnswerSketcher(llm, n=0)


def test_only_wanted_questions_without_sketches_are_sketched() -> None:
    llm = ScriptedLLM([answers("Shops in the centre lose sales.")])
    aspects = (
        Aspect("q", "Do car bans hurt shops?"),
        Aspect("s", "Car bans cut pollution."),  # a statement: scored as it is
        Aspect("x", "Do car bans raise rents?", polarity="exclude"),
        Aspect("given", "Do bans help cyclists?", answers=("Cyclists feel safer.",)),
    )
    topic = Topic("t", "Should cities ban cars?", (), aspects)
    sketched = AnswerSketcher(llm).apply(topic)
    assert [a.answers for a in sketched.aspects] == [
        ("Shops in the centre lose sales.",),
        (),
        (),
        ("Cyclists feel safer.",),
    ]
    assert len(llm.requests) == 1


@pytest.mark.slow
def test_tiny_model_sketches_answers() -> None:
    llm = tiny_llm()
    try:
        found = AnswerSketcher(llm, n=2).sketch(
            "Do car bans hurt shops?", "Should cities ban cars?"
        )
    except StructuredOutputError as exc:
        check_failure(exc, 3)
        return
    assert 1 <= len(found) <= 2
    assert all(sketch_problem(text, "Do car bans hurt shops?") is None for text in found)


def test_the_answers_sources_sketch_the_gold_aspects_and_keep_the_excluded_ones() -> None:
    from covrag.plan.sources import AspectOptions, build_aspect_sources

    llm = ScriptedLLM(
        [answers("Shops in the centre lose sales."), answers("Why?")] + [answers("How?")] * 2
    )
    sources = build_aspect_sources(["gold", "gold+answers"], AspectOptions(answers=1), lambda: llm)
    aspects = (
        Aspect("q", "Do car bans hurt shops?"),
        Aspect("r", "Do car bans cut smog?"),  # no usable sketch in 3 attempts: kept without
        Aspect("x", "Do car bans raise rents?", polarity="exclude"),
    )
    topic = Topic("t", "Should cities ban cars?", (), aspects)
    assert sources["gold"].apply(topic) is topic
    sketched = sources["gold+answers"].apply(topic)
    assert [(a.id, a.answers) for a in sketched.aspects] == [
        ("q", ("Shops in the centre lose sales.",)),
        ("r", ()),
        ("x", ()),
    ]
    assert sketched.aspects[2].polarity == "exclude" and not llm.replies


def test_a_sketch_that_copies_the_prompts_example_is_refused() -> None:
    from covrag.plan.sketch import EXAMPLE

    assert "copies the example" in (sketch_problem(EXAMPLE[0], "Do car bans hurt shops?") or "")
