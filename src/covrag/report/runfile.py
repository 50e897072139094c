"""The run JSON that ``covrag select --run-json`` writes and ``covrag report`` reads.

One file holds, per topic, everything needed to see what a selection did: the aspects, the
passages, the coverage matrix with its threshold, the selection with its trace of newly covered
aspects, and (when a generator wrote one) the answer with its citations::

    {"covrag_run": 1, "dataset": "argkp2021:dev", "selector": "greedy-coverage",
     "coverage": "gold", "budget": "k=10",
     "topics": [{"query_id": "...", "query": "...",
                 "aspects": [{"id", "text", "weight", "vital", "polarity"}],
                 "passages": [{"id", "text", "tokens", "score"}],
                 "coverage": {"passage_ids", "aspect_ids", "probs", "threshold", "source", ...},
                 "selection": {"selector", "budget", "tokens_used", "seconds",
                               "steps": [{"passage_id", "score", "newly_covered", "tokens"}]},
                 "answer": {"sentences": [{"text", "passage_ids"}]}}]}

``coverage`` may be null (a selector that reads none) and ``answer`` may be absent. The file is
untrusted input to the report: :func:`parse_run_file` validates it and names the offending field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from covrag.errors import DataError
from covrag.types import (
    POLARITIES,
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

RUN_FORMAT = 1


@dataclass(frozen=True)
class TopicRun:
    """One topic of a run file: its pool and aspects, coverage, selection and answer."""

    topic: Topic
    coverage: CoverageMatrix | None
    selection: Selection
    budget: str
    answer: Answer | None = None


@dataclass(frozen=True)
class RunFile:
    """A parsed run file."""

    topics: tuple[TopicRun, ...]
    dataset: str = ""
    selector: str = ""
    coverage: str = ""
    budget: str = ""


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def selection_record(selection: Selection) -> dict[str, Any]:
    """A selection and its steps as JSON (non-finite scores become null)."""
    return {
        "selector": selection.selector,
        "budget": str(selection.budget),
        "tokens_used": selection.tokens_used,
        "seconds": selection.seconds,
        "steps": [
            {
                "passage_id": s.passage_id,
                "score": _finite(s.score),
                "newly_covered": list(s.newly_covered),
                "tokens": s.tokens,
            }
            for s in selection.steps
        ],
    }


def topic_run_record(
    topic: Topic,
    selection: Selection,
    coverage: CoverageMatrix | None,
    answer: Answer | None = None,
) -> dict[str, Any]:
    """The run-file record of one topic (JSON-serialisable; non-finite scores become null)."""
    record: dict[str, Any] = {
        "query_id": topic.query_id,
        "query": topic.query,
        "aspects": [
            {
                "id": a.id,
                "text": a.text,
                "weight": a.weight,
                "vital": a.vital,
                "polarity": a.polarity,
            }
            for a in topic.aspects
        ],
        "passages": [
            {"id": p.id, "text": p.text, "tokens": p.tokens, "score": p.score}
            for p in topic.passages
        ],
        "coverage": None
        if coverage is None
        else {
            "passage_ids": list(coverage.passage_ids),
            "aspect_ids": list(coverage.aspect_ids),
            "probs": coverage.probs.round(6).tolist(),
            "threshold": coverage.threshold,
            "source": coverage.source,
            "pairs_scored": coverage.pairs_scored,
            "truncated_pairs": coverage.truncated_pairs,
            "seconds": coverage.seconds,
        },
        "selection": selection_record(selection),
    }
    if answer is not None:
        record["answer"] = {
            "sentences": [
                {"text": s.text, "passage_ids": list(s.passage_ids)} for s in answer.sentences
            ]
        }
    return record


def run_file_record(
    topics: Sequence[dict[str, Any]],
    *,
    dataset: str = "",
    selector: str = "",
    coverage: str = "",
    budget: str = "",
) -> dict[str, Any]:
    """The whole run file around topic records from :func:`topic_run_record`."""
    return {
        "covrag_run": RUN_FORMAT,
        "dataset": dataset,
        "selector": selector,
        "coverage": coverage,
        "budget": budget,
        "topics": list(topics),
    }


class _Reader:
    """Typed access to untrusted JSON that names the field at fault."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def fail(self, message: str, field: str) -> DataError:
        return DataError(message, path=self.path, field=field)

    def obj(self, value: Any, field: str) -> Mapping[str, Any]:
        if not isinstance(value, Mapping):
            raise self.fail("expected an object", field)
        return value

    def array(self, value: Any, field: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail("expected an array", field)
        return value

    def text(self, obj: Mapping[str, Any], key: str, field: str, default: str | None = None) -> str:
        value = obj.get(key, default)
        if not isinstance(value, str):
            raise self.fail("expected a string", f"{field}.{key}")
        return value

    def number(self, obj: Mapping[str, Any], key: str, field: str) -> float | None:
        value = obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail("expected a number or null", f"{field}.{key}")
        return float(value)

    def ids(self, value: Any, field: str) -> tuple[str, ...]:
        items = self.array(value, field)
        if not all(isinstance(i, str) for i in items):
            raise self.fail("expected an array of strings", field)
        return tuple(items)


def parse_run_file(data: Any, path: str | None = None) -> RunFile:
    """Validate a run file (already decoded from JSON) into typed records."""
    read = _Reader(path)
    root = read.obj(data, "(root)")
    if "topics" not in root:
        raise read.fail("not a covrag run file (no 'topics')", "topics")
    topics = tuple(
        _topic(read, item, f"topics[{i}]")
        for i, item in enumerate(read.array(root["topics"], "topics"))
    )
    meta = {k: root.get(k, "") for k in ("dataset", "selector", "coverage", "budget")}
    return RunFile(topics, **{k: v if isinstance(v, str) else "" for k, v in meta.items()})


def _topic(read: _Reader, value: Any, where: str) -> TopicRun:
    obj = read.obj(value, where)
    try:
        aspects = tuple(
            _aspect(read, read.obj(a, f"{where}.aspects[{j}]"), f"{where}.aspects[{j}]")
            for j, a in enumerate(read.array(obj.get("aspects"), f"{where}.aspects"))
        )
        passages = tuple(
            _passage(read, read.obj(p, f"{where}.passages[{j}]"), f"{where}.passages[{j}]")
            for j, p in enumerate(read.array(obj.get("passages"), f"{where}.passages"))
        )
        topic = Topic(
            query_id=read.text(obj, "query_id", where),
            query=read.text(obj, "query", where, default=""),
            passages=passages,
            aspects=aspects,
        )
    except ValueError as exc:
        if isinstance(exc, DataError):
            raise
        raise read.fail(str(exc), where) from None
    coverage = _coverage(read, obj.get("coverage"), f"{where}.coverage", topic)
    selection, budget = _selection(read, obj.get("selection"), f"{where}.selection", topic)
    answer = _answer(read, obj.get("answer"), f"{where}.answer", topic)
    return TopicRun(topic, coverage, selection, budget, answer)


def _aspect(read: _Reader, obj: Mapping[str, Any], where: str) -> Aspect:
    polarity = obj.get("polarity", "neutral")
    if polarity not in POLARITIES:
        raise read.fail(f"must be one of {POLARITIES}", f"{where}.polarity")
    weight = read.number(obj, "weight", where)
    return Aspect(
        id=read.text(obj, "id", where),
        text=read.text(obj, "text", where),
        weight=1.0 if weight is None else weight,
        vital=bool(obj.get("vital", False)),
        polarity=polarity,
    )


def _passage(read: _Reader, obj: Mapping[str, Any], where: str) -> Passage:
    tokens = read.number(obj, "tokens", where)
    return Passage(
        id=read.text(obj, "id", where),
        text=read.text(obj, "text", where),
        tokens=None if tokens is None else int(tokens),
        score=read.number(obj, "score", where),
    )


def _coverage(read: _Reader, value: Any, where: str, topic: Topic) -> CoverageMatrix | None:
    if value is None:
        return None
    obj = read.obj(value, where)
    passage_ids = read.ids(obj.get("passage_ids"), f"{where}.passage_ids")
    aspect_ids = read.ids(obj.get("aspect_ids"), f"{where}.aspect_ids")
    if set(passage_ids) - set(topic.passage_ids):
        raise read.fail("names passages the topic does not have", f"{where}.passage_ids")
    if set(aspect_ids) - set(topic.aspect_ids):
        raise read.fail("names aspects the topic does not have", f"{where}.aspect_ids")
    rows = read.array(obj.get("probs"), f"{where}.probs")
    try:
        return CoverageMatrix(
            passage_ids=passage_ids,
            aspect_ids=aspect_ids,
            probs=np.array(
                [[float(v) for v in read.array(r, f"{where}.probs")] for r in rows],
                dtype=np.float64,
            ).reshape(len(passage_ids), len(aspect_ids)),
            threshold=float(obj.get("threshold", 0.5)),
            source=str(obj.get("source", "unknown")),
        )
    except (TypeError, ValueError) as exc:
        raise read.fail(str(exc), f"{where}.probs") from None


def _selection(read: _Reader, value: Any, where: str, topic: Topic) -> tuple[Selection, str]:
    obj = read.obj(value, where)
    known = set(topic.passage_ids)
    aspects = set(topic.aspect_ids)
    steps = []
    for j, item in enumerate(read.array(obj.get("steps"), f"{where}.steps")):
        step = read.obj(item, f"{where}.steps[{j}]")
        passage_id = read.text(step, "passage_id", f"{where}.steps[{j}]")
        if passage_id not in known:
            raise read.fail(f"unknown passage id {passage_id!r}", f"{where}.steps[{j}].passage_id")
        newly = read.ids(step.get("newly_covered", []), f"{where}.steps[{j}].newly_covered")
        if set(newly) - aspects:
            raise read.fail("unknown aspect id", f"{where}.steps[{j}].newly_covered")
        score = read.number(step, "score", f"{where}.steps[{j}]")
        tokens = read.number(step, "tokens", f"{where}.steps[{j}]")
        steps.append(
            SelectionStep(
                passage_id=passage_id,
                score=float("nan") if score is None else score,
                newly_covered=newly,
                tokens=int(tokens or 0),
            )
        )
    selection = Selection(
        query_id=topic.query_id,
        selector=read.text(obj, "selector", where, default=""),
        budget=Budget(),
        steps=tuple(steps),
    )
    return selection, read.text(obj, "budget", where, default="")


def _answer(read: _Reader, value: Any, where: str, topic: Topic) -> Answer | None:
    if value is None:
        return None
    obj = read.obj(value, where)
    known = set(topic.passage_ids)
    sentences = []
    for j, item in enumerate(read.array(obj.get("sentences"), f"{where}.sentences")):
        sentence = read.obj(item, f"{where}.sentences[{j}]")
        cited = read.ids(sentence.get("passage_ids", []), f"{where}.sentences[{j}].passage_ids")
        if set(cited) - known:
            raise read.fail("cites an unknown passage", f"{where}.sentences[{j}].passage_ids")
        sentences.append(Citation(read.text(sentence, "text", f"{where}.sentences[{j}]"), cited))
    return Answer(tuple(sentences))
