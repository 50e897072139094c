"""What LLM calls cost: a record every stage that calls a model reports (plan, generate, judge)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from covrag.llm.base import ChatResult
from covrag.schema.generation import LLMCostOut


@dataclass(frozen=True, slots=True)
class LLMCost:
    """What one or more LLM calls spent.

    Attributes:
        calls: Calls that reached the model.
        cached_calls: Calls answered from the response cache.
        prompt_tokens: Tokens read by the model (cached calls count the tokens they once read).
        completion_tokens: Tokens written.
        seconds: Wall-clock seconds of the model calls.
        reused_prompt_tokens: Prompt tokens the model reused from its prompt cache instead of
            computing them (part of ``prompt_tokens``).
    """

    calls: int = 0
    cached_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    reused_prompt_tokens: int = 0

    @classmethod
    def of(cls, results: Iterable[ChatResult]) -> LLMCost:
        total = cls()
        for result in results:
            total = total + cls(
                calls=0 if result.cached else 1,
                cached_calls=1 if result.cached else 0,
                prompt_tokens=result.prompt_tokens,
                completion_tokens=result.completion_tokens,
                seconds=result.seconds,
                reused_prompt_tokens=0 if result.cached else result.reused_prompt_tokens,
            )
        return total

    def __add__(self, other: LLMCost) -> LLMCost:
        return LLMCost(
            self.calls + other.calls,
            self.cached_calls + other.cached_calls,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.seconds + other.seconds,
            self.reused_prompt_tokens + other.reused_prompt_tokens,
        )

    def as_dict(self) -> dict[str, Any]:
        """The JSON object of the cost (:class:`~covrag.schema.generation.LLMCostOut`)."""
        return LLMCostOut.of(self).model_dump()
