"""Question-form aspects: each bundled aspect worded as the neutral question it answers.

The bundled datasets word their aspects as statements (ArgKP key points, Perspectrum perspective
clusters), while ``covrag ask`` hands the coverage estimator sub-questions. Each dataset folder
may hold ``questions.jsonl``, one line per aspect (see
:class:`covrag.schema.question_form.QuestionFormLine`), made once with an LLM by
``covrag-lab train question-forms`` (how, and by which model, is in the dataset's README). Loading a
bundled dataset as ``name:split:questions`` swaps each aspect's text for its question; ids, and
so the human labels, stay the same.

``name:split:paraphrases`` needs no file: each aspect is worded as one of the passages its
annotators matched to it (:func:`as_paraphrases`), so the aspect shares few words with the other
passages that cover it, as a user's sub-question and a pool representative do.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Iterable, Mapping

from covrag.data.jsonl import decode_line
from covrag.errors import DataError
from covrag.files import iter_lines
from covrag.schema._base import read_model
from covrag.schema.question_form import QuestionFormLine
from covrag.types import Topic

FORMS = ("statements", "questions", "paraphrases")


def read_question_forms(path: str | os.PathLike[str]) -> dict[str, QuestionFormLine]:
    """The question forms in a file, by aspect id (a repeated aspect id is an error)."""
    name = str(path)
    forms: dict[str, QuestionFormLine] = {}
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        form = read_model(QuestionFormLine, decode_line(line, name, number), path=name, line=number)
        if form.aspect_id in forms:
            message = f"aspect {form.aspect_id!r} appears twice"
            raise DataError(message, path=name, line=number, field="aspect_id")
        forms[form.aspect_id] = form
    return forms


def as_questions(
    topics: Iterable[Topic], forms: Mapping[str, QuestionFormLine], source: str
) -> list[Topic]:
    """The topics with every aspect's text replaced by its question form.

    Raises:
        DataError: when an aspect has no question form in ``source`` (never silently kept as
            a statement).
    """
    out = []
    for topic in topics:
        missing = [a.id for a in topic.aspects if a.id not in forms]
        if missing:
            raise DataError(
                f"topic {topic.query_id!r}: {len(missing)} aspects have no question form "
                f"(first: {missing[0]!r})",
                path=source,
            )
        aspects = tuple(dataclasses.replace(a, text=forms[a.id].question) for a in topic.aspects)
        out.append(dataclasses.replace(topic, aspects=aspects))
    return out


def as_paraphrases(topics: Iterable[Topic]) -> list[Topic]:
    """The topics with each aspect worded as one of the passages labelled with it.

    The passage is drawn by a hash of the aspect's id, so every load gives the same one. An
    aspect with fewer than two labelled passages keeps its own text: the drawn passage is the
    only one that covers it, and a pair of a text with itself teaches nothing (the training pairs
    leave such a pair out). Ids and labels stay the same.
    """
    out = []
    for topic in topics:
        texts = {p.id: p.text for p in topic.passages}
        matched: dict[str, list[str]] = {}
        for passage_id in sorted(topic.labels):
            for aspect_id in topic.labels[passage_id]:
                matched.setdefault(aspect_id, []).append(passage_id)
        aspects = []
        for aspect in topic.aspects:
            ids = matched.get(aspect.id, [])
            if len(ids) >= 2:
                pick = int(hashlib.sha256(aspect.id.encode()).hexdigest(), 16) % len(ids)
                aspect = dataclasses.replace(aspect, text=texts[ids[pick]])
            aspects.append(aspect)
        out.append(dataclasses.replace(topic, aspects=tuple(aspects)))
    return out
