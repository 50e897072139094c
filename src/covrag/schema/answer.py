"""The answer of a run file: its sentences, each with its citations and support check, and the
sentences the check dropped (:mod:`covrag.schema.runfile` holds the rest of the format)."""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from covrag.schema._base import RecordError
from covrag.types import Answer, Citation, SupportCheck, Verified


class _Record(BaseModel):
    model_config = ConfigDict(extra="allow")


class RunCheck(_Record):
    """How a sentence was checked against the passages (``types.SupportCheck``)."""

    cited_as_written: list[str] = Field(description="passage ids the writer cited, unrepaired")
    verified: Verified = Field(
        description="aligned, judged, composed (a command line of documented options) or "
        "unsupported"
    )
    score: float = Field(description="alignment share (aligned) or the judge's probability")
    passage_id: str | None = Field(default=None, description="the passage holding the span")
    span: list[int] | None = Field(
        default=None, description="[start, end) characters of that passage's text"
    )

    @model_validator(mode="after")
    def _span(self) -> RunCheck:
        if (self.passage_id is None) != (self.span is None):
            raise ValueError("passage_id and span are given together or not at all")
        if self.span is not None and (len(self.span) != 2 or not 0 <= self.span[0] < self.span[1]):
            raise ValueError("span must be [start, end] with 0 <= start < end")
        return self

    def to_check(self) -> SupportCheck:
        span = None if self.span is None else (self.span[0], self.span[1])
        return SupportCheck(
            tuple(self.cited_as_written), self.verified, self.score, self.passage_id, span
        )

    @classmethod
    def of(cls, c: SupportCheck) -> Self:
        values: dict[str, Any] = {
            "cited_as_written": list(c.written),
            "verified": c.verified,
            "score": c.score,
        }
        if c.passage_id is not None and c.span is not None:
            values["passage_id"] = c.passage_id
            values["span"] = list(c.span)
        return cls.model_validate(values)


class RunSentence(_Record):
    text: str
    passage_ids: list[str] = []
    aspect_id: str | None = None
    framing: bool = False
    check: RunCheck | None = Field(default=None, description="the support check, when run")

    def to_citation(self) -> Citation:
        check = None if self.check is None else self.check.to_check()
        return Citation(self.text, tuple(self.passage_ids), self.aspect_id, self.framing, check)

    @classmethod
    def of(cls, s: Citation) -> Self:
        values: dict[str, Any] = {"text": s.text, "passage_ids": list(s.passage_ids)}
        if s.aspect_id is not None:  # written only when set: older readers see the same record
            values["aspect_id"] = s.aspect_id
        if s.framing:
            values["framing"] = True
        if s.check is not None:
            values["check"] = RunCheck.of(s.check)
        return cls.model_validate(values)


class RunAnswer(_Record):
    sentences: list[RunSentence]
    dropped: list[RunSentence] = Field(
        default=[], description="sentences the support check left out (no passage supports them)"
    )

    def to_answer(self) -> Answer:
        return Answer(
            tuple(s.to_citation() for s in self.sentences),
            tuple(s.to_citation() for s in self.dropped),
        )

    @classmethod
    def of(cls, answer: Answer) -> Self:
        values: dict[str, Any] = {"sentences": [RunSentence.of(s) for s in answer.sentences]}
        if answer.dropped:  # written only when some were dropped
            values["dropped"] = [RunSentence.of(s) for s in answer.dropped]
        return cls.model_validate(values)

    def check_references(self, passages: dict[str, int], where: str) -> None:
        """Cited ids and support spans name passages of the topic, and spans lie in their text
        (``passages``: id -> length of its text)."""
        for part, sentences in (("sentences", self.sentences), ("dropped", self.dropped)):
            for j, sentence in enumerate(sentences):
                at = f"{where}.{part}[{j}]"
                if set(sentence.passage_ids) - passages.keys():
                    raise RecordError(f"{at}.passage_ids", "cites an unknown passage")
                check = sentence.check
                if check is None or check.passage_id is None or check.span is None:
                    continue
                if check.passage_id not in passages:
                    raise RecordError(f"{at}.check.passage_id", "names an unknown passage")
                if check.span[1] > passages[check.passage_id]:
                    raise RecordError(f"{at}.check.span", "ends after the passage's text")
