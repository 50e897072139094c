"""The plan use case counts what its LLM spent planning, so ``covrag plan`` and ``/v1/plan``
read one figure (issue 48)."""

from __future__ import annotations

from covrag.pipeline.usecases import plan
from llm_support import ScriptedLLM, items_reply


def test_plan_reports_what_the_llm_spent_on_it_alone() -> None:
    llm = ScriptedLLM([items_reply("How much do cars pollute?", "What does a ban cost shops?")])
    llm.usage.calls, llm.usage.prompt_tokens = 5, 100  # spent before: not the plan's
    planned = plan("Should cities ban cars?", llm, subquestions=2)
    assert [a.text for a in planned.aspects] == [
        "How much do cars pollute?",
        "What does a ban cost shops?",
    ]
    assert planned.usage["calls"] == 1
    assert planned.usage["prompt_tokens"] == 3 and planned.usage["completion_tokens"] == 2
    assert set(planned.usage) == set(llm.usage.as_dict())
