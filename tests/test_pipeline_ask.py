"""The pipeline's ask layer: one set of defaults, the stages as functions, the CLI's options."""

from __future__ import annotations

import dataclasses

import pytest

from covrag.cli import build_parser
from covrag.cli.ask import ASK_OPTIONS
from covrag.cli.common import config_from_args
from covrag.cli.serve import SERVER_OPTIONS
from covrag.errors import ConfigError
from covrag.generate.critique import Critic
from covrag.integrations._engine import CoverageChoice
from covrag.pipeline import (
    DEFAULT_COVERAGE,
    DEFAULT_SELECTOR,
    AskConfig,
    ask,
    build_generator,
    plan_aspects,
    retrieve_pool,
)
from covrag.retrieve import BM25Retriever
from covrag.server.config import ServerConfig
from covrag.types import Aspect, Passage
from generate_support import KeywordCoverage
from llm_support import ScriptedLLM

CORPUS = (
    Passage("c1", "School uniforms reduce bullying between pupils."),
    Passage("c2", "Uniforms cost parents a lot of money each year."),
    Passage("c3", "School uniforms stop pupils who want to express their identity."),
    Passage("c4", "Uniforms make religion visible or invisible in school."),
)
ASPECTS = (Aspect("sq1", "bullying at school"), Aspect("sq2", "cost of uniforms"))


def test_one_default_selector_and_estimator_everywhere() -> None:
    assert DEFAULT_SELECTOR == "expected-coverage" and DEFAULT_COVERAGE == "cross-encoder"
    assert DEFAULT_SELECTOR == ServerConfig().default_selector
    # ask's own: the pool's passages nearest the question (docs/experiments/33), the
    # label-free choice where relevance is flat across the pool (docs/experiments/36, 38)
    assert (AskConfig().selector, AskConfig().relevance, AskConfig().filters) == (
        "topk(flat=0.4, rank=50)",
        "sentences",
        "question",
    )
    assert AskConfig().coverage == DEFAULT_COVERAGE == ServerConfig().default_coverage
    # the integrations leave it open: DEFAULT_SELECTOR over given aspects, without them the
    # label-free selector (both checked in tests/test_integrations_engine.py)
    assert CoverageChoice(coverage="gold").selector is None


def test_cli_options_carry_the_config_defaults_and_help() -> None:
    args = build_parser().parse_args(["ask", "a question"])
    assert config_from_args(AskConfig, args, ASK_OPTIONS) == AskConfig()
    assert set(ASK_OPTIONS) < {f.name for f in dataclasses.fields(AskConfig)}
    args = ["ask", "q", "--selector", "greedy-coverage", "--writer", "synthesis"]
    config = config_from_args(AskConfig, build_parser().parse_args(args), ASK_OPTIONS)
    assert config.selector == "greedy-coverage" and config.writer == "synthesis"
    serve = build_parser().parse_args(["serve"])
    assert config_from_args(ServerConfig, serve, SERVER_OPTIONS) == ServerConfig()
    serve = build_parser().parse_args(["serve", "--no-preload", "--timeout", "5"])
    assert config_from_args(ServerConfig, serve, SERVER_OPTIONS).preload is False
    assert config_from_args(ServerConfig, serve, SERVER_OPTIONS).timeout_s == 5.0
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ask", "q", "--writer", "oracle"])  # a Literal's choices


def test_config_checks() -> None:
    bad_configs = (
        {"k": 0},
        {"pool": 0},
        {"passes": -1},
        {"pool_aspects": -1},
        {"feedback": "oracle-pointers"},
    )
    for bad in bad_configs:
        with pytest.raises(ConfigError):
            AskConfig(**bad)  # type: ignore[arg-type]


def test_plan_uses_given_aspects_without_the_llm() -> None:
    llm = ScriptedLLM([])
    planned = plan_aspects("Uniforms?", llm, AskConfig(), exclude=["religion"], aspects=ASPECTS)
    assert planned.aspects == ASPECTS and planned.subquestions is None and planned.plan is None
    assert planned.query.exclude == ("religion",) and llm.requests == []
    with pytest.raises(ConfigError, match="no aspects"):
        plan_aspects("Uniforms?", llm, AskConfig(subquestions=0))


def test_retrieve_pool_searches_the_wanted_aspects_only() -> None:
    planned = plan_aspects(
        "Should schools require uniforms?",
        ScriptedLLM([]),
        AskConfig(),
        exclude=["religion"],
        aspects=(*ASPECTS, Aspect("exc1", "religion", polarity="exclude")),
    )
    queries, topic = retrieve_pool(planned.query, planned.aspects, BM25Retriever().index(CORPUS), 3)
    assert "religion" not in queries and "bullying at school" in queries
    assert len(topic.passages) == 3 and topic.aspects == planned.aspects


def test_build_generator_follows_the_config() -> None:
    llm = ScriptedLLM([])
    config = AskConfig(
        passes=1, feedback="self", max_words=40, sentences=3, max_tokens=200, writer="extractive"
    )
    generator = build_generator(
        llm, config.writer_policy(), KeywordCoverage(), exclude=["religion"]
    )
    assert generator.passes == 1
    writer, critic = generator.writer, generator.critic
    assert (writer.sentences, writer.max_words, writer.max_tokens) == (3, 40, 200)
    assert writer.exclude == ("religion",)
    assert isinstance(critic, Critic) and critic.mode == "self" and critic.max_words == 40


def test_ask_selects_with_its_default_selector() -> None:
    llm = ScriptedLLM(["Uniforms reduce bullying [1]."])
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        AskConfig(pool=4, k=2, passes=0, writer="extractive"),
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )
    # 4 passages: too few for flat relevance (fewer than its rank), so top-k chose
    assert result.selection.selector == "topk(flat=0.4, rank=50)"
    assert result.filters.judged == "question"
    assert len(result.selection) == 2 and set(result.costs) == {
        "plan", "retrieve", "estimate", "select", "generate",
    }  # fmt: skip
    assert result.costs["generate"].llm.calls == 1


@pytest.mark.model
def test_pool_aspects_join_the_sub_questions_but_not_the_floor_or_the_report() -> None:
    from covrag.pipeline import prepare
    from covrag.pipeline.config import PrepareConfig
    from covrag.pipeline.context import select_context
    from covrag.selectors import parse_selector
    from covrag.types import Topic

    passages = (
        Passage("p1", "bullying falls when pupils wear the same clothes"),
        Passage("p2", "cost of a uniform is a burden for poor families"),
        Passage("p3", "identity matters to teenagers"),  # answers no sub-question
        Passage("p4", "bullying over brands and fashion stops"),
    )
    topic = Topic("t", "Should schools require uniforms?", passages, ASPECTS)
    estimator = KeywordCoverage()
    candidates = prepare(topic, estimator, PrepareConfig(relevance="order")).candidates
    selector = parse_selector("expected-coverage")
    plain = select_context(selector, candidates, estimator, k=4, floor=0.5)
    pooled = select_context(selector, candidates, estimator, k=4, floor=0.5, pool_aspects=10)
    # the floor reads the sub-questions only: p3 represents itself, yet is never chosen
    assert "p3" not in pooled.passage_ids and set(pooled.passage_ids) == {"p1", "p2", "p4"}
    assert set(plain.passage_ids) == {"p1", "p2", "p4"}
    # what the selection reports covering is the sub-questions, never a pool aspect
    assert sorted(pooled.covered) == ["sq1", "sq2"]


def test_a_passage_that_answers_the_question_itself_clears_the_floor() -> None:
    from covrag.pipeline import prepare
    from covrag.pipeline.config import PrepareConfig
    from covrag.pipeline.context import select_context
    from covrag.selectors import parse_selector
    from covrag.types import Topic

    passages = (
        Passage("p1", "bullying falls when pupils wear the same clothes"),  # answers sq1
        Passage("p5", "Schools should require uniforms, many parents say"),  # the question only
        Passage("p6", "the weather was mild all winter"),  # nothing
    )
    question = "Should schools require uniforms?"  # KeywordCoverage reads its first word
    topic = Topic("t", question, passages, ASPECTS)
    estimator = KeywordCoverage()
    candidates = prepare(topic, estimator, PrepareConfig(relevance="order")).candidates
    selector = parse_selector("expected-coverage")
    alone = select_context(selector, candidates, estimator, k=3, floor=0.5)
    assert alone.passage_ids == ("p1",)
    both = select_context(selector, candidates, estimator, k=3, floor=0.5, question=question)
    assert set(both.passage_ids) == {"p1", "p5"}
    assert sorted(both.covered) == ["sq1"]  # the question is not an aspect to cover
    # At floor 0 nothing is scored against the question and k is filled as before.
    assert (
        len(select_context(selector, candidates, estimator, k=3, floor=0.0, question=question)) == 3
    )
    assert AskConfig().floor_question and AskConfig().floor == 0.5 and AskConfig().gate == 0.5


@pytest.mark.model
def test_the_gate_drops_a_passage_from_another_subject_that_answers_a_broad_sub_question() -> None:
    from covrag.pipeline import prepare, question_similarity
    from covrag.pipeline.config import PrepareConfig
    from covrag.pipeline.context import select_context
    from covrag.selectors import parse_selector
    from covrag.types import Topic

    passages = (
        Passage("p1", "School uniforms: bullying falls when pupils wear the same clothes"),
        Passage("p2", "The cost of a school uniform is a burden for poor families"),
        Passage("p7", "Bullying at the office: the cost of a toxic workplace culture"),
    )
    question = "Should schools require uniforms?"
    topic = Topic("t", question, passages, ASPECTS)
    estimator = KeywordCoverage()
    candidates = prepare(topic, estimator, PrepareConfig(relevance="order")).candidates
    # the real packaged MiniLM: the office passage is far from the question, the others close
    similarity = question_similarity(candidates)
    assert similarity[2] < 0.3 < min(similarity[0], similarity[1])
    selector = parse_selector("expected-coverage")
    open_gate = select_context(selector, candidates, estimator, k=3, floor=0.5)
    assert "p7" in open_gate.passage_ids  # it answers sq1 (bullying) by its words
    gated = select_context(selector, candidates, estimator, k=3, floor=0.5, gate=0.3)
    assert set(gated.passage_ids) == {"p1", "p2"}
    with pytest.raises(ConfigError, match="gate"):
        AskConfig(gate=-0.2)


@pytest.mark.model
def test_ask_checks_citations_and_a_reply_citing_nothing_ends_in_quotes_and_a_warning() -> None:
    from covrag.schema._base import RecordError, read_model
    from covrag.schema.ask import AskTopic

    llm = ScriptedLLM(["The weather is mild in spring.\nTrains run late on Sundays."])
    result = ask(
        "Should schools require uniforms?",
        llm,
        BM25Retriever().index(CORPUS),
        AskConfig(pool=4, k=2, passes=0, writer="extractive", floor=0.0, gate=0.0),
        aspects=ASPECTS,
        estimator=KeywordCoverage(),
    )
    final = result.generation.drafts[-1]
    assert final.fallback == "quote" and len(final.answer.dropped) == 2
    warning = "the answer quotes the selected passages instead"
    assert any(warning in w for w in result.warnings)
    topic = result.run_record()["topics"][0]
    assert any(warning in w for w in topic["warnings"])
    by_id = {p["id"]: p["text"] for p in topic["passages"]}
    for sentence in topic["answer"]["sentences"]:
        if sentence.get("framing"):  # names a sub-question the context does not answer
            continue
        check = sentence["check"]
        start, end = check["span"]
        assert sentence["text"] == f"\u201c{by_id[check['passage_id']][start:end]}\u201d"
    assert [s["text"] for s in topic["answer"]["dropped"]] == [
        "The weather is mild in spring.",
        "Trains run late on Sundays.",
    ]
    # per sub-question: covered by the context, and by the answer's (quoted, supported) sentences
    rows = {row["aspect_id"]: row for row in topic["aspect_coverage"]}
    assert set(rows) == {"sq1", "sq2"}
    for row in rows.values():
        assert row["in_answer"] == bool(row["answer_sentences"]) and (
            not row["in_answer"] or row["in_context"]
        )
    assert read_model(AskTopic, topic).aspect_coverage[0].aspect_id == "sq1"
    # a span outside its passage is refused when the run file is read
    topic["answer"]["sentences"][0]["check"]["span"] = [0, 10_000]
    with pytest.raises(RecordError, match="ends after the passage"):
        read_model(AskTopic, topic).check("topics[0]")
