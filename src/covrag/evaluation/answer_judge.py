"""The LLM judge of answers: nugget support and citation support, as constrained JSON.

:class:`LLMAnswerJudge` asks, per answer, one question for its nuggets (``support`` / ``partial``
/ ``not`` each) and one for its citing sentences (do the cited passages support each); the reply
models (:func:`nugget_reply`, :func:`citation_reply`) fix the JSON shape. Split from
:mod:`covrag.evaluation.answers`, which uses it and re-exports its public names.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from typing import Any, Literal

from covrag.errors import StructuredOutputError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.cost import LLMCost
from covrag.llm.prompts import passages_block
from covrag.llm.structured import chat_json
from covrag.schema.llm import Reply, int_in, one_of, sized, with_fields
from covrag.types import Answer, Aspect, Passage

# Logged under the module it was split from, so that log filters and records stay as they were.
logger = logging.getLogger("covrag.evaluation.answers")

SupportLabel = Literal["support", "partial", "not"]
SUPPORT_LABELS: tuple[SupportLabel, ...] = ("support", "partial", "not")


class PointJudgment(Reply):
    point: int
    label: SupportLabel


class NuggetReply(Reply):
    """``{"judgments": [{"point": i, "label": "support" | "partial" | "not"}, ...]}``."""

    judgments: list[PointJudgment]


class SentenceVerdict(Reply):
    sentence: int
    supported: bool


class CitationReply(Reply):
    """``{"verdicts": [{"sentence": i, "supported": true | false}, ...]}``."""

    verdicts: list[SentenceVerdict]


@functools.lru_cache(maxsize=64)
def nugget_reply(m: int) -> type[NuggetReply]:
    """One judgment per point 1..``m``."""
    item = with_fields(
        PointJudgment,
        point=int_in(1, m),
        label=one_of(str, SUPPORT_LABELS),
    )
    return with_fields(NuggetReply, judgments=sized(item, m, m))


@functools.lru_cache(maxsize=64)
def citation_reply(m: int) -> type[CitationReply]:
    """One verdict per sentence 1..``m``."""
    item = with_fields(SentenceVerdict, sentence=int_in(1, m))
    return with_fields(CitationReply, verdicts=sized(item, m, m))


def _one_each(items: Sequence[Reply], key: str, m: int) -> dict[int, Any]:
    found = {int(getattr(item, key)): item for item in items}
    if sorted(found) != list(range(1, m + 1)):
        raise ValueError(f"give exactly one entry for each {key} 1 to {m}, in order")
    return found


class LLMAnswerJudge:
    """An LLM that judges nugget support and citation support (one call per answer for each).

    Args:
        llm: The judge model.
        max_words: Passages are cut to this many words in the citation prompt.
        retries: Extra attempts when the judgment is not valid JSON.
    """

    def __init__(self, llm: LLM, *, max_words: int | None = 250, retries: int = 1) -> None:
        self.llm = llm
        self.max_words = max_words
        self.retries = retries

    def __repr__(self) -> str:
        return f"LLMAnswerJudge({self.llm.describe()!r})"

    def _params(self, max_tokens: int) -> ChatParams:
        defaults = self.llm.params
        return ChatParams(defaults.temperature, max_tokens=max_tokens, seed=defaults.seed)

    def nuggets(
        self, question: str, answer: Answer, aspects: Sequence[Aspect]
    ) -> tuple[list[SupportLabel | None], LLMCost]:
        """``support`` / ``partial`` / ``not`` for each aspect (None each when the judge fails)."""
        if not aspects:
            return [], LLMCost()
        if not answer.sentences:
            return ["not"] * len(aspects), LLMCost()
        points = "\n".join(f"{i}. {a.text}" for i, a in enumerate(aspects, start=1))
        request = (
            f"Question: {question}\n\nAnswer:\n{answer.text}\n\nPoints:\n{points}\n\n"
            'For each point, does the answer state it? "support" = the answer clearly states '
            'it; "partial" = the answer states part of it or something close; "not" = the '
            'answer does not state it. Reply with JSON only: {"judgments": [{"point": 1, '
            '"label": "support"}, ...]}, one entry per point, in order.'
        )
        m = len(aspects)
        try:
            reply = chat_json(
                self.llm,
                [system("You judge answers strictly and fairly."), user(request)],
                nugget_reply(m),
                task="nugget judgment",
                check=lambda v: _one_each(v.judgments, "point", m),
                retries=self.retries,
                params=self._params(24 * m + 40),
            )
        except StructuredOutputError as exc:
            logger.warning("nugget judgment failed: %s", exc)
            return [None] * m, LLMCost()
        labels: list[SupportLabel | None] = [reply.value[i].label for i in range(1, m + 1)]
        return labels, LLMCost.of(reply.results)

    def citations(
        self, answer: Answer, passages: Sequence[Passage]
    ) -> tuple[list[tuple[int, bool | None]], LLMCost]:
        """For each sentence citing a known passage: its index and whether its citations hold."""
        number = {p.id: i for i, p in enumerate(passages, start=1)}
        cited = [
            (i, s)
            for i, s in enumerate(answer.sentences)
            if any(p in number for p in s.passage_ids)
        ]
        if not cited:
            return [], LLMCost()
        marks = ["".join(f"[{number[p]}]" for p in s.passage_ids if p in number) for _, s in cited]
        lines = "\n".join(
            f"{k}. {s.text} (cites {mark})"
            for k, ((_, s), mark) in enumerate(zip(cited, marks, strict=True), start=1)
        )
        request = (
            f"Passages:\n{passages_block(passages, self.max_words)}\n\nSentences:\n{lines}\n\n"
            "For each sentence, do the passages it cites support what it says? Reply with JSON "
            'only: {"verdicts": [{"sentence": 1, "supported": true}, ...]}, one entry per '
            "sentence, in order."
        )
        m = len(cited)
        try:
            reply = chat_json(
                self.llm,
                [system("You check citations strictly and fairly."), user(request)],
                citation_reply(m),
                task="citation judgment",
                check=lambda v: _one_each(v.verdicts, "sentence", m),
                retries=self.retries,
                params=self._params(20 * m + 40),
            )
        except StructuredOutputError as exc:
            logger.warning("citation judgment failed: %s", exc)
            return [(i, None) for i, _ in cited], LLMCost()
        verdicts: list[tuple[int, bool | None]] = [
            (i, bool(reply.value[k].supported)) for k, (i, _) in enumerate(cited, 1)
        ]
        return verdicts, LLMCost.of(reply.results)
