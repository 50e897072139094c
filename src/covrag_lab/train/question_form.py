"""Question-form aspects: each labelled aspect rewritten as the neutral question it answers.

The bundled datasets word their aspects as statements (ArgKP key points, Perspectrum perspective
clusters), but ``covrag ask`` hands the coverage estimator LLM *sub-questions*. To train and
measure the estimator on both forms, every aspect of the train and dev splits is rewritten once,
by an LLM, as the question a person researching the topic would ask and to which the statement
is one answer ("Car bans hurt shops in the centre" -> "How do car bans affect shops in city
centres?"). Aspect ids stay the same, so the human labels carry over unchanged.

The rewrites are checked (one question per statement, in order, a real question of 4-30 words
that is not the statement itself) and written as JSONL. With eight statements per request (the
default, as the bundled files were made) the embedded 1.5B model keeps the numbering but at
times shifts questions onto neighbouring statements, which no form check sees ("Cannabis is
financially beneficial" -> "What is the safety and health of legal cannabis?"); one per request
(``chunk_size=1``) removes the shifts, but its questions come out more generic and more often
take a side (docs/experiments/20-question-aware-coverage.md). :func:`alignment` screens for shifts:
the share of statements whose own question is the nearest of their topic's questions.

Both ways write many questions that several key points of a topic answer alike: 32 pairs of
ArgKP key points share the very same bundled question ("What are the benefits of private
military companies?" for "Private military companies are not professional" and for "... main
interest is profit"), and an estimator that reads the question alone cannot tell them apart.
``style="contrast"`` asks for one key point at a time with the topic's other key points shown
as what the question must not fit, and gates each question: about the matter itself (it does not
mention or quote its statement, and shares a content word with it), not one already written for
the topic, and, as a preference dropped after the retries, nearer (MiniLM cosine) to its own key
point than to any other of the topic's.
:mod:`covrag.data.question_forms` reads the JSONL; ``covrag-lab train question-forms`` runs it, and
the bundled ``questions.jsonl`` files were made with it.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from covrag.data.question_forms import read_question_forms
from covrag.errors import StructuredOutputError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.schema.llm import Reply, sized, with_fields
from covrag.schema.question_form import QuestionFormLine
from covrag.text import content_words
from covrag.types import Topic

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

SYSTEM = "You rewrite the points people make in a debate as the neutral questions they answer."

PROMPT = """Debate topic: {topic}

Each numbered statement below is one point people make on this topic. For each statement, write
the neutral question that it answers: the question someone researching the topic would ask, to
which this statement is one possible answer. Each question must
- name its subject (never "it" or "this"),
- not take a side and not contain the statement's conclusion,
- be short (at most 15 words) and end with "?".

Example. Topic: "Cities should ban cars from their centres". Statement: "Car bans hurt shops in
the centre". Question: "How do car bans affect shops in city centres?"

Statements:
{statements}

Reply with JSON: {{"questions": [{{"n": 1, "question": "..."}}, ...]}}, one entry per statement,
in the same order."""

CONTRAST_SYSTEM = "You write the question a debater's statement is a direct answer to."

CONTRAST_PROMPT = """Debate topic: {topic}

Statement: {statement}

Other statements made on this topic, which must NOT answer your question:
{others}

Write the question that the statement is a direct answer to. The question must
- ask about the specific matter of this statement (for example its cost, its effect on a named
  group, a named risk), not a broad "What are the benefits of ...?" or "What is the impact of
  ...?" that the other statements answer too,
- ask about the matter itself: never mention "the statement", "the point" or "the argument",
  and never quote it,
- not state the statement's conclusion, so that someone who disagrees could answer it too,
- be short (at most 15 words) and end with "?".

Reply with JSON: {{"questions": [{{"n": 1, "question": "..."}}]}}"""


def _stems(text: str) -> set[str]:
    """Content words cut to their first five letters (a crude stem: "costs" ~ "costly")."""
    return {w[:5] for w in content_words(text)}


# Words of a question about the statement rather than about its matter.
_META = re.compile(r"\b(statement|point|argument|claim)s?\b|\"|(^|\s)'", re.IGNORECASE)

STYLES = ("neutral", "contrast")

# Statements per request: small enough for a 1.5B model to keep the numbering straight. It still
# shifts some questions onto neighbouring statements (ArgKP: 163 of 243 key points nearest to
# their own question, 171 with one per request, which writes more generic, more partial
# questions instead; docs/experiments/20-question-aware-coverage.md).
CHUNK = 8
PARAMS = ChatParams(temperature=0.0, max_tokens=900, seed=0)


class NumberedQuestion(Reply):
    n: int
    question: str


class QuestionsReply(Reply):
    questions: list[NumberedQuestion]


def _reply_model(n: int) -> type[QuestionsReply]:
    return with_fields(QuestionsReply, questions=sized(NumberedQuestion, n, n))


def check_questions(statements: Sequence[str]) -> Callable[[QuestionsReply], list[str]]:
    """The check of one reply: a usable question for every statement, in order."""

    def check(value: QuestionsReply) -> list[str]:
        items = value.questions
        if [item.n for item in items] != list(range(1, len(statements) + 1)):
            raise ValueError(f"number the questions 1 to {len(statements)}, one per statement")
        questions = []
        for item, statement in zip(items, statements, strict=True):
            question = " ".join(item.question.split())
            question = question.rstrip("?").rstrip() + "?" if question.endswith("?") else question
            words = question.split()
            if not question.endswith("?") or not 4 <= len(words) <= 30:
                raise ValueError(f"question {item.n} must be a question of 4 to 30 words")
            if question.rstrip("?").lower() == statement.rstrip(".").lower():
                raise ValueError(f"question {item.n} repeats its statement")
            questions.append(question)
        return questions

    return check


def check_contrast(
    statements: Sequence[str], index: int, taken: set[str], encoder: Encoder | None
) -> Callable[[QuestionsReply], list[str]]:
    """The check of one contrast reply (the question of ``statements[index]``): the form checks,
    a question not yet written for the topic and, with an ``encoder``, nearer to its own
    statement than to any other of the topic's."""
    form = check_questions([statements[index]])

    def check(value: QuestionsReply) -> list[str]:
        (question,) = form(value)
        if _META.search(question):
            raise ValueError(
                "ask about the matter itself: do not mention the statement or quote it"
            )
        if not _stems(question) & _stems(statements[index]):
            raise ValueError("ask about this statement's own matter, in its words")
        if question.lower() in taken:
            raise ValueError(
                "another statement already has this question; ask about what only this "
                "statement says"
            )
        if encoder is not None and len(statements) > 1:
            similarity = encoder.encode(statements) @ encoder.encode([question])[0]
            nearest = int(similarity.argmax())
            if nearest != index:
                raise ValueError(
                    f'the question fits the other statement "{statements[nearest]}" better '
                    "than this one; ask about what only this statement says"
                )
        return [question]

    return check


def _contrast_forms(
    topic: Topic, llm: LLM, retries: int, encoder: Encoder | None, known: Mapping[str, str]
) -> list[QuestionFormLine]:
    statements = [a.text for a in topic.aspects]
    taken = {question.lower() for question in known.values()}
    forms: list[QuestionFormLine] = []
    for index, aspect in enumerate(topic.aspects):
        if aspect.id in known:
            continue
        others = "\n".join(f"- {s}" for i, s in enumerate(statements) if i != index) or "(none)"
        prompt = CONTRAST_PROMPT.format(topic=topic.query, statement=aspect.text, others=others)
        messages = [system(CONTRAST_SYSTEM), user(prompt)]
        task = f"question form of {aspect.id} ({topic.query_id})"

        ask = functools.partial(
            chat_json, llm, messages, _reply_model(1), task=task, retries=retries, params=PARAMS
        )
        try:
            (question,) = ask(check=check_contrast(statements, index, taken, encoder)).value
        except StructuredOutputError:
            if encoder is None:  # no gate to drop: the other checks failed
                raise
            # Nearness is a preference, not a rule: after the retries keep a question that passes
            # the other checks, and say so (the alignment screen counts it afterwards).
            logger.warning("%s: no question passed the nearness gate; kept one without it", task)
            (question,) = ask(check=check_contrast(statements, index, taken, None)).value
        taken.add(question.lower())
        forms.append(
            QuestionFormLine(
                aspect_id=aspect.id,
                topic_id=topic.query_id,
                statement=aspect.text,
                question=question,
            )
        )
    return forms


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def question_forms(
    topic: Topic,
    llm: LLM,
    retries: int = 3,
    chunk_size: int = CHUNK,
    style: str = "neutral",
    encoder: Encoder | None = None,
    known: Mapping[str, str] | None = None,
) -> list[QuestionFormLine]:
    """Every aspect of ``topic`` rewritten as a question.

    ``neutral``: one LLM request per ``chunk_size`` aspects. ``contrast``: one request per
    aspect, with the topic's other aspects shown as what the question must not fit; the gate
    reads ``encoder`` (None = form and repeat checks only); aspects in ``known`` (id ->
    question written before) are not asked again, and their questions are taken.
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, not {style!r}")
    if style == "contrast":
        return _contrast_forms(topic, llm, retries, encoder, known or {})
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be at least 1, got {chunk_size}")
    forms: list[QuestionFormLine] = []
    for chunk in _chunks(topic.aspects, chunk_size):
        statements = [a.text for a in chunk]
        listing = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
        messages = [system(SYSTEM), user(PROMPT.format(topic=topic.query, statements=listing))]
        reply = chat_json(
            llm,
            messages,
            _reply_model(len(statements)),
            task=f"question forms of {topic.query_id}",
            check=check_questions(statements),
            retries=retries,
            params=PARAMS,
        )
        forms.extend(
            QuestionFormLine(aspect_id=a.id, topic_id=topic.query_id, statement=a.text, question=q)
            for a, q in zip(chunk, reply.value, strict=True)
        )
    return forms


def alignment(forms: Iterable[QuestionFormLine], encoder: Encoder | None = None) -> tuple[int, int]:
    """How many statements have their own question as the nearest (MiniLM cosine) among the
    questions of their topic, and how many statements there are.

    A question shifted onto a neighbouring statement is usually nearer to that statement than
    to its own; a generic question ("What are the benefits of X?") may lose to a sibling that is
    as generic, so the count is a screen to read, not a verdict on each line.
    """
    import numpy as np

    from covrag.embed import default_encoder

    encoder = encoder or default_encoder()
    by_topic: dict[str, list[QuestionFormLine]] = {}
    for form in forms:
        by_topic.setdefault(form.topic_id, []).append(form)
    nearest = total = 0
    for lines in by_topic.values():
        statements = encoder.encode([f.statement for f in lines])
        questions = encoder.encode([f.question for f in lines])
        similarity = statements @ questions.T
        nearest += int(np.sum(similarity.argmax(axis=1) == np.arange(len(lines))))
        total += len(lines)
    return nearest, total


def write_question_forms(
    topics: Iterable[Topic],
    llm: LLM,
    out: Path,
    progress: Callable[[Topic], None] | None = None,
    chunk_size: int = CHUNK,
    style: str = "neutral",
    encoder: Encoder | None = None,
) -> int:
    """Rewrite every aspect of ``topics`` once (aspects shared by topics are rewritten with the
    first) and write them to ``out``.

    The work goes to ``OUT.partial`` a topic at a time, so an interrupted run resumes where it
    stopped; ``out`` appears, complete, only once every aspect is rewritten. Returns the number
    of aspects written.
    """
    partial = out.with_name(out.name + ".partial")
    done = read_question_forms(partial) if partial.is_file() else {}
    with partial.open("a", encoding="utf-8") as handle:
        for topic in topics:
            todo = tuple(a for a in topic.aspects if a.id not in done)
            if todo:
                if style == "contrast":  # shows every aspect of the topic, written ones too
                    known = {a.id: done[a.id].question for a in topic.aspects if a.id in done}
                    forms = question_forms(topic, llm, style=style, encoder=encoder, known=known)
                else:
                    remaining = dataclasses.replace(topic, aspects=todo)
                    forms = question_forms(remaining, llm, chunk_size=chunk_size)
                handle.write("".join(f.model_dump_json() + "\n" for f in forms))
                handle.flush()
                done.update((f.aspect_id, f) for f in forms)
                logger.info("%s: %d question forms", topic.query_id, len(forms))
            if progress is not None:
                progress(topic)
    os.replace(partial, out)
    return len(done)
