"""The run JSON that ``covrag select --run-json`` writes and ``covrag report`` reads.

The format and its rules are :mod:`covrag.schema.runfile`; this module turns records into run-file
JSON and back. The file is untrusted input to the report: :func:`parse_run_file` validates it and
names the offending field.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from covrag.errors import DataError
from covrag.report.askview import AskView, read_ask
from covrag.schema._base import RecordError, read_model
from covrag.schema.runfile import (
    RUN_FORMAT,
    RunFileModel,
    RunTopic,
    dump,
    run_file_header,
)
from covrag.types import Answer, CoverageMatrix, Selection, Topic

__all__ = [
    "RUN_FORMAT",
    "RunFile",
    "TopicRun",
    "parse_run_file",
    "run_file_record",
    "topic_run_record",
    "write_run_file",
]


@dataclass(frozen=True)
class TopicRun:
    """One topic of a run file: its pool and aspects, coverage, selection and answer, and what
    ``covrag ask`` adds (drafts, critiques, filters, costs; None for other run files).

    ``ask`` is what the report shows beside the run; it is not part of the records a run file
    round-trips (:func:`write_run_file` writes the run-file format only), so equality skips it.
    """

    topic: Topic
    coverage: CoverageMatrix | None
    selection: Selection
    budget: str
    answer: Answer | None = None
    ask: AskView | None = field(default=None, compare=False)


@dataclass(frozen=True)
class RunFile:
    """A parsed run file."""

    topics: tuple[TopicRun, ...]
    dataset: str = ""
    selector: str = ""
    coverage: str = ""
    budget: str = ""


def topic_run_record(
    topic: Topic,
    selection: Selection,
    coverage: CoverageMatrix | None,
    answer: Answer | None = None,
) -> dict[str, Any]:
    """The run-file record of one topic (JSON-serialisable; non-finite scores become null)."""
    return dump(RunTopic.of(topic, selection, coverage, answer))


def run_file_record(
    topics: Sequence[dict[str, Any]],
    *,
    dataset: str = "",
    selector: str = "",
    coverage: str = "",
    budget: str = "",
) -> dict[str, Any]:
    """The whole run file around topic records from :func:`topic_run_record`."""
    return run_file_header(
        topics, dataset=dataset, selector=selector, coverage=coverage, budget=budget
    )


def parse_run_file(data: Any, path: str | None = None) -> RunFile:
    """Validate a run file (already decoded from JSON) into typed records."""
    if not isinstance(data, dict):
        raise DataError("expected an object", path=path, field="(root)")
    if "topics" not in data:
        raise DataError("not a covrag run file (no 'topics')", path=path, field="topics")
    run = read_model(RunFileModel, data, path=path)
    topics = []
    for i, item in enumerate(run.topics):
        try:
            topic, coverage, selection, answer = item.to_records(f"topics[{i}]")
            lengths = {p.id: len(p.text) for p in topic.passages}
            ask = read_ask(item.model_extra or {}, lengths, f"topics[{i}]", path)
        except RecordError as exc:
            raise DataError(exc.message, path=path, field=exc.field) from None
        topics.append(TopicRun(topic, coverage, selection, item.selection.budget, answer, ask))
    return RunFile(tuple(topics), run.dataset, run.selector, run.coverage, run.budget)


def write_run_file(run: RunFile) -> dict[str, Any]:
    """The JSON of a parsed run file: ``parse_run_file(write_run_file(run))`` equals ``run``."""
    topics = [topic_run_record(t.topic, t.selection, t.coverage, t.answer) for t in run.topics]
    return run_file_record(
        topics,
        dataset=run.dataset,
        selector=run.selector,
        coverage=run.coverage,
        budget=run.budget,
    )
