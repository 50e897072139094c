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
