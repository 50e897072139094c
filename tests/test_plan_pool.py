from __future__ import annotations

import dataclasses
import json

import pytest

from covrag.errors import ConfigError
from covrag.pipeline import build_methods, run_bench
from covrag.plan.decompose import LLMDecomposer
from covrag.plan.pool import PoolAspectFinder
from covrag.plan.sources import GoldAspects, LLMAspects, PoolAspects, with_aspects
from covrag.types import Aspect, Budget, Passage, Topic
from llm_support import ScriptedLLM, items_reply

pytestmark = pytest.mark.model

TEXTS = [
    ("p1", "Cars pollute the air in city centres."),
    ("p2", "Car exhaust makes the city air dirty."),
    ("p3", "Traffic fumes pollute the air people breathe."),
    ("p4", "Shops lose customers when cars are banned."),
    ("p5", "Retailers see fewer shoppers after a car ban."),
    ("p6", "Cycling is healthier than driving."),
]


def topic() -> Topic:
    passages = tuple(Passage(i, t) for i, t in TEXTS)
    aspects = (Aspect("a1", "pollution"), Aspect("a2", "shops"), Aspect("a3", "health"))
    labels = {
        "p1": frozenset({"a1"}),
        "p2": frozenset({"a1"}),
        "p3": frozenset({"a1"}),
        "p4": frozenset({"a2"}),
        "p5": frozenset({"a2"}),
        "p6": frozenset({"a3"}),
    }
    return Topic("q1", "Should cities ban cars?", passages, aspects, labels)


def test_representatives_cover_the_distinct_points() -> None:
    pytest.importorskip("sentence_transformers")
    finder = PoolAspectFinder(k=3, distinct=0.6)
    aspects = finder.find(topic())
    sources = [a.metadata["passage"] for a in aspects]
    groups = [{"p1", "p2", "p3"}, {"p4", "p5"}, {"p6"}]
    assert sorted(next(i for i, g in enumerate(groups) if s in g) for s in sources) == [0, 1, 2]
    assert [a.id for a in aspects] == ["pool1", "pool2", "pool3"]
    assert aspects[0].metadata["source"] == "pool"
    # Without the distinct rule facility location may spend two picks on the dense cluster.
    assert len(PoolAspectFinder(k=3, distinct=None).find(topic())) == 3


def test_pool_rewrite_asks_the_llm_for_a_question() -> None:
    pytest.importorskip("sentence_transformers")
    replies = [json.dumps({"question": f"Does point {i} hold?"}) for i in range(3)]
    llm = ScriptedLLM(replies)
    aspects = PoolAspectFinder(k=3, rewrite="question", llm=llm).find(topic())
    assert [a.text for a in aspects] == [
        "Does point 0 hold?",
        "Does point 1 hold?",
        "Does point 2 hold?",
    ]
    with pytest.raises(ConfigError, match="needs an llm"):
        PoolAspectFinder(rewrite="question")


def test_sources_replace_aspects_and_drop_labels() -> None:
    t = topic()
    assert GoldAspects().apply(t) is t
    llm = ScriptedLLM([items_reply("How dirty is city air?", "Do shops lose money?")])
    source = LLMAspects(LLMDecomposer(llm, n=2, dedup=None))
    sourced = source.timed(t)
    estimated = sourced.topic
    assert [a.text for a in estimated.aspects] == ["How dirty is city air?", "Do shops lose money?"]
    assert estimated.labels == {} and estimated.passages == t.passages
    assert sourced.seconds >= 0
    assert with_aspects(t, ()).aspects == ()


def test_bench_compares_aspect_sources_on_gold_labels() -> None:
    pytest.importorskip("sentence_transformers")
    t = topic()
    methods = build_methods(["greedy-coverage"], ["gold", "embedding"], ["gold", "pool"])
    names = [m.name for m in methods]
    # gold coverage reads the gold labels, so it is only paired with the gold aspects
    assert names == [
        "greedy-coverage @ gold",
        "greedy-coverage @ embedding",
        "greedy-coverage @ embedding on pool aspects",
    ]
    result = run_bench(
        "tiny",
        [t],
        methods,
        [Budget(max_passages=3)],
        n_resamples=50,
        aspect_sources={"pool": PoolAspects(PoolAspectFinder(k=3))},
    )
    pool = next(r for r in result.results if r.method.endswith("on pool aspects"))
    assert pool.means["StRecall@3"] == pytest.approx(1.0)  # one passage per distinct point
    assert pool.aspects_seconds > 0
    with pytest.raises(ConfigError, match="cannot be estimated against llm aspects"):
        build_methods(["greedy-coverage"], ["gold"], ["llm"])


def test_aspect_sources_are_built_from_the_registry_with_one_llm_only_when_needed() -> None:
    from covrag.plan import ASPECT_SOURCES, AspectOptions, build_aspect_sources

    assert ASPECT_SOURCES.names() == [
        "gold",
        "gold+answers",
        "keypoints",
        "llm",
        "llm+answers",
        "llm+pool",
        "planner",
        "pool",
        "query",
    ]
    made: list[ScriptedLLM] = []

    def make_llm() -> ScriptedLLM:
        made.append(ScriptedLLM([]))
        return made[-1]

    sources = build_aspect_sources(["gold", "pool"], AspectOptions(pool_k=3), make_llm)
    assert made == [] and isinstance(sources["gold"], GoldAspects)
    assert isinstance(sources["pool"], PoolAspects) and sources["pool"].finder.k == 3
    options = AspectOptions(subquestions=4, pool_rewrite=True)
    sources = build_aspect_sources(["llm", "pool"], options, make_llm)
    assert len(made) == 1  # one LLM, shared
    assert isinstance(sources["llm"], LLMAspects) and sources["llm"].decomposer.n == 4
    assert sources["llm"].decomposer.llm is made[0]
    assert isinstance(sources["pool"], PoolAspects) and sources["pool"].finder.llm is made[0]
    with pytest.raises(ConfigError, match="unknown aspect source 'gpt'"):
        build_aspect_sources(["gpt"], AspectOptions(), make_llm)


def test_the_query_source_makes_the_query_the_only_aspect_and_keeps_exclusions() -> None:
    from covrag.plan import AspectOptions, build_aspect_sources

    t = topic()
    excluded = dataclasses.replace(t.aspects[0], polarity="exclude")
    t = dataclasses.replace(t, aspects=(excluded, *t.aspects[1:]))
    source = build_aspect_sources(["query"], AspectOptions(), lambda: ScriptedLLM([]))["query"]
    estimated = source.apply(t)
    assert [a.text for a in estimated.aspects] == [t.query, excluded.text]
    assert estimated.aspects[1].polarity == "exclude" and estimated.labels == {}


def test_llm_and_pool_aspects_side_by_side() -> None:
    pytest.importorskip("sentence_transformers")
    from covrag.plan import AspectOptions, build_aspect_sources

    llm = ScriptedLLM([items_reply("How dirty is city air?", "Do shops lose money?")])
    options = AspectOptions(subquestions=2, pool_k=3)
    source = build_aspect_sources(["llm+pool"], options, lambda: llm)["llm+pool"]
    estimated = source.apply(topic())
    texts = [a.text for a in estimated.aspects]
    assert texts[:2] == ["How dirty is city air?", "Do shops lose money?"]
    assert len(texts) == 5 and set(texts[2:]) <= {t for _, t in TEXTS}
    assert len({a.id for a in estimated.aspects}) == 5 and estimated.labels == {}
