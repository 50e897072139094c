"""DES's decomposer: a question becomes N sub-questions that a complete answer must address.

The LLM writes ``n`` sub-questions as JSON (schema-constrained where the backend can). Each must
be a real question (ends with ``?``, several words, not the question itself); near-duplicates are
removed by embedding similarity (cosine >= ``dedup``), and when that leaves fewer than ``n`` the
LLM is asked once more for the missing ones, shown the ones already kept.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from covrag.errors import ConfigError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.types import Aspect, as_mapping

if TYPE_CHECKING:
    from covrag.embed import Encoder

logger = logging.getLogger(__name__)

SYSTEM = (
    "You plan research for long, complete answers. You split a question into the distinct "
    "sub-questions a complete answer has to address. You reply with JSON only."
)

_NUMBERING = re.compile(r"^\s*(?:[-*\u2022]|\(?\d+[.):]|[a-z][.)])\s+")
_WORD = re.compile(r"[a-z0-9]+")


def clean_question(text: str) -> str:
    """Strip list numbering, quotes and surrounding space from one generated question."""
    return _NUMBERING.sub("", text.strip()).strip().strip("\"'").strip()


def normalise(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def question_problem(text: str, question: str) -> str | None:
    """Why ``text`` is not a usable sub-question of ``question`` (None when it is)."""
    if not text.endswith("?"):
        return f"{text!r} is not a question (it must end with '?')"
    if len(_WORD.findall(text)) < 3:
        return f"{text!r} is too short to be a specific question"
    if normalise(text) == normalise(question):
        return f"{text!r} repeats the question itself"
    return None


def questions_schema(n: int, key: str = "sub_questions") -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            key: {"type": "array", "items": {"type": "string"}, "minItems": n, "maxItems": n}
        },
        "required": [key],
        "additionalProperties": False,
    }


def near_duplicates(texts: Sequence[str], threshold: float, encoder: Encoder | None) -> list[int]:
    """Indices of texts to drop: exact (normalised) repeats, and texts whose embedding cosine to
    an earlier kept text is >= ``threshold`` (no embedding check when ``encoder`` is None)."""
    drop: list[int] = []
    seen: set[str] = set()
    for i, text in enumerate(texts):
        key = normalise(text)
        if key in seen:
            drop.append(i)
        seen.add(key)
    if encoder is None or len(texts) < 2:
        return drop
    vectors = encoder.encode(list(texts))
    kept: list[int] = []
    for i in range(len(texts)):
        if i in drop:
            continue
        if kept and float(np.max(vectors[kept] @ vectors[i])) >= threshold:
            drop.append(i)
        else:
            kept.append(i)
    return sorted(drop)


@dataclass(frozen=True)
class SubQuestions:
    """The decomposition of one question.

    Attributes:
        question: The question decomposed.
        aspects: The kept sub-questions as aspects ``sq1``, ``sq2``, ... (polarity neutral).
        dropped: Sub-questions removed as near-duplicates of kept ones.
        calls: LLM calls made (retries and the top-up included).
    """

    question: str
    aspects: tuple[Aspect, ...]
    dropped: tuple[str, ...] = ()
    calls: int = 1

    @property
    def texts(self) -> tuple[str, ...]:
        return tuple(a.text for a in self.aspects)


@dataclass
class LLMDecomposer:
    """Question -> ``n`` distinct sub-questions (DES step 1).

    Args:
        llm: The backend that writes them.
        n: Sub-questions wanted (DES: 10).
        dedup: Cosine at or above which two sub-questions count as the same (None = only
            exact repeats are removed).
        retries: Extra attempts when a reply is unparsable or invalid.
        max_tokens: Token limit of each reply.
        encoder: Sentence encoder for the near-duplicate check (default: packaged MiniLM).
    """

    llm: LLM
    n: int = 10
    dedup: float | None = 0.9
    retries: int = 2
    max_tokens: int = 700
    encoder: Encoder | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ConfigError(f"n must be >= 1, got {self.n}")
        if self.dedup is not None and not 0 < self.dedup <= 1:
            raise ConfigError(f"dedup must lie in (0, 1], got {self.dedup}")

    def _encoder(self) -> Encoder | None:
        if self.dedup is None:
            return None
        if self.encoder is None:
            from covrag.embed import default_encoder

            self.encoder = default_encoder()
        return self.encoder

    def _ask(self, question: str, n: int, kept: Sequence[str]) -> tuple[list[str], int]:
        prompt = (
            f"Question: {question}\n\n"
            f"Write exactly {n} distinct sub-questions that a complete answer to this question "
            "must address. Cover different angles: the main arguments for and against, causes, "
            "evidence, consequences, the people affected, costs and alternatives. Each "
            "sub-question must be one specific question ending with '?', understandable on its "
            "own, and must not repeat the question.\n"
        )
        if kept:
            listed = "\n".join(f"- {k}" for k in kept)
            prompt += f"\nThese are already covered; write different ones:\n{listed}\n"
        prompt += f'\nReply with JSON: {{"sub_questions": [{n} questions]}}'

        def check(value: Any) -> list[str]:
            texts = [clean_question(str(t)) for t in value["sub_questions"]]
            problems = [p for t in texts if (p := question_problem(t, question))]
            if problems:
                raise ValueError("; ".join(problems[:3]))
            return texts

        result = chat_json(
            self.llm,
            [system(SYSTEM), user(prompt)],
            questions_schema(n),
            task=f"decompose {question!r}",
            check=check,
            retries=self.retries,
            params=ChatParams(max_tokens=self.max_tokens),
        )
        return list(result.value), result.attempts

    def decompose(self, question: str) -> SubQuestions:
        """The sub-questions of ``question``.

        Raises:
            StructuredOutputError: when the LLM gives no valid list within the retries.
        """
        texts, calls = self._ask(question, self.n, [])
        encoder = self._encoder()
        threshold = self.dedup if self.dedup is not None else 1.0
        drop = set(near_duplicates(texts, threshold, encoder))
        kept = [t for i, t in enumerate(texts) if i not in drop]
        dropped = [t for i, t in enumerate(texts) if i in drop]
        if len(kept) < self.n:
            more, extra_calls = self._ask(question, self.n - len(kept), kept)
            calls += extra_calls
            merged = kept + more
            drop = set(near_duplicates(merged, threshold, encoder))
            dropped += [t for i, t in enumerate(merged) if i in drop]
            kept = [t for i, t in enumerate(merged) if i not in drop]
        if dropped:
            logger.info("decompose %r: dropped %d near-duplicates", question, len(dropped))
        aspects = tuple(
            Aspect(f"sq{i}", text, metadata=as_mapping({"source": "llm"}))
            for i, text in enumerate(kept, start=1)
        )
        return SubQuestions(question, aspects, tuple(dropped), calls)
