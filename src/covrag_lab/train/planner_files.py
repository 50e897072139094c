"""The files of a planner's training (``covrag-lab train planner-data``, ``train planner``),
moved from ``covrag.schema.planner``: only the lab writes and reads them.

- ``examples.jsonl``: one judged request per line (:class:`PlannerExampleLine`): the request
  with its constraints, the teacher's QTree, its candidate outlines and the random baseline,
  each judged 1-5; a request whose planning failed keeps its ``error``.
- ``sft.jsonl``: request -> best outline (:class:`SFTLine`), chat messages as TRL reads them.
- ``dpo.jsonl``: request, chosen and rejected outline (:class:`DPOLine`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from covrag.schema.plan import OutlineOut, TreeNodeOut

RequestKind = Literal["include", "exclude", "skip", "focus"]


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class PlannerExampleLine(BaseModel):
    """One request of the planner data and what the teacher and the judge made of it."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    topic_id: str
    kind: RequestKind
    request: str
    base: str
    include: list[str]
    exclude: list[str]
    include_ids: list[str]
    exclude_ids: list[str]
    tree: list[TreeNodeOut] = []
    candidates: list[OutlineOut] = []
    baseline: OutlineOut | None = None
    error: str | None = None


class SFTLine(BaseModel):
    """``{"prompt": [messages], "completion": [assistant message]}`` plus where it came from."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    score: float
    prompt: list[ChatMessage]
    completion: list[ChatMessage]


class DPOLine(BaseModel):
    """``{"prompt", "chosen", "rejected"}`` (TRL's conversational preference format)."""

    model_config = ConfigDict(extra="forbid")

    request_id: str
    chosen_score: float
    rejected_score: float
    prompt: list[ChatMessage]
    chosen: list[ChatMessage]
    rejected: list[ChatMessage]
