from __future__ import annotations

import json
import math

import numpy as np
import pytest

from covrag.errors import DataError
from covrag.report.runfile import RunFile, TopicRun, parse_run_file, write_run_file
from covrag.schema.runfile import parse_budget
from covrag.types import (
    Answer,
    Aspect,
    Budget,
    Citation,
    CoverageMatrix,
    Passage,
    Selection,
    SelectionStep,
    Topic,
)

TOPIC = Topic(
    "q1",
    "Should cities ban cars?",
    passages=(Passage("p1", "Cars pollute.", tokens=3, score=0.5), Passage("p2", "Shops.")),
    aspects=(Aspect("a1", "pollution", weight=2.0, vital=True), Aspect("a2", "economy", 0.5)),
)
COVERAGE = CoverageMatrix(
    ("p1", "p2"),
    ("a1", "a2"),
    np.array([[0.912345, 0.0], [0.25, 1.0]]),
    threshold=0.4,
    source="embedding(threshold=0.4)",
    pairs_scored=4,
    seconds=0.125,
    truncated_pairs=1,
)


def run_file(budget: Budget, answer: Answer | None) -> RunFile:
    steps = (SelectionStep("p2", 1.5, ("a2",), 7), SelectionStep("p1", 0.25, ("a1",), 3))
    selection = Selection("q1", "greedy-coverage", budget, steps, seconds=0.5)
    topic = TopicRun(TOPIC, COVERAGE, selection, str(budget), answer)
    return RunFile((topic,), "inline", "greedy-coverage", "embedding", str(budget))


@pytest.mark.parametrize(
    "budget", [Budget(max_passages=2), Budget(max_tokens=100), Budget(2, 100), Budget()]
)
@pytest.mark.parametrize("answer", [None, Answer((Citation("Cars pollute.", ("p1", "p2")),))])
def test_run_file_round_trips_budget_included(budget: Budget, answer: Answer | None) -> None:
    written = run_file(budget, answer)
    data = json.loads(json.dumps(write_run_file(written)))
    read = parse_run_file(data, "run.json")
    (topic_run,) = read.topics
    (expected,) = written.topics
    assert topic_run.topic == TOPIC
    assert topic_run.selection == expected.selection  # the budget and the seconds too
    assert topic_run.selection.budget == budget
    assert topic_run.answer == answer and topic_run.budget == str(budget)
    assert topic_run.coverage is not None
    for name in ("passage_ids", "aspect_ids", "threshold", "source", "pairs_scored", "seconds"):
        assert getattr(topic_run.coverage, name) == getattr(COVERAGE, name)
    assert topic_run.coverage.truncated_pairs == 1
    assert np.array_equal(topic_run.coverage.probs, COVERAGE.probs)
    assert (read.dataset, read.selector, read.coverage, read.budget) == (
        "inline",
        "greedy-coverage",
        "embedding",
        str(budget),
    )
    assert write_run_file(read) == data


def test_non_finite_scores_are_written_null_and_read_as_nan() -> None:
    written = run_file(Budget(2), None)
    topic = written.topics[0]
    step = SelectionStep("p1", math.inf, ("a1",), 3)
    selection = Selection("q1", "s", topic.selection.budget, (step,))
    data = write_run_file(RunFile((TopicRun(TOPIC, None, selection, "k=2"),)))
    assert data["topics"][0]["selection"]["steps"][0]["score"] is None
    assert data["topics"][0]["coverage"] is None
    read = parse_run_file(json.loads(json.dumps(data)))
    assert math.isnan(read.topics[0].selection.steps[0].score)
    assert read.topics[0].coverage is None


def test_bad_budget_names_the_field() -> None:
    data = write_run_file(run_file(Budget(2), None))
    data["topics"][0]["selection"]["budget"] = "k=two"
    with pytest.raises(DataError, match=r"field 'topics\[0\]\.selection\.budget'.*k=N"):
        parse_run_file(data, "run.json")


def test_parse_budget_reads_what_budget_prints() -> None:
    for budget in (Budget(), Budget(3), Budget(max_tokens=9), Budget(3, 9)):
        assert parse_budget(str(budget)) == budget
    assert parse_budget("") == Budget()
    with pytest.raises(ValueError, match="k=N"):
        parse_budget("k=3,words=9")
