"""Answer sketches: the statements a passage answering a sub-question would make.

The coverage cross-encoder learnt from (argument, key point) statements. Against a broad
question it is unsure even of a passage that answers it ("School uniforms are often expensive"
gets 0.06 for "What are the financial implications of requiring uniforms?"), while a statement
of the same answer in concrete words is easy for it ("Uniforms cost families a lot of money":
0.98). So before coverage is estimated, the LLM writes for each question-worded aspect a few
short statements an answer could make, on different sides, and the estimator scores each
passage against the question and each sketch, keeping the highest
(:func:`covrag.coverage.base.expand_answers`). This is HyDE's move (Gao et al., 2023, "Precise
Zero-Shot Dense Retrieval without Relevance Labels": an LLM writes a hypothetical answer and
that, not the question, is matched against documents), applied to aspects instead of queries.

The sketches are stored on the aspect (:attr:`covrag.types.Aspect.answers`); a sketch claims
nothing about the world: it is only a wording to match passages against.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from covrag.errors import ConfigError, StructuredOutputError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.plan.decompose import normalise
from covrag.schema.llm import Reply, sized, with_fields
from covrag.text import is_question, words
from covrag.types import Aspect, Topic

logger = logging.getLogger(__name__)

SYSTEM = (
    "You help a search engine recognise passages that answer a question. You write the short, "
    "concrete statements such passages make. You reply with JSON only."
)

MAX_WORDS = 30
SHORT = 15
#: The worked example of the prompt (another topic's sketches); a reply that copies it is refused.
EXAMPLE = (
    "TV stations would lose money from burger adverts.",
    "Channels would simply sell the slots to other advertisers.",
    "Children would see fewer junk food commercials.",
)
_EXAMPLE_WORDS = frozenset(normalise(e) for e in EXAMPLE)


class AnswersReply(Reply):
    """``{"answers": ["...", ...]}``."""

    answers: list[str]


@lru_cache(maxsize=16)
def answers_reply(least: int, most: int) -> type[AnswersReply]:
    """The reply with ``least``..``most`` answers."""
    return with_fields(AnswersReply, answers=sized(str, least, most))


def sketch_problem(text: str, question: str) -> str | None:
    """Why ``text`` is not a usable sketch of an answer to ``question`` (None when it is)."""
    if is_question(text):
        return f"{text!r} is a question, not a statement"
    count = len(words(text))
    if count < 3:
        return f"{text!r} is too short to be a statement"
    if count > MAX_WORDS:
        return f"{text!r} is longer than {MAX_WORDS} words"
    if normalise(text) == normalise(question):
        return f"{text!r} repeats the question"
    if normalise(text) in _EXAMPLE_WORDS:
        return f"{text!r} copies the example, which is about another topic"
    return None


@dataclass
class AnswerSketcher:
    """Sub-question -> ``n`` short statements a passage answering it would make.

    Args:
        llm: The backend that writes them.
        n: Sketches per aspect.
        retries: Extra attempts when a reply is unparsable or has no usable statement.
        max_tokens: Token limit of each reply.
    """

    llm: LLM
    n: int = 3
    retries: int = 2
    max_tokens: int = 200

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"n must be >= 1, got {self.n}")

    def sketch(self, aspect: str, question: str = "") -> tuple[str, ...]:
        """The sketches of ``aspect`` (a sub-question of ``question``, when given).

        Raises:
            StructuredOutputError: when the LLM gives no usable statement within the retries.
        """
        context = f"Main question: {question}\n" if question else ""
        prompt = (
            f"{context}Sub-question: {aspect}\n\n"
            f"Write {self.n} different short statements (one sentence, at most {SHORT} words "
            "each) that a passage answering the sub-question could make: different answers, "
            "on different sides where people disagree. Name concrete people, things and "
            "effects in plain everyday words instead of repeating the sub-question's general "
            "words. As in this example about another topic, 'Should we ban fast food "
            "advertising?': for 'How would a ban affect television channels?' write "
            f'{{"answers": {json.dumps(list(EXAMPLE))}}}. Statements, not questions.\n'
            f'Reply with JSON: {{"answers": [{self.n} strings]}}'
        )

        def check(value: AnswersReply) -> tuple[str, ...]:
            kept: list[str] = []
            seen: set[str] = set()
            problems: list[str] = []
            for raw in value.answers:
                text = " ".join(raw.split()).strip("\"'")
                problem = sketch_problem(text, aspect)
                if problem is not None:
                    problems.append(problem)
                elif (key := normalise(text)) not in seen:
                    seen.add(key)
                    kept.append(text)
            if not kept:
                raise ValueError("no usable statement: " + "; ".join(problems[:3]))
            return tuple(kept)

        result = chat_json(
            self.llm,
            [system(SYSTEM), user(prompt)],
            answers_reply(1, self.n),
            task=f"sketch answers to {aspect!r}",
            check=check,
            retries=self.retries,
            params=ChatParams(max_tokens=self.max_tokens),
        )
        value: tuple[str, ...] = result.value
        return value

    def apply(self, topic: Topic) -> Topic:
        """``topic`` with sketches on each wanted aspect worded as a question and without any."""
        return dataclasses.replace(topic, aspects=self.sketch_aspects(topic.aspects, topic.query))

    def sketch_aspects(
        self,
        aspects: Sequence[Aspect],
        question: str = "",
        failures: list[str] | None = None,
    ) -> tuple[Aspect, ...]:
        """``aspects``, each wanted question without sketches given its sketches.

        Args:
            aspects: The aspects.
            question: The question they are sub-questions of.
            failures: When given, an aspect the LLM gives no usable sketch for keeps none and
                why is appended here (sketches only help the estimator); else the error is
                raised.
        """
        sketched: list[Aspect] = []
        for aspect in aspects:
            if wants(aspect):
                try:
                    aspect = dataclasses.replace(aspect, answers=self.sketch(aspect.text, question))
                except StructuredOutputError as exc:
                    if failures is None:
                        raise
                    first = str(exc).splitlines()[0]
                    failures.append(f"no answer sketches for {aspect.id} ({first})")
                    logger.warning("%s", failures[-1])
            sketched.append(aspect)
        return tuple(sketched)


def wants(aspect: Aspect) -> bool:
    """Whether an aspect is one to sketch: a wanted question that has no sketches yet."""
    return aspect.polarity != "exclude" and not aspect.answers and is_question(aspect.text)
