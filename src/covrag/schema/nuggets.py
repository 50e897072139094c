"""One line of a nugget file: a question, its kind and the nuggets a right answer states.

``{"id", "corpus", "kind", "question", "why", "nuggets": [{"id", "vital", "text", "terms",
"sources": [{"doc", "quote"}]}]}``; the format is described in ``benchmarks/answers/FORMAT.md``.
Unknown keys are errors; an answerable question has nuggets, an unanswerable one has none and
says ``why``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from covrag.schema._base import RecordError
from covrag.schema.dataset import _identifier, _non_empty

Kind = Literal["single", "across", "howto", "unanswerable"]


def _terms(value: list[list[str]]) -> list[list[str]]:
    for group in value:
        if not group or any(not t.strip() for t in group):
            raise ValueError("each term group needs at least one non-empty alternative")
    return value


class SourceLine(BaseModel):
    """Where a document states a nugget: the document's file name and a verbatim quote."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc: Annotated[str, AfterValidator(_non_empty)]
    quote: Annotated[str, AfterValidator(_non_empty)]


class NuggetLine(BaseModel):
    """One fact a right answer states, and how a checker recognises it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, AfterValidator(_identifier)]
    vital: bool = False
    text: Annotated[str, AfterValidator(_non_empty)]
    terms: Annotated[list[list[str]], Field(min_length=1), AfterValidator(_terms)]
    sources: Annotated[list[SourceLine], Field(min_length=1)]


class NuggetQuestionLine(BaseModel):
    """One question of a nugget file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Annotated[str, AfterValidator(_identifier)]
    corpus: Annotated[str, AfterValidator(_non_empty)]
    kind: Kind
    question: Annotated[str, AfterValidator(_non_empty)]
    why: str = ""
    nuggets: list[NuggetLine] = []

    @model_validator(mode="after")
    def _consistent(self) -> NuggetQuestionLine:
        if self.kind == "unanswerable":
            if self.nuggets:
                raise RecordError("nuggets", "an unanswerable question has no nuggets")
            if not self.why.strip():
                raise RecordError("why", "an unanswerable question says why")
        elif not self.nuggets:
            raise RecordError("nuggets", f"a {self.kind} question needs at least one nugget")
        ids = [n.id for n in self.nuggets]
        if len(set(ids)) != len(ids):
            raise RecordError("nuggets", "duplicate nugget id")
        return self
