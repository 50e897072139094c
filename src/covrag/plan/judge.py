"""An LLM judge of outlines: how well does an outline follow a C2 request? (1-5, with a reason).

The rubric is QPlanner's scale, from 1 (ignores the instruction) to 5 (follows every nuance).
The judge writes its rationale before its score, so the score follows from the reasoning.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.plan.conditioned import C2Query
from covrag.plan.outline import Outline
from covrag.schema.llm import Reply, one_of

RUBRIC = """\
1 - ignores the instruction: covers what the request says to leave out, or misses what it asks for.
2 - follows the instruction only in part, with major lapses.
3 - follows the main instruction but misses important parts of it or strays off topic.
4 - follows the instruction with only minor lapses.
5 - follows every nuance of the instruction and covers the topic well."""

SYSTEM = "You grade outlines of answers strictly and consistently. You reply with JSON only."


class VerdictReply(Reply):
    """``{"rationale": ..., "score": 1-5}``."""

    rationale: str
    score: one_of(int, [1, 2, 3, 4, 5])  # type: ignore[valid-type]


@dataclass
class OutlineJudge:
    """Scores outlines 1-5 against a C2 request.

    Args:
        llm: The backend (ideally stronger than the one that wrote the outlines).
        retries: Extra attempts when the verdict does not parse.
    """

    llm: LLM
    retries: int = 2

    def judge(self, query: C2Query, outline: Outline) -> Outline:
        """``outline`` with ``score`` and ``rationale`` set."""
        prompt = (
            f"Request: {query.request}\n{query.instruction()}\n\n"
            f"Outline of the answer:\n{outline.render()}\n\n"
            f"Grade how well this outline follows the request, on this scale:\n{RUBRIC}\n\n"
            "First give a one- or two-sentence rationale, then the score. Reply with JSON: "
            '{"rationale": "...", "score": 1-5}'
        )

        def check(value: VerdictReply) -> tuple[int, str]:
            rationale = " ".join(value.rationale.split())
            if len(rationale.split()) < 3:
                raise ValueError("give a rationale of at least one sentence")
            return int(value.score), rationale

        result = chat_json(
            self.llm,
            [system(SYSTEM), user(prompt)],
            VerdictReply,
            task="judge an outline",
            check=check,
            retries=self.retries,
            params=ChatParams(max_tokens=160),
        )
        score, rationale = result.value
        return dataclasses.replace(outline, score=score, rationale=rationale)
