"""Judgments records: construction from topics, coverage matrices and labels; validation."""

from __future__ import annotations

import numpy as np
import pytest

from covrag.errors import DataError
from covrag.evaluation import Judgments, TopicJudgments
from covrag.types import Aspect, CoverageMatrix, Passage, Topic


def make_topic(tokens: bool = True) -> Topic:
    return Topic(
        query_id="q1",
        query="Should cities ban cars?",
        passages=(
            Passage("p1", "Cars pollute.", tokens=3 if tokens else None),
            Passage("p2", "Bans hurt shops.", tokens=4 if tokens else None),
            Passage("p3", "Bikes are healthy.", tokens=None),
        ),
        aspects=(Aspect("a2", "economy"), Aspect("a1", "pollution"), Aspect("a3", "unused")),
        labels={"p1": frozenset({"a1"}), "p2": frozenset({"a2", "a1"}), "p3": frozenset()},
    )


def test_from_topics_keeps_labels_aspect_order_and_known_costs() -> None:
    judgments = Judgments.from_topics([make_topic()])
    topic = judgments["q1"]
    assert topic.labels == {"p1": {"a1"}, "p2": {"a1", "a2"}, "p3": frozenset()}
    assert topic.aspects == ("a2", "a1", "a3")
    assert topic.actual_aspects == ("a2", "a1")
    assert topic.relevant == {"p1", "p2"}
    assert dict(topic.costs) == {"p1": 3, "p2": 4}
    assert list(judgments) == ["q1"] and len(judgments) == 1 and "q1" in judgments
    assert judgments.query_ids == ("q1",)
    assert repr(judgments) == "Judgments(1 topics)"


def test_from_topics_rejects_unlabelled_topics() -> None:
    topic = make_topic()
    unlabelled = Topic(topic.query_id, topic.query, topic.passages, topic.aspects)
    with pytest.raises(DataError, match="'q1' has no gold labels"):
        Judgments.from_topics([unlabelled])


def test_from_coverage_uses_covered_pairs() -> None:
    matrix = CoverageMatrix(
        passage_ids=("p1", "p2", "p3"),
        aspect_ids=("x", "y"),
        probs=np.array([[0.9, 0.1], [0.5, 0.7], [0.0, 0.2]]),
        threshold=0.5,
    )
    judgments = Judgments.from_coverage({"q": matrix}, costs={"q": {"p1": 10}})
    assert judgments["q"].labels == {"p1": {"x"}, "p2": {"x", "y"}, "p3": frozenset()}
    assert judgments["q"].aspects == ("x", "y")
    assert dict(judgments["q"].costs) == {"p1": 10}
    strict = Judgments.from_coverage({"q": matrix.with_threshold(0.8)})
    assert strict["q"].labels == {"p1": {"x"}, "p2": frozenset(), "p3": frozenset()}


def test_from_labels_derives_sorted_aspects() -> None:
    judgments = Judgments.from_labels({"q": {"d1": ["b", "a"], "d2": ("c",), "d3": []}})
    assert judgments["q"].aspects == ("a", "b", "c")
    assert judgments["q"].labels["d3"] == frozenset()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"labels": {"d1": ["zz"]}, "aspects": ("a",)}, "aspects \\['zz'\\] that are not"),
        ({"labels": {"d1": ["a"]}, "aspects": ("a", "a")}, "duplicate aspect ids"),
        ({"labels": {"d1": ["a"]}, "costs": {"d9": 3}}, "cost given for unjudged doc 'd9'"),
        ({"labels": {"d1": ["a"]}, "costs": {"d1": -1}}, "must be an int >= 0"),
        ({"labels": {"d1": ["a"]}, "costs": {"d1": 2.5}}, "must be an int >= 0"),
        ({"labels": {"": ["a"]}}, "doc ids must be non-empty strings"),
        ({"labels": {"d1": [3]}}, "aspect ids must be non-empty strings"),
    ],
)
def test_topic_judgments_validation(kwargs: dict[str, object], message: str) -> None:
    labels = {d: frozenset(a) for d, a in kwargs.pop("labels").items()}  # type: ignore[attr-defined]
    with pytest.raises(DataError, match=message):
        TopicJudgments("q", labels, **kwargs)  # type: ignore[arg-type]


def test_duplicate_query_ids_are_rejected() -> None:
    topic = TopicJudgments("q", {"d": frozenset({"a"})})
    with pytest.raises(DataError, match="appears twice"):
        Judgments((topic, topic))


def test_records_are_read_only() -> None:
    topic = TopicJudgments("q", {"d": frozenset({"a"})}, costs={"d": 1})
    with pytest.raises(TypeError):
        topic.labels["e"] = frozenset()  # type: ignore[index]
    with pytest.raises(TypeError):
        topic.costs["d"] = 2  # type: ignore[index]
    assert topic == TopicJudgments("q", {"d": frozenset({"a"})}, ("a",), {"d": 1})
