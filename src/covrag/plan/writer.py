"""A trained planner's verb: write a request's outline directly, in one call (QPlanner's planner).

The teacher pipeline (:class:`~covrag.plan.planner.QPlanner`) builds a QTree, extracts candidate
outlines from it and judges them; a *trained* planner learns to go from the request straight to
the best of those outlines. :func:`outline_messages` is the one prompt of that mapping: the SFT
and DPO examples (``covrag-lab train planner-data``) are written with it, and :class:`OutlineWriter`
asks it of any LLM (a base model, or one trained by ``covrag-lab train planner``), so training and
use see the same text.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from covrag.errors import ConfigError
from covrag.llm.base import LLM, ChatParams, Message, system, user
from covrag.llm.structured import chat_json
from covrag.plan.conditioned import C2Query
from covrag.plan.outline import Outline
from covrag.schema.llm import Reply, sized, with_fields
from covrag.text import words

SYSTEM = (
    "You plan the answer to a search request as an outline of short sub-queries that together "
    "answer it while following its instructions. You reply with JSON only."
)


class OutlineTextReply(Reply):
    """``{"outline": ["sub-query", ...]}``."""

    outline: list[str]


@functools.lru_cache(maxsize=16)
def outline_text_reply(size: int) -> type[OutlineTextReply]:
    return with_fields(OutlineTextReply, outline=sized(str, size, size))


def outline_messages(query: C2Query, size: int = 4) -> list[Message]:
    """The planner's prompt: the request and its constraints, asking for ``size`` sub-queries."""
    prompt = (
        f"Request: {query.request}\n{query.instruction()}\n\n"
        f"Write the outline of the answer: {size} short search sub-queries, connected to each "
        "other, that together answer the request, cover what it asks to include and leave out "
        "what it asks to leave out.\n"
        f'Reply with JSON: {{"outline": [{size} strings]}}'
    )
    return [system(SYSTEM), user(prompt)]


def outline_completion(texts: tuple[str, ...] | list[str]) -> str:
    """The reply a planner should give for an outline (what SFT and DPO train on)."""
    return json.dumps({"outline": list(texts)}, ensure_ascii=False)


def check_texts(value: OutlineTextReply) -> tuple[str, ...]:
    """Distinct sub-queries of at least two words each, or a ValueError saying what is wrong."""
    texts = tuple(" ".join(t.split()) for t in value.outline)
    if any(len(words(t)) < 2 for t in texts):
        raise ValueError("every sub-query must be a real question of at least two words")
    if len({t.lower() for t in texts}) != len(texts):
        raise ValueError("the sub-queries must be different from each other")
    return texts


@dataclass
class OutlineWriter:
    """Writes a request's outline in one call: the trained planner's use.

    Args:
        llm: The planner (e.g. ``transformers(model='out/planner/dpo')``).
        size: Sub-queries per outline (QPlanner: 4).
        retries: Extra attempts when the reply fails its checks.
        max_tokens: Most tokens of the reply.
    """

    llm: LLM
    size: int = 4
    retries: int = 2
    max_tokens: int = 160

    def __post_init__(self) -> None:
        if self.size < 1:
            raise ConfigError("size must be >= 1")

    def write(self, query: C2Query) -> Outline:
        """The outline (``source="writer"``; its node ids are its positions, ``1``..``size``).

        Raises:
            StructuredOutputError: when no attempt passes the checks.
        """
        result = chat_json(
            self.llm,
            outline_messages(query, self.size),
            outline_text_reply(self.size),
            task="write an outline",
            check=check_texts,
            retries=self.retries,
            params=ChatParams(max_tokens=self.max_tokens),
        )
        texts: tuple[str, ...] = result.value
        ids = tuple(str(i) for i in range(1, len(texts) + 1))
        return Outline(ids, texts, source="writer")
