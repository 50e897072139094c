"""Coverage-conditioned (C2) queries: a base query plus what to include and what to leave out.

"Describe the film X. I already know how critics received it, so skip reviews." is a base query
("Describe the film X") with an exclude instruction ("reviews"), as in QTree / QPlanner. A request
is split by the LLM (:func:`split_request`) or given explicitly (:meth:`C2Query.explicit`, the
CLI's ``--exclude``). Its constraints become aspects with polarity ``include`` or
``exclude``, which coverage selectors honour (:mod:`covrag.selectors.exclusion`).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from covrag.errors import ConfigError, StructuredOutputError
from covrag.llm.base import LLM, ChatParams, system, user
from covrag.llm.structured import chat_json, extract_json
from covrag.schema.llm import Reply, parse_reply
from covrag.text import words
from covrag.types import Aspect, as_mapping

logger = logging.getLogger(__name__)

# Wording that usually asks to leave something out; the split is checked against it.
SKIP_CUE = re.compile(
    r"\b(skip|leave (?:\w+ )?out|already know|(?:do not|don't|dont) (?:need|want|include|cover)|"
    r"no need|omit|not interested in|exclud\w*)\b",
    re.IGNORECASE,
)

# What an explicit skip instruction names: "skip reviews", "leave out the parking fees".
SKIP_OBJECT = re.compile(
    r"\b(?:skip|leave out|omit|exclude|(?:do not|don't|dont) (?:need|want|include|cover))\s+"
    r"(?:the |any |its |their |her |his )?([^.,;!?]+)",
    re.IGNORECASE,
)

SYSTEM = (
    "You read a search request and separate the topic being asked about from any instruction "
    "about what the answer should include or leave out. You reply with JSON only."
)


class SplitReply(Reply):
    """``{"base_query": ..., "include": [...], "exclude": [...]}``."""

    base_query: str
    include: list[str]
    exclude: list[str]


# Worked examples in the prompt: without them a 1.5B model often returns an empty exclude list
# for "I already know how critics received it, so skip reviews".
EXAMPLES = "\n".join(
    f"Request: {request}\n-> {json.dumps(split)}"
    for request, split in (
        (
            "Tell me about the Eiffel Tower. I've read enough about its history, so leave that "
            "out.",
            {"base_query": "Tell me about the Eiffel Tower", "include": [], "exclude": ["history"]},
        ),
        (
            "How do vaccines work? Be sure to mention side effects.",
            {"base_query": "How do vaccines work?", "include": ["side effects"], "exclude": []},
        ),
        (
            "Is coffee bad for your health?",
            {"base_query": "Is coffee bad for your health?", "include": [], "exclude": []},
        ),
    )
)


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


def _sentence(text: str, at: int) -> str:
    """The sentence of ``text`` around position ``at``."""
    start = max(text.rfind(sep, 0, at) for sep in ".!?;") + 1
    ends = [i for i in (text.find(sep, at) for sep in ".!?;") if i >= 0]
    return text[start : min(ends) if ends else len(text)].strip()


def _skip_cue(request: str) -> re.Match[str] | None:
    """The first wording that asks to leave something out, outside questions ("Is it healthy
    to skip breakfast?" asks about skipping)."""
    return next(
        (m for m in SKIP_CUE.finditer(request) if not _in_question(request, m.start())), None
    )


def _in_question(text: str, at: int) -> bool:
    """Whether position ``at`` of ``text`` lies in a sentence that ends with '?'."""
    ends = [i for i in (text.find(sep, at) for sep in ".!?;") if i >= 0]
    return bool(ends) and text[min(ends)] == "?"


def _trim_instruction(base: str) -> str:
    """``base`` cut before the clause holding a skip instruction ("X's life, but I don't need
    ...": "X's life"), when enough of it is left."""
    cue = SKIP_CUE.search(base)
    if cue is None:
        return base
    head = base[: cue.start()]
    cut = max(head.rfind(sep) for sep in (",", ";", ".", " but ", " and "))
    trimmed = head[:cut].strip(" ,;.") if cut > 0 else ""
    return trimmed if len(trimmed.split()) >= 2 else base


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
        "Use short noun phrases for the subtopics.\n\n"
        f"Examples:\n{EXAMPLES}\n\n"
        'Reply with JSON: {"base_query": "...", "include": [...], "exclude": [...]}'
    )

    def check(value: SplitReply) -> C2Query:
        query = _parse_split(request, value)
        cue = _skip_cue(request)
        if cue and not query.exclude:
            raise ValueError(
                f'the request says "{_sentence(request, cue.start())}": list what it asks to '
                "skip under exclude"
            )
        if cue and SKIP_CUE.search(query.base):
            raise ValueError("base_query must leave out the instruction about what to skip")
        return query

    messages = [system(SYSTEM), user(prompt)]
    try:
        result = chat_json(
            llm,
            messages,
            SplitReply,
            task="split the request",
            check=check,
            retries=retries,
            params=ChatParams(max_tokens=200),
        )
    except StructuredOutputError as exc:
        return _fallback_split(request, exc)
    query: C2Query = result.value
    return query


def _parse_split(request: str, value: SplitReply, lenient: bool = False) -> C2Query:
    """A reply as a split; ``lenient`` drops invented subtopics instead of rejecting them."""
    base = " ".join(value.base_query.split())
    if len(base.split()) < 2:
        raise ValueError("base_query must restate the topic being asked about")
    include, exclude = _clean(value.include), _clean(value.exclude)
    clash = {i.lower() for i in include} & {e.lower() for e in exclude}
    if clash:
        raise ValueError(f"{sorted(clash)} cannot be both included and excluded")
    said = set(words(request))

    def named(text: str) -> bool:
        return bool(set(words(text)) & said)

    invented = [t for t in include + exclude if not named(t)]
    if invented and not lenient:
        raise ValueError(
            f"{invented[:3]} are not in the request; list only subtopics the request names"
        )
    include = tuple(t for t in include if named(t))
    exclude = tuple(t for t in exclude if named(t))
    return C2Query(request, base, include, exclude)


def _fallback_split(request: str, exc: StructuredOutputError) -> C2Query:
    """The model kept failing the checks (a cue word can also belong to the topic): rather than
    fail the plan, keep its first well-formed split, without invented subtopics, preferring one
    that excludes something when the wording asks to skip."""
    splits = []
    for raw, _ in exc.attempts:
        try:
            splits.append(
                _parse_split(request, parse_reply(SplitReply, extract_json(raw)), lenient=True)
            )
        except ValueError:
            continue
    if not splits:
        raise exc
    cue = _skip_cue(request)
    chosen = next((q for q in splits if q.exclude), splits[0]) if cue else splits[0]
    if cue and not chosen.exclude:
        # Last resort: the object of an explicit "skip X" / "leave out X" / "don't need X".
        named = tuple(
            m.group(1).strip()
            for m in SKIP_OBJECT.finditer(request)
            if not _in_question(request, m.start())
        )
        chosen = C2Query(request, chosen.base, chosen.include, _clean(named))
    logger.warning("split the request: %s; keeping a well-formed split", exc.attempts[-1][1])
    return C2Query(request, _trim_instruction(chosen.base), chosen.include, chosen.exclude)
