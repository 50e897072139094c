"""What ``covrag plan --json`` prints, and the plan ``covrag ask`` keeps in its run file.

``covrag plan --json`` prints the request's split and sub-questions (:class:`PlanSplit`); with
``--tree`` also the QTree, the candidate outlines and the chosen one (:class:`PlanTree`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel


class _Split(BaseModel):
    request: str
    base_query: str
    include: list[str]
    exclude: list[str]
    subquestions: list[str]


class PlanSplit(_Split):
    """A request split into its base question and include / exclude instructions."""

    llm_usage: dict[str, int | float] | None = None

    @classmethod
    def of(
        cls,
        *,
        request: str,
        base: str,
        include: Sequence[str],
        exclude: Sequence[str],
        subquestions: Sequence[str] | None,
    ) -> PlanSplit:
        return cls(
            request=request,
            base_query=base,
            include=list(include),
            exclude=list(exclude),
            subquestions=list(subquestions or ()),
        )


class TreeNodeOut(BaseModel):
    id: str
    text: str


class OutlineOut(BaseModel):
    """An outline: a few connected QTree nodes, how it was found and its judged score."""

    node_ids: list[str]
    texts: list[str]
    source: str
    score: float | None
    rationale: str

    @classmethod
    def of(cls, outline: Any) -> OutlineOut:
        """From a :class:`covrag.plan.outline.Outline` (its attributes of the same names)."""
        return cls(
            node_ids=list(outline.node_ids),
            texts=list(outline.texts),
            source=outline.source,
            score=outline.score,
            rationale=outline.rationale,
        )


class PlanTree(_Split):
    """The split, the QTree, the candidate outlines, the random baseline and the best one."""

    tree: list[TreeNodeOut]
    tree_notes: list[str]
    candidates: list[OutlineOut]
    random_baseline: OutlineOut
    best: OutlineOut
    llm_usage: dict[str, int | float]


def plan_split_record(split: PlanSplit, usage: Mapping[str, float] | None = None) -> dict[str, Any]:
    """The JSON object ``covrag plan --json`` prints without ``--tree``."""
    if usage is not None:
        split = split.model_copy(update={"llm_usage": dict(usage)})
    return _dump(split)


def plan_tree_record(
    split: PlanSplit,
    *,
    tree: Sequence[tuple[str, str]],
    notes: Sequence[str],
    candidates: Sequence[Any],
    baseline: Any,
    best: Any,
    usage: Mapping[str, float],
) -> dict[str, Any]:
    """The JSON object ``covrag plan --json --tree`` prints (outlines: :meth:`OutlineOut.of`)."""
    values = split.model_dump(exclude_unset=True, exclude={"llm_usage"})
    plan = PlanTree(
        **values,
        tree=[TreeNodeOut(id=i, text=t) for i, t in tree],
        tree_notes=list(notes),
        candidates=[OutlineOut.of(o) for o in candidates],
        random_baseline=OutlineOut.of(baseline),
        best=OutlineOut.of(best),
        llm_usage=dict(usage),
    )
    return _dump(plan)


def _dump(model: BaseModel) -> dict[str, Any]:
    record: dict[str, Any] = model.model_dump(exclude_unset=True, warnings=False)
    return record
