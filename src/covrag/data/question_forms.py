"""Reworded aspects: each bundled aspect as the neutral question it answers, or paraphrased.

The bundled datasets word their aspects as statements (ArgKP key points, Perspectrum perspective
clusters), while ``covrag ask`` hands the coverage estimator sub-questions, worded by an LLM
rather than by the people who wrote the passages. Each dataset folder may hold a file per
reworded form, one line per aspect, made once with an LLM by ``covrag train question-forms``
(how, and by which model, is in the dataset's README):

- ``questions.jsonl`` (:class:`covrag.schema.question_form.QuestionFormLine`): the neutral
  question the aspect answers;
- ``paraphrases.jsonl`` (:class:`covrag.schema.question_form.ParaphraseLine`): the same point
  in other words (synonyms, broader terms), so that a model trained on it cannot match an
  aspect to its passages by shared words alone.

Loading a bundled dataset as ``name:split:questions`` (or ``:paraphrases``) swaps each aspect's
text for that form; ids, and so the human labels, stay the same.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping

from covrag.data.jsonl import decode_line
from covrag.errors import DataError
from covrag.files import iter_lines
from covrag.schema._base import read_model
from covrag.schema.question_form import FormLine, ParaphraseLine, QuestionFormLine
from covrag.types import Topic

FORMS = ("statements", "questions", "paraphrases")

#: The reworded forms: each one's file in a dataset folder and the model of its lines.
FORM_FILES: dict[str, tuple[str, type[QuestionFormLine] | type[ParaphraseLine]]] = {
    "questions": ("questions.jsonl", QuestionFormLine),
    "paraphrases": ("paraphrases.jsonl", ParaphraseLine),
}


def read_forms(path: str | os.PathLike[str], form: str = "questions") -> dict[str, FormLine]:
    """The reworded aspects in a file of ``form``, by aspect id (a repeated id is an error)."""
    name = str(path)
    model = FORM_FILES[form][1]
    forms: dict[str, FormLine] = {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        item = read_model(model, decode_line(line, name, number), path=name, line=number)
        if item.aspect_id in forms:
            message = f"aspect {item.aspect_id!r} appears twice"
            raise DataError(message, path=name, line=number, field="aspect_id")
        forms[item.aspect_id] = item
    return forms


def read_question_forms(path: str | os.PathLike[str]) -> dict[str, FormLine]:
    """The question forms in a file, by aspect id."""
    return read_forms(path, "questions")


def reworded(
    topics: Iterable[Topic], forms: Mapping[str, FormLine], source: str, form: str = "questions"
) -> list[Topic]:
    """The topics with every aspect's text replaced by its reworded ``form``.

    Raises:
        DataError: when an aspect has no line in ``source`` (never silently kept as a
            statement).
    """
    out = []
    for topic in topics:
        missing = [a.id for a in topic.aspects if a.id not in forms]
        if missing:
            raise DataError(
                f"topic {topic.query_id!r}: {len(missing)} aspects have no {form} form "
                f"(first: {missing[0]!r})",
                path=source,
            )
        aspects = tuple(dataclasses.replace(a, text=forms[a.id].text) for a in topic.aspects)
        out.append(dataclasses.replace(topic, aspects=aspects))
    return out
