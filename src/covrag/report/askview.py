"""What an ``ask`` run file adds to a topic, read for the report: the drafts and critiques, the
filters, the per-aspect coverage, the warnings and the costs (:mod:`covrag.schema.ask`).

Every block is optional, so run files written before a block existed still render; a block that
is there is validated, and a bad one names its field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from covrag.schema._base import RecordError, read_model
from covrag.schema.ask import AspectCoverageOut, FiltersOut
from covrag.schema.generation import GenerationOut, LLMCostOut, StageCostOut
from covrag.types import Answer

#: The topic keys an ask run file adds (the report reads these; the rest it ignores).
ASK_KEYS = ("generation", "costs", "warnings", "filters", "aspect_coverage")


class _AskExtras(BaseModel):
    model_config = ConfigDict(extra="allow")

    generation: GenerationOut | None = None
    costs: dict[str, StageCostOut] = {}
    warnings: list[str] = []
    filters: FiltersOut | None = None
    aspect_coverage: list[AspectCoverageOut] = Field(default=[])


@dataclass(frozen=True)
class DraftView:
    """One pass's answer, what the writer reported about it and what it cost."""

    answer: Answer
    problems: tuple[str, ...]
    fallback: str | None
    cost: Mapping[str, Any]


@dataclass(frozen=True)
class CritiqueView:
    """A critique: its feedback to the rewrite and what became of that rewrite."""

    mode: str
    feedback: str
    verdict: str
    notes: str
    missing_aspects: tuple[str, ...]
    never_cited: tuple[str, ...]
    cost: Mapping[str, Any]


@dataclass(frozen=True)
class AskView:
    """The ask blocks of one topic (empty tuples and None where the run file has none)."""

    drafts: tuple[DraftView, ...] = ()
    critiques: tuple[CritiqueView, ...] = ()
    costs: Mapping[str, Mapping[str, Any]] | None = None
    warnings: tuple[str, ...] = ()
    filters: FiltersOut | None = None
    aspect_coverage: tuple[AspectCoverageOut, ...] = ()


def read_ask(
    extra: Mapping[str, Any], passages: Mapping[str, int], where: str, path: str | None = None
) -> AskView | None:
    """The ask blocks of a topic's extra keys (None when it has none of them).

    Args:
        extra: The topic's keys beyond the run-file format.
        passages: The topic's passage id -> length of its text (drafts' citations and spans
            are checked against them).
        where: The topic's field path (``topics[0]``) for messages.
        path: The run file, for messages.

    Raises:
        DataError: a block is malformed (naming its field).
        RecordError: a draft names a passage the topic lacks, or a span outside its text.
    """
    present = {key: extra[key] for key in ASK_KEYS if key in extra and extra[key] is not None}
    if not present:
        return None
    blocks = read_model(_AskExtras, present, path=path, prefix=where)
    generation = blocks.generation or GenerationOut(drafts=[])
    for i, draft in enumerate(generation.drafts):
        draft.check_references(dict(passages), f"{where}.generation.drafts[{i}]")
    for j, row in enumerate(blocks.aspect_coverage):
        if any(not isinstance(s, int) or s < 0 for s in row.answer_sentences):
            raise RecordError(f"{where}.aspect_coverage[{j}].answer_sentences", "bad index")
    return AskView(
        drafts=tuple(
            DraftView(d.to_answer(), tuple(d.problems), d.fallback, _cost(d.cost))
            for d in generation.drafts
        ),
        critiques=tuple(
            CritiqueView(
                c.mode,
                c.feedback,
                c.verdict,
                c.llm_notes,
                tuple(c.missing_aspects),
                tuple(c.never_cited),
                _cost(c.cost),
            )
            for c in generation.critiques
        ),
        costs={k: c.model_dump(exclude_unset=True) for k, c in blocks.costs.items()} or None,
        warnings=tuple(blocks.warnings),
        filters=blocks.filters,
        aspect_coverage=tuple(blocks.aspect_coverage),
    )


def _cost(cost: LLMCostOut | None) -> Mapping[str, Any]:
    return {} if cost is None else cost.model_dump()
