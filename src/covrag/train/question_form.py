"""Question-form aspects: each labelled aspect rewritten as the neutral question it answers.

The bundled datasets word their aspects as statements (ArgKP key points, Perspectrum perspective
clusters), but ``covrag ask`` hands the coverage estimator LLM *sub-questions*. To train and
measure the estimator on both forms, every aspect of the train and dev splits is rewritten once,
by an LLM, as the question a person researching the topic would ask and to which the statement
is one answer ("Car bans hurt shops in the centre" -> "How do car bans affect shops in city
centres?"). Aspect ids stay the same, so the human labels carry over unchanged.

The same machinery writes *paraphrases* (``--form paraphrases``): each statement in other
words, keeping at most half of its own words ("Car bans hurt shops" -> "Closing town centres to
traffic damages the trade of local businesses"). ArgKP's key points mostly share words with the
arguments they match, so a model trained on them alone learns to match words; the paraphrases
are training data against that.

The rewrites are checked (one per statement, in order; a real question of 4-30 words that is not
the statement itself, or a statement of 3-30 words; a paraphrase that keeps more than half of its
statement's own words is asked for again, naming them, and the one that keeps fewest is kept)
and written as JSONL (:mod:`covrag.data.question_forms` reads them). ``covrag train
question-forms`` runs it; the bundled ``questions.jsonl`` and ``paraphrases.jsonl`` files were
made with it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from covrag.data.question_forms import FORM_FILES, read_forms
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.schema.llm import Reply, sized, with_fields
from covrag.schema.question_form import FormLine
from covrag.types import Topic

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

PARAPHRASE_SYSTEM = "You reword the points people make in a debate, keeping their meaning."

PARAPHRASE_PROMPT = """Debate topic: {topic}

Each numbered statement below is one point people make on this topic. Reword each statement so
that it says the same thing in different words, as someone summarising the debate would:
- replace its specific words with synonyms or broader terms (for example "shops" -> "local
  businesses", "fewer sales" -> "lost revenue", "kids" -> "young people"),
- keep its meaning and its side, and add no reason or example of your own,
- name its subject (never "it" or "this"), one sentence of at most 20 words, not a question.

Example. Topic: "Cities should ban cars from their centres". Statement: "Car bans hurt shops in
the centre". Reworded: "Closing town centres to traffic damages the trade of local businesses."

Statements:
{statements}

Reply with JSON: {{"paraphrases": [{{"n": 1, "paraphrase": "..."}}, ...]}}, one entry per
statement, in the same order."""

# Statements per request: small enough for a 1.5B model to keep the numbering straight.
CHUNK = 8
PARAMS = ChatParams(temperature=0.0, max_tokens=900, seed=0)
#: The most of a statement's own content words (those not in the topic) a paraphrase should
#: keep; one that keeps more is asked for again, up to AGAIN times, and the best kept.
MAX_KEPT = 0.5
AGAIN = 2


class NumberedQuestion(Reply):
    n: int
    question: str


class QuestionsReply(Reply):
    questions: list[NumberedQuestion]


class NumberedParaphrase(Reply):
    n: int
    paraphrase: str


class ParaphrasesReply(Reply):
    paraphrases: list[NumberedParaphrase]


_STOP = frozenset(
    "the and for are but not was has had its can may all any who how why what this that these "
    "those with from into than then they them their there would should could will been being "
    "more most much very such some also only just".split()
)


def _stem(word: str) -> str:
    """A crude stem: no plural s, at most 5 letters ("shops" and "shop", "bans" and "ban")."""
    if word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word[:5]


def _content_words(text: str) -> set[str]:
    """The stems of the words of 3+ letters that are not function words."""
    return {_stem(w) for w in re.findall(r"[a-z]{3,}", text.lower()) if w not in _STOP}


def _numbered(items: Sequence[Any], field: str, n: int) -> list[str]:
    if [item.n for item in items] != list(range(1, n + 1)):
        raise ValueError(f"number the {field}s 1 to {n}, one per statement")
    return [" ".join(str(getattr(item, field)).split()) for item in items]


def check_questions(statements: Sequence[str]) -> Callable[[QuestionsReply], list[str]]:
    """The check of one reply: a usable question for every statement, in order."""

    def check(value: QuestionsReply) -> list[str]:
        questions = _numbered(value.questions, "question", len(statements))
        for n, (question, statement) in enumerate(zip(questions, statements, strict=True), 1):
            if not question.endswith("?") or not 4 <= len(question.split()) <= 30:
                raise ValueError(f"question {n} must be a question of 4 to 30 words")
            if question.rstrip("?").lower() == statement.rstrip(".").lower():
                raise ValueError(f"question {n} repeats its statement")
        return questions

    return check


def check_paraphrases(statements: Sequence[str]) -> Callable[[ParaphrasesReply], list[str]]:
    """The check of one reply: a statement of 3 to 30 words for every statement, in order."""

    def check(value: ParaphrasesReply) -> list[str]:
        paraphrases = _numbered(value.paraphrases, "paraphrase", len(statements))
        for n, text in enumerate(paraphrases, 1):
            if text.endswith("?") or not 3 <= len(text.split()) <= 30:
                raise ValueError(f"paraphrase {n} must be one statement of 3 to 30 words")
        return paraphrases

    return check


def kept_words(statement: str, paraphrase: str, topic: str) -> list[str]:
    """The statement's own words (not in the topic, compared by stem) the paraphrase keeps,
    as the statement spells them."""
    kept = (_content_words(statement) - _content_words(topic)) & _content_words(paraphrase)
    words = re.findall(r"[a-z]{3,}", statement.lower())
    return list(dict.fromkeys(w for w in words if w not in _STOP and _stem(w) in kept))


def kept_share(statement: str, paraphrase: str, topic: str) -> float:
    """The share of the statement's own words (stems) the paraphrase keeps (0 without any)."""
    own = _content_words(statement) - _content_words(topic)
    return len(own & _content_words(paraphrase)) / len(own) if own else 0.0


@dataclasses.dataclass(frozen=True)
class Rewording:
    """How one reworded form is asked for and checked."""

    form: str
    system: str
    prompt: str
    reply: type[Reply]
    item: type[Reply]
    field: str
    check: Callable[[Sequence[str]], Callable[[Any], list[str]]]


REWORDINGS = {
    "questions": Rewording(
        "questions",
        SYSTEM,
        PROMPT,
        QuestionsReply,
        NumberedQuestion,
        "question",
        check_questions,
    ),
    "paraphrases": Rewording(
        "paraphrases",
        PARAPHRASE_SYSTEM,
        PARAPHRASE_PROMPT,
        ParaphrasesReply,
        NumberedParaphrase,
        "paraphrase",
        check_paraphrases,
    ),
}


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _reword(
    topic: Topic, statements: Sequence[str], llm: LLM, rewording: Rewording, retries: int
) -> list[str]:
    """One request: ``statements`` (numbered lines) reworded, checked, in order."""
    listing = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, 1))
    prompt = rewording.prompt.format(topic=topic.query, statements=listing)
    reply_model = with_fields(
        rewording.reply,
        **{rewording.form: sized(rewording.item, len(statements), len(statements))},
    )
    reply = chat_json(
        llm,
        [system(rewording.system), user(prompt)],
        reply_model,
        task=f"{rewording.form} of {topic.query_id}",
        check=rewording.check(statements),
        retries=retries,
        params=PARAMS,
    )
    return list(reply.value)


def _paraphrase_again(
    topic: Topic, texts: dict[str, str], llm: LLM, rewording: Rewording, retries: int
) -> None:
    """Ask again, up to :data:`AGAIN` times, for the paraphrases that keep more than
    :data:`MAX_KEPT` of their statement's own words, naming those words; keep the best."""
    for _ in range(AGAIN):
        todo = [a for a in topic.aspects if kept_share(a.text, texts[a.id], topic.query) > MAX_KEPT]
        if not todo:
            return
        for chunk in _chunks(todo, CHUNK):
            lines = [
                f"{a.text} (do not use the words: "
                f"{', '.join(kept_words(a.text, texts[a.id], topic.query))})"
                for a in chunk
            ]
            for a, text in zip(chunk, _reword(topic, lines, llm, rewording, retries), strict=True):
                if kept_share(a.text, text, topic.query) < kept_share(
                    a.text, texts[a.id], topic.query
                ):
                    texts[a.id] = text


def question_forms(
    topic: Topic, llm: LLM, retries: int = 3, form: str = "questions"
) -> list[FormLine]:
    """Every aspect of ``topic`` reworded in ``form`` (one LLM request per chunk; paraphrases
    that keep too many of their statement's words are asked for again)."""
    rewording = REWORDINGS[form]
    texts: dict[str, str] = {}
    for chunk in _chunks(topic.aspects, CHUNK):
        statements = [a.text for a in chunk]
        replies = _reword(topic, statements, llm, rewording, retries)
        texts.update(zip([a.id for a in chunk], replies, strict=True))
    if form == "paraphrases":
        _paraphrase_again(topic, texts, llm, rewording, retries)
    line = FORM_FILES[form][1]
    return [
        line.model_validate(
            {
                "aspect_id": a.id,
                "topic_id": topic.query_id,
                "statement": a.text,
                rewording.field: texts[a.id],
            }
        )
        for a in topic.aspects
    ]


def write_question_forms(
    topics: Iterable[Topic],
    llm: LLM,
    out: Path,
    progress: Callable[[Topic], None] | None = None,
    form: str = "questions",
) -> int:
    """Reword every aspect of ``topics`` once in ``form`` (aspects shared by topics are
    reworded with the first) and write them to ``out``.

    The work goes to ``OUT.partial`` a topic at a time, so an interrupted run resumes where it
    stopped; ``out`` appears, complete, only once every aspect is rewritten. Returns the number
    of aspects written.
    """
    partial = out.with_name(out.name + ".partial")
    done = read_forms(partial, form) if partial.is_file() else {}
    with partial.open("a", encoding="utf-8") as handle:
        for topic in topics:
            todo = tuple(a for a in topic.aspects if a.id not in done)
            if todo:
                forms = question_forms(dataclasses.replace(topic, aspects=todo), llm, form=form)
                handle.write("".join(f.model_dump_json() + "\n" for f in forms))
                handle.flush()
                done.update((f.aspect_id, f) for f in forms)
                logger.info("%s: %d %s", topic.query_id, len(forms), form)
            if progress is not None:
                progress(topic)
    os.replace(partial, out)
    return len(done)
