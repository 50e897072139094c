"""Coverage-conditioned (C2) queries: a base query plus what to include and what to leave out.

"Describe the film X. I already know how critics received it, so skip reviews." is a base query
("Describe the film X") with an exclude instruction ("reviews"), as in QTree / QPlanner. A request
is split by the LLM (:func:`split_request`) or given explicitly (:meth:`C2Query.explicit`, the
CLI's ``--include`` / ``--exclude``). Its constraints become aspects with polarity ``include`` or
``exclude``, which coverage selectors honour (:mod:`covrag.select.exclusion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from covrag.errors import ConfigError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json
from covrag.types import Aspect, as_mapping

SYSTEM = (
    "You read a search request and separate the topic being asked about from any instruction "
    "about what the answer should include or leave out. You reply with JSON only."
)

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "base_query": {"type": "string"},
        "include": {"type": "array", "items": {"type": "string"}},
        "exclude": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["base_query", "include", "exclude"],
    "additionalProperties": False,
}


def _clean(items: Sequence[str]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for item in items:
        text = " ".join(str(item).split())
        if text and text.lower() not in (k.lower() for k in seen):
            seen[text] = None
    return tuple(seen)


@dataclass(frozen=True)
class C2Query:
    """A coverage-conditioned query.

    Attributes:
        request: The request as the user wrote it.
        base: The topic being asked about, without the instructions.
        include: Subtopics the answer must cover.
        exclude: Subtopics the answer must leave out.
    """

    request: str
    base: str
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.base.strip():
            raise ConfigError("a C2 query needs a non-empty base query")
        overlap = {i.lower() for i in self.include} & {e.lower() for e in self.exclude}
        if overlap:
            raise ConfigError(f"asked both to include and exclude: {sorted(overlap)}")

    @classmethod
    def explicit(
        cls, base: str, include: Sequence[str] = (), exclude: Sequence[str] = ()
    ) -> C2Query:
        """A C2 query from its parts; the request text is rebuilt from them."""
        base = base.strip()
        include, exclude = _clean(include), _clean(exclude)
        request = base if not base or base[-1] in ".?!" else base + "."
        if include:
            request += " Make sure to cover: " + "; ".join(include) + "."
        if exclude:
            request += " Leave out: " + "; ".join(exclude) + "."
        return cls(request, base, include, exclude)

    @property
    def conditioned(self) -> bool:
        return bool(self.include or self.exclude)

    def aspects(self) -> tuple[Aspect, ...]:
        """The constraints as aspects: ``inc1``... (polarity include), ``exc1``... (exclude)."""
        meta = as_mapping({"source": "c2"})
        return tuple(
            Aspect(f"inc{i}", text, polarity="include", metadata=meta)
            for i, text in enumerate(self.include, start=1)
        ) + tuple(
            Aspect(f"exc{i}", text, polarity="exclude", metadata=meta)
            for i, text in enumerate(self.exclude, start=1)
        )

    def instruction(self) -> str:
        """The constraints in words, for prompts."""
        parts = []
        if self.include:
            parts.append("must cover: " + "; ".join(self.include))
        if self.exclude:
            parts.append("must leave out: " + "; ".join(self.exclude))
        return ("The answer " + ", and ".join(parts) + ".") if parts else "No constraints."


def split_request(llm: LLM, request: str, *, retries: int = 2) -> C2Query:
    """Split ``request`` into base query and include / exclude instructions with the LLM."""
    if not request.strip():
        raise ConfigError("the request is empty")
    prompt = (
        f"Request: {request}\n\n"
        "Separate it into:\n"
        "- base_query: the question or topic itself, without instructions about coverage;\n"
        "- include: subtopics the request explicitly asks to cover (empty list if none);\n"
        "- exclude: subtopics the request asks to skip or says it already knows (empty list "
        "if none).\n"
        "Use short noun phrases for the subtopics. Reply with JSON: "
        '{"base_query": "...", "include": [...], "exclude": [...]}'
    )

    def check(value: Any) -> C2Query:
        base = " ".join(str(value["base_query"]).split())
        if len(base.split()) < 2:
            raise ValueError("base_query must restate the topic being asked about")
        include, exclude = _clean(value["include"]), _clean(value["exclude"])
        clash = {i.lower() for i in include} & {e.lower() for e in exclude}
        if clash:
            raise ValueError(f"{sorted(clash)} cannot be both included and excluded")
        return C2Query(request, base, include, exclude)

    result = chat_json(
        llm,
        [system(SYSTEM), user(prompt)],
        SCHEMA,
        task="split the request",
        check=check,
        retries=retries,
        params=ChatParams(max_tokens=200),
    )
    query: C2Query = result.value
    return query
