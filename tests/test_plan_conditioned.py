from __future__ import annotations

import json

import pytest

from covrag.errors import ConfigError, StructuredOutputError
from covrag.plan.conditioned import C2Query, split_request
from llm_support import ScriptedLLM, check_failure, tiny_llm


def test_explicit_query_and_its_aspects() -> None:
    query = C2Query.explicit(
        "Describe Jaws", include=["production", "production"], exclude=["reviews"]
    )
    assert query.include == ("production",) and query.exclude == ("reviews",)
    assert query.request == "Describe Jaws. Make sure to cover: production. Leave out: reviews."
    aspects = query.aspects()
    assert [(a.id, a.polarity) for a in aspects] == [("inc1", "include"), ("exc1", "exclude")]
    assert query.conditioned and "must leave out: reviews" in query.instruction()
    assert not C2Query.explicit("Describe Jaws").conditioned
    with pytest.raises(ConfigError, match="both to include and exclude"):
        C2Query.explicit("x y", include=["Reviews"], exclude=["reviews"])
    with pytest.raises(ConfigError, match="non-empty base"):
        C2Query.explicit("  ")


def test_split_retries_a_contradiction() -> None:
    bad = {"base_query": "Describe the film Jaws", "include": ["reviews"], "exclude": ["reviews"]}
    good = {"base_query": "Describe the film Jaws", "include": [], "exclude": ["critics' reviews"]}
    llm = ScriptedLLM([json.dumps(bad), json.dumps(good)])
    request = "Describe the film Jaws. I already know how critics received it, so skip reviews."
    query = split_request(llm, request)
    assert query.base == "Describe the film Jaws" and query.exclude == ("critics' reviews",)
    assert query.request == request
    assert "cannot be both included and excluded" in llm.requests[1][0][-1].content


def split(base: str, include: list[str], exclude: list[str]) -> str:
    return json.dumps({"base_query": base, "include": include, "exclude": exclude})


def test_a_missed_skip_instruction_and_invented_subtopics_are_shown_to_the_model() -> None:
    request = "Describe the film Jaws. I already know how critics received it, so skip reviews."
    llm = ScriptedLLM(
        [
            split("Describe the film Jaws", [], []),
            split("Describe the film Jaws", ["shark attacks"], ["reviews"]),
            split("Describe the film Jaws", [], ["reviews"]),
        ]
    )
    query = split_request(llm, request)
    assert query.exclude == ("reviews",) and query.include == ()
    assert 'the request says "I already know how critics received it, so skip reviews"' in (
        llm.requests[1][0][-1].content
    )
    assert "['shark attacks'] are not in the request" in llm.requests[2][0][-1].content
    # the prompt carries worked examples
    assert "leave that out" in llm.requests[0][0][-1].content


def test_when_the_model_keeps_missing_it_the_first_well_formed_split_is_kept() -> None:
    request = "Tell me about Marie Curie's life, but I don't need details of her Nobel prizes."
    kept = split("Tell me about Marie Curie's life, but I don't need details", [], ["Nobel prizes"])
    llm = ScriptedLLM(["not json", kept, kept])
    query = split_request(llm, request, retries=2)
    assert query.base == "Tell me about Marie Curie's life"  # the instruction is cut off
    assert query.exclude == ("Nobel prizes",)
    # a cue word that belongs to the topic: nothing to skip, and never an error
    llm = ScriptedLLM([split("Is it healthy to skip breakfast?", [], [])] * 3)
    assert split_request(llm, "Is it healthy to skip breakfast?").exclude == ()
    # a missed skip first, then splits that skip "reviews" but invent subtopics: the one that
    # skips is kept, without the invented ones
    jaws = "Describe the film Jaws. I already know how critics received it, so skip reviews."
    llm = ScriptedLLM(
        [
            split("Describe the film Jaws", [], []),
            split("Describe the film Jaws", ["plot summary", "director"], ["reviews"]),
            split("Describe the film Jaws", ["special effects"], ["reviews"]),
        ]
    )
    query = split_request(llm, jaws)
    assert query.exclude == ("reviews",) and query.include == ()
    # no reply ever skips anything: the object of an explicit "skip X" outside a question is used
    llm = ScriptedLLM([split("Describe the film Jaws", [], [])] * 3)
    query = split_request(llm, jaws)
    assert query.exclude == ("reviews",) and query.include == ()
    feedback = llm.requests[1][0][-1].content
    assert '"I already know how critics received it, so skip reviews"' in feedback
    # nothing well-formed at all: the error lists every reply
    with pytest.raises(StructuredOutputError, match="3 attempts"):
        split_request(ScriptedLLM(["no", "no", "no"]), request)


@pytest.mark.slow
def test_tiny_model_splits_a_request() -> None:
    llm = tiny_llm()
    request = "Describe the film Jaws. I already know how critics received it, so skip reviews."
    try:
        query = split_request(llm, request)
    except StructuredOutputError as exc:
        check_failure(exc, 3)
        return
    assert query.request == request and len(query.base.split()) >= 2
    assert not {i.lower() for i in query.include} & {e.lower() for e in query.exclude}
