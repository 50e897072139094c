"""One line of a question-form file: an aspect and the neutral question it answers."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from covrag.schema.dataset import _identifier, _non_empty


def _question(value: str) -> str:
    text = " ".join(value.split())
    if not text.endswith("?"):
        raise ValueError("must be a question (end with '?')")
    return text


class QuestionFormLine(BaseModel):
    """``{"aspect_id", "topic_id", "statement", "question"}``; unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    aspect_id: Annotated[str, AfterValidator(_identifier)]
    topic_id: Annotated[str, AfterValidator(_identifier)]
    statement: Annotated[str, AfterValidator(_non_empty)]
    question: Annotated[str, AfterValidator(_non_empty), AfterValidator(_question)]
