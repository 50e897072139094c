"""The one path to a context (covrag.pipeline.context.choose) and the policy record of its
defaults."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from covrag.errors import ConfigError
from covrag.integrations._engine import CoverageChoice
from covrag.pipeline import (
    ANSWER,
    ASK,
    INTEGRATIONS,
    SELECT,
    AskConfig,
    ContextPolicy,
)
from covrag.pipeline.context import choose, estimate_context, pick_context, refine
from covrag.plan import ASPECT_SOURCES, AspectOptions, C2Query, PlannerAspects
from covrag.selectors.base import parse_selector
from covrag.types import Aspect, Passage, Topic
from generate_support import KeywordCoverage
from llm_support import ScriptedLLM

QUESTION = "Should schools require uniforms?"
ASPECTS = (Aspect("sq1", "bullying at school"), Aspect("sq2", "cost of uniforms"))
PASSAGES = (
    Passage("p1", "bullying falls when pupils wear the same clothes", score=3.0),
    Passage("p2", "the cost of a uniform is a burden for poor families", score=2.0),
    Passage("p3", "the weather was mild all winter", score=1.0),
)
TOPIC = Topic("t", QUESTION, PASSAGES, ASPECTS)


def test_each_entry_point_starts_from_its_preset() -> None:
    config = AskConfig()
    assert config.policy() == ASK  # AskConfig's defaults are the preset's
    assert (config.k, config.floor, config.gate, config.subquestions, config.answers) == (
        12,
        0.5,
        0.5,
        4,
        0,
    )
    assert (config.aspect_source, config.passes, config.sentences) == ("grounded", 0, 6)
    assert SELECT.k == 10 and SELECT.relevance == "dense" and SELECT.floor == 0.0
    choice = CoverageChoice()
    assert (choice.k, choice.aspects, choice.relevance) == (5, "pool", "auto")
    assert (INTEGRATIONS.k, INTEGRATIONS.aspects, INTEGRATIONS.relevance) == (5, "pool", "auto")
    assert (ANSWER.floor, ANSWER.gate, ANSWER.relevance) == (ASK.floor, ASK.gate, "order")
    # budgeted keeps the preset's budget only when neither limit is given
    assert SELECT.budgeted(None, None).k == 10
    assert SELECT.budgeted(None, 300).budget().max_passages is None
    with pytest.raises(ConfigError):
        ContextPolicy(k=0).budget()


def test_choose_runs_aspects_estimate_filter_select_and_times_each_step() -> None:
    policy = dataclasses.replace(
        SELECT, selector="greedy-coverage", relevance="score", k=3, floor=0.5
    )
    chosen = choose(TOPIC, policy, estimator=KeywordCoverage())
    # the floor drops p3 (it answers no aspect): fewer than k, never padding
    assert chosen.selection.passage_ids == ("p1", "p2")
    assert chosen.filters.pool == 3 and chosen.filters.kept == 2
    assert set(chosen.seconds) >= {"aspects", "estimate", "filter", "select"}
    assert chosen.coverage is not None and chosen.coverage.probs.shape == (3, 2)
    assert all(p.tokens is not None for p in chosen.topic.passages)


def test_a_named_aspect_source_replaces_the_topic_aspects() -> None:
    policy = dataclasses.replace(SELECT, selector="greedy-coverage", aspects="query", k=1)
    chosen = choose(TOPIC, policy, estimator=KeywordCoverage())
    assert [a.id for a in chosen.topic.aspects] == ["query"]
    assert not chosen.topic.labels  # the labels name the gold aspects; measures read those


def test_floor_and_gate_are_filters_over_what_the_estimate_step_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The gate reads the embeddings computed while preparing: filtering and selecting call no
    model (a second filter pass with other settings encodes nothing)."""
    policy = dataclasses.replace(ASK, aspects=None, gate=0.3, filters="passages")
    estimated = estimate_context(TOPIC, policy, estimator=KeywordCoverage())
    assert estimated.candidates.embeddings is not None  # prepared for the gate

    def no_model(*args: object, **kwargs: object) -> None:
        raise AssertionError("a model ran after the estimate step")

    monkeypatch.setattr("covrag.embed.default_encoder", no_model)
    chosen = pick_context(estimated, policy)
    assert "p3" not in chosen.selection.passage_ids
    stricter = dataclasses.replace(policy, gate=0.99, gate_margin=0.0)  # a fixed gate
    again = refine(
        estimated.topic,
        estimated.candidates,
        parse_selector("expected-coverage"),
        None,
        stricter,
    )
    assert again.filters.kept == 0 and again.filters.reason() is not None
    # relative to a weak best passage, the same gate keeps the passages near it
    relative = refine(
        estimated.topic,
        estimated.candidates,
        parse_selector("expected-coverage"),
        None,
        dataclasses.replace(stricter, gate_margin=0.1),
    )
    assert relative.filters.kept >= 1 and relative.filters.gate < 0.99
    assert np.isclose(
        again.filters.best_similarity or 0.0, estimated.filters.best_similarity or 0.0
    )


def test_the_planner_is_an_aspect_source() -> None:
    assert "planner" in ASPECT_SOURCES.names()
    with pytest.raises(ValueError, match="needs an LLM"):
        PlannerAspects.build(AspectOptions(), None)
    llm = ScriptedLLM([])
    planner = PlannerAspects(llm, AspectOptions(subquestions=0, answers=0))
    planned = planner.plan(C2Query.explicit(QUESTION, exclude=["religion"]), ASPECTS)
    assert planned.aspects == ASPECTS and llm.requests == []
    with pytest.raises(ConfigError, match="no aspects"):
        planner.plan(C2Query.explicit(QUESTION))


def test_ask_refuses_a_question_naming_what_no_passage_writes() -> None:
    """The name filter is on for ``ask`` and ``/v1/answer``, off for ``select``."""
    assert ASK.names and ANSWER.names and not SELECT.names and not INTEGRATIONS.names
    policy = dataclasses.replace(ASK, aspects=None, coverage=None, floor=0.0, gate=0.0)
    named = dataclasses.replace(
        TOPIC, query="Should schools require uniforms under the ISO9001 rules?"
    )
    chosen = choose(
        named, dataclasses.replace(policy, selector="greedy-coverage"), estimator=KeywordCoverage()
    )
    assert chosen.selection.passage_ids == () and chosen.filters.absent == ("ISO9001",)
    assert "ISO9001" in (chosen.filters.reason() or "")
    # without the filter, or when a passage writes the name, the context is chosen as before
    off = dataclasses.replace(policy, selector="greedy-coverage", names=False)
    assert choose(named, off, estimator=KeywordCoverage()).selection.passage_ids
    written = dataclasses.replace(
        named, passages=(Passage("p0", "ISO9001 asks for uniforms", score=4.0), *PASSAGES)
    )
    kept = choose(
        written,
        dataclasses.replace(policy, selector="greedy-coverage"),
        estimator=KeywordCoverage(),
    )
    assert kept.selection.passage_ids and kept.filters.absent == ()


def test_the_use_cases_estimate_pick_and_aspects_for_are_select_in_parts() -> None:
    from covrag.pipeline.usecases import aspects_for, estimate, pick, select

    policy = dataclasses.replace(
        SELECT, selector="greedy-coverage", coverage=KeywordCoverage(), relevance="score", k=3
    )
    whole = select(TOPIC, dataclasses.replace(policy, floor=0.5))
    parts = pick(estimate(TOPIC, dataclasses.replace(policy, floor=0.5)), policy)
    assert parts.selection.passage_ids == whole.selection.passage_ids == ("p1", "p2")
    assert aspects_for(TOPIC, policy) == ASPECTS  # no source: the topic's own
    queried = aspects_for(TOPIC, dataclasses.replace(policy, aspects="query"))
    assert [a.text for a in queried] == [QUESTION]
    with pytest.raises(ConfigError):
        estimate(TOPIC, dataclasses.replace(policy, k=0))
