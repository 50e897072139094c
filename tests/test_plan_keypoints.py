from __future__ import annotations

import json
import re

import pytest

from covrag.errors import ConfigError
from covrag.plan import C2Query, PlannerAspects
from covrag.plan.keypoints import KeyPointGenerator, point_problem
from covrag.plan.sources import AspectOptions, KeyPointAspects, build_aspect_sources
from covrag.retrieve import BM25Retriever
from covrag.types import Passage, Topic
from llm_support import ScriptedLLM, tiny_llm

pytestmark = pytest.mark.model

QUERY = "Should cities ban cars from their centres?"
TEXTS = [
    ("p1", "Cars pollute the air in city centres with their exhaust fumes."),
    ("p2", "Car exhaust makes the air in the city dirty and hard to breathe."),
    ("p3", "Traffic fumes pollute the air that people in the centre breathe."),
    ("p4", "Shops lose customers when cars are banned from the centre."),
    ("p5", "Retailers in the centre see fewer shoppers after a car ban."),
    ("p6", "A car ban hurts the shops of the city centre, which lose business."),
    ("p7", "Without cars the streets are safer for children and pedestrians."),
    ("p8", "Fewer cars means fewer road accidents that hurt people walking."),
    ("p9", "Pedestrians are injured less often in streets closed to cars."),
]


def pool() -> Topic:
    passages = tuple(
        Passage(i, t, metadata={"title": "Car-free cities"} if i == "p1" else {}) for i, t in TEXTS
    )
    return Topic("q1", QUERY, passages, ())


def point(text: str, question: str | None = None) -> str:
    reply = {"point": text} if question is None else {"point": text, "question": question}
    return json.dumps(reply)


GOOD = [
    ("Cars pollute the air in the city", "Do cars pollute the air in the city centre?"),
    ("A car ban hurts shops in the centre", "Does a car ban hurt shops in the centre?"),
    ("Streets without cars are safer for pedestrians", "Are streets without cars safer?"),
]
TEMPLATE = (
    "Software licences create tax obligations",
    "What are the tax obligations of software licences?",
)


def generator(llm: ScriptedLLM, **kwargs: object) -> KeyPointGenerator:
    settings: dict[str, object] = {"n": 3, "groups": 4, "per_group": 2, "form": "question"}
    settings.update(kwargs)
    return KeyPointGenerator(llm, **settings)  # type: ignore[arg-type]


def test_template_points_no_passage_covers_are_dropped_with_a_note() -> None:
    """The LLM's template sub-question (tax obligations, for a car ban) passes the reply checks
    but no pooled passage covers it (shipped cross-encoder): it is dropped, and named."""
    replies = [point(*GOOD[0]), point(*TEMPLATE), point(*GOOD[1]), point(*GOOD[2])]
    llm = ScriptedLLM(replies)
    found = generator(llm).generate(pool())
    assert len(llm.requests) == 4  # one request per group
    assert sorted(found.texts) == sorted(q for _, q in GOOD)
    assert {a.answers for a in found.aspects} == {(p,) for p, _ in GOOD}
    assert [a.id for a in found.aspects] == ["kp1", "kp2", "kp3"]
    assert all(a.metadata["source"] == "keypoints" for a in found.aspects)
    dropped = [n for n in found.notes if "tax obligations" in n]
    assert len(dropped) == 1 and dropped[0].startswith("no pooled passage covers it")
    # every group's passages were shown, with their document titles
    shown = " ".join(m.content for messages, _ in llm.requests for m in messages)
    assert "(Car-free cities) Cars pollute" in shown
    assert len(found.groups) == 4 and all(1 <= len(g) <= 2 for g in found.groups)


def test_unusable_replies_are_retried_and_a_group_without_a_point_is_noted() -> None:
    replies = [
        point("Why do cars pollute?"),  # a question, not a statement: retried
        point("Cars pollute the city air"),
        point("Fast food causes obesity"),  # copies the prompt's example: retried
        point("x"),  # too short: the group has no point
        point("Car bans cost shops customers"),
    ]
    llm = ScriptedLLM(replies)
    found = generator(llm, form="statement", groups=3, ground=False).generate(pool())
    assert not llm.replies and llm.usage.retries == 2
    assert len(found.aspects) == 2 and all(not a.answers for a in found.aspects)
    assert found.texts == ("Cars pollute the city air", "Car bans cost shops customers")
    assert len(found.notes) == 1 and "group" in found.notes[0] and "no point" in found.notes[0]
    assert "copies the example" in llm.requests[3][0][-1].content


def test_questions_that_reword_the_topic_or_each_other_are_dropped_with_a_note() -> None:
    replies = [
        point(*GOOD[0]),
        point("Cities should ban cars", "Should cities ban cars from the centres?"),
        point("Car fumes make city air dirty", GOOD[0][1]),
    ]
    found = generator(ScriptedLLM(replies), groups=3, ground=False).generate(pool())
    assert found.texts == (GOOD[0][1],)
    dropped = [n for n in found.notes if n.startswith("duplicate of the topic")]
    assert len(dropped) == 2 and len(found.notes) == 2


def test_duplicates_and_spares_are_named_and_every_group_is_accounted_for() -> None:
    replies = [
        point("Cars pollute the air in the city"),
        point("Cars pollute the air in the city."),
        point("A car ban hurts shops in the centre"),
        point("Car-free streets are safer for pedestrians"),
    ]
    found = generator(ScriptedLLM(replies), n=2, form="statement").generate(pool())
    assert len(found.aspects) == 2
    assert any(n.startswith("duplicate:") for n in found.notes)
    assert any(n.startswith("spare:") for n in found.notes)
    assert len(found.aspects) + len(found.notes) == len(found.groups)


def test_the_source_gives_statements_and_keeps_the_labels_out() -> None:
    replies = [point(p) for p, _ in GOOD] + [point("Cars pollute the city centre air badly")]
    llm = ScriptedLLM(replies)
    sources = build_aspect_sources(["keypoints"], AspectOptions(pool_k=3), lambda: llm)
    source = sources["keypoints"]
    assert isinstance(source, KeyPointAspects) and KeyPointAspects.needs_llm(AspectOptions())
    topic = source.apply(pool())
    assert 1 <= len(topic.aspects) <= 3 and not topic.labels
    assert all(not a.text.endswith("?") for a in topic.aspects)
    with pytest.raises(ValueError, match="needs an LLM"):
        KeyPointAspects.build(AspectOptions(), None)


def test_ask_aspects_come_from_the_retrieved_pool_with_the_request_constraints() -> None:
    """Off-topic passages of the pool are not read (noted), nor are templates kept (noted)."""
    cake = Passage("cake", "A cake for the centre of the table needs butter, cars of sugar.")
    retriever = BM25Retriever().index([*(Passage(i, t) for i, t in TEXTS), cake])
    replies = [point(*GOOD[0]), point(*TEMPLATE), point(*GOOD[1])]  # 1.5 x 2 groups
    llm = ScriptedLLM(replies)
    planner = PlannerAspects(llm, AspectOptions(subquestions=2, answers=0))
    query = C2Query.explicit(QUERY, exclude=["parking fees"])
    planned = planner.plan(query, pool=tuple(retriever.search(QUERY, 10)), gate=0.2)
    aspects, notes = planned.aspects, planned.warnings
    wanted = [a for a in aspects if a.polarity != "exclude"]
    assert sorted(a.text for a in wanted) == sorted(q for _, q in GOOD[:2])
    assert [a.text for a in aspects if a.polarity == "exclude"] == ["parking fees"]
    assert all(n.startswith("key points: dropped") for n in notes) and len(notes) == 2
    assert re.search(r"off the question: 1 of \d+ pooled passages", notes[0])
    assert "tax obligations" in notes[1]
    assert not any("butter" in m.content for messages, _ in llm.requests for m in messages)


def test_bad_settings_and_replies_fail_clearly() -> None:
    with pytest.raises(ConfigError, match="n must be >= 1"):
        KeyPointGenerator(ScriptedLLM([]), n=0)
    with pytest.raises(ConfigError, match="form must be"):
        KeyPointGenerator(ScriptedLLM([]), form="outline")
    assert point_problem("Cars pollute the air", "Pollution", QUERY) is not None
    assert point_problem("Cars pollute the air", "Do cars pollute the air?", QUERY) is None
    assert "repeats the question" in str(point_problem("Cars pollute the air", QUERY, QUERY))
    copied = point_problem("Cars pollute the air", "Does fast food cause obesity?", QUERY)
    assert "copies the example" in str(copied)
    empty = KeyPointGenerator(ScriptedLLM([])).generate(Topic("q", QUERY, (), ()))
    assert not empty.aspects and empty.notes


@pytest.mark.slow
@pytest.mark.parametrize("form", ["statement", "question"])
def test_the_tiny_model_reads_points_off_the_pool(form: str) -> None:
    """SmolLM2-135M on a real pool: whatever it writes, each group ends as a kept point or a
    named note, kept points are grounded statements (or questions with their point)."""
    found = KeyPointGenerator(tiny_llm(), n=3, groups=3, form=form).generate(pool())
    assert len(found.aspects) + len(found.notes) == len(found.groups) == 3
    for aspect in found.aspects:
        assert point_problem(aspect.metadata["point"], aspect.metadata["question"], QUERY) is None
        assert aspect.text.endswith("?") == (form == "question")


@pytest.mark.slow
def test_plan_from_pool_prints_the_kept_and_the_dropped(  # type: ignore[no-untyped-def]
    tmp_path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xllamacpp")
    from covrag.cli import main

    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path))  # a fresh response cache
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in TEXTS))
    args = ["plan", QUERY, "--from-pool", "--corpus", str(corpus), "--pool", "9"]
    args += ["--subquestions", "2", "--llm", "local(model='smollm2')"]
    assert main([*args, "--tree"]) == 2
    assert "--from-pool does not plan a QTree" in capsys.readouterr().err
    assert main([*args, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["base_query"] == QUERY and len(record["subquestions"]) <= 2
    assert len(record["points"]) == len(record["subquestions"])
    # 1.5 x 2 = 3 groups: each is a kept sub-question or a named drop (besides the gate's note)
    groups = [n for n in record["dropped"] if not n.startswith("off the question")]
    assert len(record["subquestions"]) + len(groups) == 3
    assert "Does fast food cause obesity?" not in record["subquestions"]  # the prompt's example
    assert record["llm_usage"]["calls"] >= 3
