"""An outline used as search queries (QPlanner's RAG setting).

Each outline sub-query retrieves its top ``per_query`` passages (2 in QPlanner) not found already,
and the C2 request itself fills the rest, ``total`` passages in all (10). Each passage records in
``metadata["found_by"]`` the query that found it. The outline is also the writer's draft
(:func:`draft`).
"""

from __future__ import annotations

import dataclasses

from covrag.errors import ConfigError
from covrag.plan.conditioned import C2Query
from covrag.plan.outline import Outline
from covrag.retrieve.base import Retriever
from covrag.types import Passage, as_mapping


def outline_search(
    retriever: Retriever,
    query: C2Query,
    outline: Outline,
    *,
    per_query: int = 2,
    total: int = 10,
) -> tuple[Passage, ...]:
    """Passages for the outline's sub-queries, then for the request, ``total`` at most."""
    if per_query < 1 or total < 1:
        raise ConfigError("per_query and total must be >= 1")
    depth = per_query + total
    rankings = retriever.search_many([*outline.texts, query.request], depth)
    chosen: dict[str, Passage] = {}

    def take(ranking: tuple[Passage, ...], limit: int, found_by: str) -> None:
        taken = 0
        for passage in ranking:
            if len(chosen) >= total or taken >= limit:
                return
            if passage.id not in chosen:
                meta = {**passage.metadata, "found_by": found_by}
                chosen[passage.id] = dataclasses.replace(passage, metadata=as_mapping(meta))
                taken += 1

    for text, ranking in zip(outline.texts, rankings, strict=False):
        take(ranking, per_query, text)
    take(rankings[-1], total, query.request)
    return tuple(chosen.values())


def draft(query: C2Query, outline: Outline) -> str:
    """The outline as a content draft for the writer, who must rely on the evidence only."""
    lines = [f"Request: {query.request}", query.instruction(), "Outline:"]
    lines += [f"{n}. {text}" for n, text in enumerate(outline.texts, start=1)]
    lines.append("Write each part from the given evidence only; skip a part it does not support.")
    return "\n".join(lines)
