"""The run file: what ``covrag select --run-json`` and ``covrag ask`` write, ``covrag report``
and ``covrag eval-answers`` read.

One file holds, per topic, everything needed to see what a selection did: the aspects, the
passages, the coverage matrix with its threshold, the selection with its trace of newly covered
aspects, and (when a generator wrote one) the answer with its citations::

    {"covrag_run": 1, "dataset": "argkp2021:dev", "selector": "greedy-coverage",
     "coverage": "gold", "budget": "k=10",
     "topics": [{"query_id": "...", "query": "...",
                 "aspects": [{"id", "text", "weight", "vital", "polarity", "answers"}],
                 "passages": [{"id", "text", "tokens", "score",
                               "doc_id", "title", "source", "start", "end", "page"}],
                 "coverage": {"passage_ids", "aspect_ids", "probs", "threshold", "source", ...},
                 "selection": {"selector", "budget", "tokens_used", "seconds",
                               "steps": [{"passage_id", "score", "newly_covered", "tokens"}]},
                 "answer": {"sentences": [{"text", "passage_ids", "aspect_id", "framing",
                                           "check"}],
                            "dropped": [...]}}]}

``coverage`` may be null (a selector that reads none) and ``answer`` may be absent. A sentence of
a checked answer (:mod:`covrag.generate.support`) carries its ``check``: ``cited_as_written``
(the ids before repair), ``verified`` (``aligned``, ``judged``, ``composed`` or
``unsupported``), ``score`` and, when supported, ``passage_id`` and ``span`` (``[start, end)``
of that passage's text, checked to lie inside it); ``dropped`` holds the sentences the check
left out. A passage cut from a user's document (``covrag index --docs``) also names the
document (``doc_id``, ``title``, ``source``) and where in its extracted text it lies
(``start``, ``end``; from a PDF also the ``page`` it starts on); other passages leave these
out. Non-finite
step scores are written as null and read back as NaN; probabilities are written to 6 decimals.
Other fields (``covrag ask`` adds its plan, searches, drafts and costs) are allowed; the report
reads the ask blocks it shows (:mod:`covrag.report.askview`) and ignores the rest. A run file
round-trips: the records read back equal the records written, their budget included.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Annotated, Any, Self

import numpy as np
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from covrag.schema._base import RecordError
from covrag.schema.answer import RunAnswer as RunAnswer  # re-exported: the run file's answer
from covrag.schema.answer import RunCheck as RunCheck
from covrag.schema.answer import RunSentence as RunSentence
from covrag.types import (
    Answer,
    Aspect,
    Budget,
    CoverageMatrix,
    Passage,
    Polarity,
    Selection,
    SelectionStep,
    Topic,
    as_mapping,
)

RUN_FORMAT = 1


def parse_budget(text: str) -> Budget:
    """The budget a run file names: ``k=10``, ``tokens=1024``, ``k=10,tokens=1024``, ``unlimited``
    (what ``str(Budget)`` writes) or empty.

    Raises:
        ValueError: for anything else.
    """
    if text.strip() in ("", "all", "unlimited"):
        return Budget()
    values: dict[str, int] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in ("k", "tokens") or not value.strip().isdigit():
            raise ValueError(f"budget {text!r}: use k=N, tokens=N or k=N,tokens=N")
        values[key] = int(value)
    try:
        return Budget(max_passages=values.get("k"), max_tokens=values.get("tokens"))
    except ValueError as exc:
        raise ValueError(f"budget {text!r}: {exc}") from None


def _budget_text(value: Any) -> Any:
    if isinstance(value, str):
        parse_budget(value)
    return value


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


class _Record(BaseModel):
    # Numbers may be written as integers (3 for 3.0); strings are never numbers.
    model_config = ConfigDict(extra="allow")


class RunAspect(_Record):
    id: str
    text: str
    weight: float | None = 1.0
    vital: bool = False
    polarity: Polarity = "neutral"
    answers: list[str] = Field(default=[], description="answer sketches the estimator also read")

    def to_aspect(self) -> Aspect:
        weight = 1.0 if self.weight is None else self.weight
        return Aspect(
            self.id, self.text, weight, self.vital, self.polarity, answers=tuple(self.answers)
        )

    @classmethod
    def of(cls, a: Aspect) -> Self:
        values: dict[str, Any] = {
            "id": a.id,
            "text": a.text,
            "weight": a.weight,
            "vital": a.vital,
            "polarity": a.polarity,
        }
        if a.answers:  # written only when there are some: earlier run files stay as they were
            values["answers"] = list(a.answers)
        return cls.model_validate(values)


#: Where a passage of a user's document comes from (``covrag index --docs``): written to the run
#: file when the passage's metadata has them, so an answer's citations can name the document.
ORIGIN_FIELDS = ("doc_id", "title", "source", "start", "end", "page")


class RunPassage(_Record):
    id: str
    text: str
    tokens: int | None = None
    score: float | None = None
    doc_id: str | None = Field(default=None, description="the document it was cut from")
    title: str | None = Field(default=None, description="that document's title")
    source: str | None = Field(default=None, description="that document's file")
    start: int | None = Field(default=None, description="first character in the document's text")
    end: int | None = Field(default=None, description="one past its last character")
    page: int | None = Field(default=None, description="the PDF page it starts on (1-based)")

    def to_passage(self) -> Passage:
        # The document fields, then any extra keys (run files of other tools), as metadata.
        origin = {name: getattr(self, name) for name in ORIGIN_FIELDS}
        metadata = {name: value for name, value in origin.items() if value is not None}
        metadata.update(self.model_extra or {})
        return Passage(
            self.id, self.text, tokens=self.tokens, score=self.score, metadata=as_mapping(metadata)
        )

    @classmethod
    def of(cls, p: Passage) -> Self:
        origin = {name: p.metadata[name] for name in ORIGIN_FIELDS if name in p.metadata}
        return cls(id=p.id, text=p.text, tokens=p.tokens, score=p.score, **origin)


class RunCoverage(_Record):
    """P[passage, aspect] with the threshold that turns it into coverage, and what it cost."""

    passage_ids: list[str]
    aspect_ids: list[str]
    probs: list[list[float]] = Field(description="rows: passages, columns: aspects, in [0, 1]")
    threshold: float = 0.5
    source: str = Field(default="unknown", description="the estimator that produced it")
    pairs_scored: int = 0
    truncated_pairs: int = Field(default=0, description="pairs cut to the model's token limit")
    seconds: float = 0.0
    aspect_thresholds: list[float] | None = Field(
        default=None, description="a threshold per aspect, in place of threshold"
    )

    def to_matrix(self) -> CoverageMatrix:
        probs = np.array(self.probs, dtype=np.float64)
        return CoverageMatrix(
            passage_ids=tuple(self.passage_ids),
            aspect_ids=tuple(self.aspect_ids),
            probs=probs.reshape(len(self.passage_ids), len(self.aspect_ids)),
            threshold=self.threshold,
            source=self.source,
            pairs_scored=self.pairs_scored,
            seconds=self.seconds,
            truncated_pairs=self.truncated_pairs,
            aspect_thresholds=(
                None if self.aspect_thresholds is None else tuple(self.aspect_thresholds)
            ),
        )

    @classmethod
    def of(cls, m: CoverageMatrix) -> Self:
        return cls(
            passage_ids=list(m.passage_ids),
            aspect_ids=list(m.aspect_ids),
            probs=m.probs.round(6).tolist(),
            threshold=m.threshold,
            source=m.source,
            pairs_scored=m.pairs_scored,
            truncated_pairs=m.truncated_pairs,
            seconds=m.seconds,
            aspect_thresholds=None if m.aspect_thresholds is None else list(m.aspect_thresholds),
        )


class RunStep(_Record):
    """One pick of the selector."""

    passage_id: str
    score: float | None = Field(
        default=None, description="the value that chose it (null when not finite)"
    )
    newly_covered: list[str] = Field(
        default_factory=list, description="aspect ids this pick covered first"
    )
    tokens: int | None = 0

    def to_step(self) -> SelectionStep:
        score = math.nan if self.score is None else self.score
        return SelectionStep(self.passage_id, score, tuple(self.newly_covered), self.tokens or 0)

    @classmethod
    def of(cls, s: SelectionStep) -> Self:
        return cls(
            passage_id=s.passage_id,
            score=_finite(s.score),
            newly_covered=list(s.newly_covered),
            tokens=s.tokens,
        )


class RunSelection(_Record):
    """A selection with its per-step trace."""

    selector: str = ""
    budget: Annotated[str, BeforeValidator(_budget_text)] = ""
    tokens_used: int = 0
    seconds: float = 0.0
    steps: list[RunStep]

    def to_selection(self, query_id: str) -> Selection:
        steps = tuple(s.to_step() for s in self.steps)
        budget = parse_budget(self.budget)
        return Selection(query_id, self.selector, budget, steps, seconds=self.seconds)

    @classmethod
    def of(cls, s: Selection) -> Self:
        return cls(
            selector=s.selector,
            budget=str(s.budget),
            tokens_used=s.tokens_used,
            seconds=s.seconds,
            steps=[RunStep.of(step) for step in s.steps],
        )


class RunTopic(_Record):
    """One topic of a run file: its pool and aspects, coverage, selection and answer."""

    query_id: str
    query: str = ""
    aspects: list[RunAspect]
    passages: list[RunPassage]
    coverage: RunCoverage | None = None
    selection: RunSelection
    answer: RunAnswer | None = None

    def check(self, where: str) -> None:
        """The references between the parts: ids named are ids the topic has."""
        passages = {p.id for p in self.passages}
        aspects = {a.id for a in self.aspects}
        if self.coverage is not None:
            _check_coverage(self.coverage, passages, aspects, f"{where}.coverage")
        for j, step in enumerate(self.selection.steps):
            at = f"{where}.selection.steps[{j}]"
            if step.passage_id not in passages:
                raise RecordError(f"{at}.passage_id", f"unknown passage id {step.passage_id!r}")
            if set(step.newly_covered) - aspects:
                raise RecordError(f"{at}.newly_covered", "unknown aspect id")
        if self.answer is not None:
            lengths = {p.id: len(p.text) for p in self.passages}
            self.answer.check_references(lengths, f"{where}.answer")

    def to_records(
        self, where: str
    ) -> tuple[Topic, CoverageMatrix | None, Selection, Answer | None]:
        """The records of the topic (``where`` names it in errors)."""
        try:
            topic = Topic(
                query_id=self.query_id,
                query=self.query,
                passages=tuple(p.to_passage() for p in self.passages),
                aspects=tuple(a.to_aspect() for a in self.aspects),
            )
        except ValueError as exc:
            raise RecordError(where, str(exc)) from None
        try:
            coverage = None if self.coverage is None else self.coverage.to_matrix()
        except ValueError as exc:
            raise RecordError(f"{where}.coverage.probs", str(exc)) from None
        selection = self.selection.to_selection(topic.query_id)
        answer = None if self.answer is None else self.answer.to_answer()
        return topic, coverage, selection, answer

    @classmethod
    def of(
        cls,
        topic: Topic,
        selection: Selection,
        coverage: CoverageMatrix | None,
        answer: Answer | None = None,
    ) -> Self:
        values: dict[str, Any] = {
            "query_id": topic.query_id,
            "query": topic.query,
            "aspects": [RunAspect.of(a) for a in topic.aspects],
            "passages": [RunPassage.of(p) for p in topic.passages],
            "coverage": None if coverage is None else RunCoverage.of(coverage),
            "selection": RunSelection.of(selection),
        }
        if answer is not None:
            values["answer"] = RunAnswer.of(answer)
        return cls.model_validate(values)


def _check_coverage(
    coverage: RunCoverage, passages: set[str], aspects: set[str], where: str
) -> None:
    if set(coverage.passage_ids) - passages:
        raise RecordError(f"{where}.passage_ids", "names passages the topic does not have")
    if set(coverage.aspect_ids) - aspects:
        raise RecordError(f"{where}.aspect_ids", "names aspects the topic does not have")
    width = len(coverage.aspect_ids)
    if len(coverage.probs) != len(coverage.passage_ids) or any(
        len(row) != width for row in coverage.probs
    ):
        shape = f"({len(coverage.passage_ids)}, {width})"
        raise RecordError(f"{where}.probs", f"expected a matrix of shape {shape}")


def _text_or_blank(value: Any) -> str:
    return value if isinstance(value, str) else ""


Label = Annotated[str, BeforeValidator(_text_or_blank)]


class RunFileModel(_Record):
    """A whole run file."""

    covrag_run: int = RUN_FORMAT
    dataset: Label = ""
    selector: Label = ""
    coverage: Label = ""
    budget: Label = ""
    topics: list[RunTopic]

    @model_validator(mode="after")
    def _references(self) -> RunFileModel:
        for i, topic in enumerate(self.topics):
            topic.check(f"topics[{i}]")
        return self


def dump(model: BaseModel) -> dict[str, Any]:
    """The JSON object of a model built with ``of``: fields not given are not written."""
    record: dict[str, Any] = model.model_dump(exclude_unset=True, warnings=False)
    return record


def run_file_header(
    topics: Sequence[dict[str, Any]],
    *,
    dataset: str = "",
    selector: str = "",
    coverage: str = "",
    budget: str = "",
) -> dict[str, Any]:
    """The whole run file around topic records (``dump(RunTopic.of(...))`` and extensions)."""
    header = RunFileModel(
        covrag_run=RUN_FORMAT,
        dataset=dataset,
        selector=selector,
        coverage=coverage,
        budget=budget,
        topics=[],
    )
    return {**dump(header), "topics": list(topics)}
