"""Aspects discovered from the candidate pool itself, key-point-analysis style.

When an LLM's sub-questions are too generic (a 1.5B model on debate topics writes "What are the
benefits of X?"), the pool already says what the viewpoints are: the passages that best represent
all the others are its key points (Bar-Haim et al., "From arguments to key points", ACL 2020,
extract key points from the arguments themselves). Representatives are chosen by facility location
over embedding similarity, ``f(S) = sum_i max_{j in S} sim(i, j)`` maximised greedily, so each new
aspect represents passages the earlier ones did not. Optionally an LLM rewrites each representative
as the short question it answers.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from covrag.errors import ConfigError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.plan.decompose import clean_question
from covrag.schema.llm import Reply
from covrag.selectors.base import BudgetTracker
from covrag.selectors.facility import FacilityLocation, embedding_similarity
from covrag.selectors.optimize import SATURATED, lazy_greedy
from covrag.types import Aspect, Budget, Topic, as_mapping

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

REWRITE_SYSTEM = "You name the point an argument makes, as one short question. Reply with JSON."


class QuestionReply(Reply):
    """``{"question": ...}``: a pool passage's point as a question."""

    question: str


@dataclass
class PoolAspectFinder:
    """Topic pool -> ``k`` aspects: the passages that best represent the pool.

    Args:
        k: Aspects wanted (fewer when the pool is smaller or saturates).
        max_words: Only passages of at most this many words may become aspects (key points are
            short); None = any. Falls back to every passage when too few are short enough.
        distinct: A passage whose cosine to a chosen representative is at least this cannot
            be chosen too (facility location alone puts several representatives in a dense
            cluster, i.e. repeats the most common point); None = no such limit.
        rewrite: ``None`` keeps each representative's text; ``question`` asks ``llm`` to
            rewrite it as the question it answers.
        llm: The backend for ``rewrite``.
        encoder: Sentence encoder (default: packaged MiniLM).
    """

    k: int = 10
    max_words: int | None = 20
    distinct: float | None = 0.7
    rewrite: str | None = None
    llm: LLM | None = field(default=None, repr=False)
    encoder: Encoder | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"k must be >= 1, got {self.k}")
        if self.rewrite not in (None, "question"):
            raise ConfigError(f"rewrite must be None or 'question', got {self.rewrite!r}")
        if self.rewrite and self.llm is None:
            raise ConfigError("rewrite='question' needs an llm")

    def representatives(self, topic: Topic) -> list[int]:
        """Pool indices of the chosen representatives, in the order facility location picks."""
        passages = topic.passages
        if not passages:
            return []
        if self.encoder is None:
            from covrag.embed import default_encoder

            self.encoder = default_encoder()
        vectors = self.encoder.encode([p.text for p in passages])
        similarity = embedding_similarity(vectors)
        allowed = np.ones(len(passages), dtype=bool)
        if self.max_words is not None:
            short = np.array([len(p.text.split()) <= self.max_words for p in passages])
            if short.sum() >= self.k:
                allowed = short
        if self.distinct is None:
            tracker = BudgetTracker(Budget(max_passages=self.k), np.zeros(len(passages), np.int64))
            rank = np.arange(len(passages), dtype=np.int64)
            picked, _ = lazy_greedy(FacilityLocation(similarity), tracker, allowed.copy(), rank)
            return picked
        # Plain greedy: k is small, and the distinct rule removes candidates after each pick.
        objective = FacilityLocation(similarity)
        chosen: list[int] = []
        while len(chosen) < self.k and allowed.any():
            indices = np.flatnonzero(allowed).astype(np.int64)
            gains = objective.gains(indices)
            best = int(np.argmax(gains))
            if gains[best] <= SATURATED:
                break
            pick = int(indices[best])
            objective.add(pick)
            chosen.append(pick)
            allowed &= similarity[pick] < self.distinct
        return chosen

    def find(self, topic: Topic) -> tuple[Aspect, ...]:
        """The pool aspects of ``topic`` (ids ``pool1``, ``pool2``, ...)."""
        picked = self.representatives(topic)
        texts = [topic.passages[i].text for i in picked]
        if self.rewrite == "question" and self.llm is not None:
            texts = [self._as_question(topic.query, t) for t in texts]
        return tuple(
            Aspect(
                f"pool{n}",
                text,
                metadata=as_mapping({"source": "pool", "passage": topic.passages[i].id}),
            )
            for n, (i, text) in enumerate(zip(picked, texts, strict=True), start=1)
        )

    def _as_question(self, query: str, passage: str) -> str:
        assert self.llm is not None

        def check(value: QuestionReply) -> str:
            text = clean_question(value.question)
            if not text.endswith("?") or len(text.split()) < 3:
                raise ValueError(f"{text!r} is not a short question ending with '?'")
            return text

        prompt = (
            f"Topic: {query}\nArgument: {passage}\n\n"
            "Write the one short question (at most 15 words) whose answer is the point this "
            'argument makes. Reply with JSON: {"question": "..."}'
        )
        result = chat_json(
            self.llm,
            [system(REWRITE_SYSTEM), user(prompt)],
            QuestionReply,
            task="rewrite a pool aspect",
            check=check,
            params=ChatParams(max_tokens=80),
        )
        return str(result.value)
