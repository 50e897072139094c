"""Structured LLM replies: each step declares a pydantic model of the JSON it wants.

The JSON schema sent to the backend is generated from the model (:func:`reply_schema`): plain
JSON Schema with no titles and no ``$ref`` (every nested object inlined), which llama.cpp compiles
into a grammar and OpenAI accepts as a strict ``response_format``. A reply is validated with the
same model (:func:`parse_reply`) and a rejection is worded for the model to act on, naming the
place in JSON-path notation: ``$.items should have exactly 3 items, got 2``.

Models derive from :class:`Reply` (strict types: ``true`` is not ``1``, ``"3"`` is not ``3``;
unknown keys are errors). Counts and choices known only at run time are given with
:func:`sized`, :func:`int_in` and :func:`one_of`; :func:`with_fields` derives a model with
such fields and :func:`reply_model` makes one from scratch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    create_model,
)

M = TypeVar("M", bound="Reply")

_TYPES: Mapping[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
}


_DROPPED = ("title", "description", "default")


class Reply(BaseModel):
    """Base of the models of structured replies."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def one_of(kind: type, values: Sequence[Any]) -> Any:
    """A field that takes one of ``values`` (of JSON type ``kind``), as a schema ``enum``."""
    allowed = list(values)
    json_type = {str: "string", int: "integer", float: "number"}[kind]

    def member(value: Any) -> Any:
        if value not in allowed:
            raise ValueError(f"should be one of {allowed}, got {value!r}")
        return value

    return Annotated[
        kind, AfterValidator(member), WithJsonSchema({"type": json_type, "enum": allowed})
    ]


def int_in(low: int, high: int) -> Any:
    """An integer in ``low``..``high`` (``minimum`` / ``maximum``)."""
    return Annotated[int, Field(ge=low, le=high)]


def sized(item: Any, least: int | None, most: int | None) -> Any:
    """A list of ``item`` with ``least``..``most`` entries (``minItems`` / ``maxItems``)."""
    return Annotated[list[item], Field(min_length=least, max_length=most)]


def with_fields(model: type[M], name: str | None = None, **fields: Any) -> type[M]:
    """A subclass of ``model`` whose named fields take the given types (same order)."""
    derived: type[M] = create_model(  # type: ignore[call-overload]
        name or model.__name__, __base__=model, **{k: (v, ...) for k, v in fields.items()}
    )
    return derived


def reply_model(name: str, **fields: Any) -> type[Reply]:
    """A new reply model with the given (required) fields, in order."""
    return with_fields(Reply, name, **fields)


@lru_cache(maxsize=256)
def reply_schema(model: type[Reply]) -> dict[str, Any]:
    """The JSON schema of ``model``: nested objects inlined, no titles, descriptions or defaults.
    Shared: do not mutate it."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})
    plain: dict[str, Any] = _plain(schema, definitions)
    return plain


def _plain(node: Any, definitions: Mapping[str, Any]) -> Any:
    """``node`` without titles, descriptions (docstrings) and defaults, ``$ref`` inlined: the
    schema a step's prompt describes, exactly as covrag's hand-written schemas were (the
    response cache hashes it)."""
    if isinstance(node, list):
        return [_plain(item, definitions) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _plain(definitions[node["$ref"].rsplit("/", 1)[-1]], definitions)
    plain = {k: _plain(v, definitions) for k, v in node.items() if k not in _DROPPED}
    if isinstance(node.get("properties"), dict):  # property names are not keywords
        plain["properties"] = {k: _plain(v, definitions) for k, v in node["properties"].items()}
    return plain


def parse_reply(model: type[M], value: Any) -> M:
    """``value`` (decoded JSON) as ``model``.

    Raises:
        ValueError: naming the first place that does not match, in JSON-path notation.
    """
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ValueError(_problem(exc, reply_schema(model), value)) from None


def _problem(exc: ValidationError, schema: Mapping[str, Any], value: Any) -> str:
    errors = exc.errors(include_url=False)

    def order(item: tuple[int, Any]) -> tuple[int, int, int]:
        index, error = item
        loc = tuple(error["loc"])
        rank = {"missing": 1, "extra_forbidden": 2}.get(error["type"])
        # What the old JSON-schema walk saw first: the shallower place; at one object its
        # type, then missing keys, then unknown keys, then its properties.
        return (len(loc) - 1, rank, index) if rank else (len(loc), 0, index)

    _, first = min(enumerate(errors), key=order)
    loc = tuple(first["loc"])
    if first["type"] == "missing":
        return f"{_path(loc[:-1])} is missing {loc[-1]!r}"
    if first["type"] == "extra_forbidden":
        extra = sorted(str(e["loc"][-1]) for e in errors if tuple(e["loc"][:-1]) == loc[:-1])
        return f"{_path(loc[:-1])} has unexpected keys {extra}"
    return _mismatch(first, _at(schema, loc), _path(loc))


def _mismatch(error: Mapping[str, Any], schema: Mapping[str, Any], path: str) -> str:
    given = error.get("input")
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _TYPES:
        wrong = not isinstance(given, _TYPES[kind]) or (
            isinstance(given, bool) and kind in ("integer", "number")
        )
        if wrong:
            return f"{path} should be {kind}, got {type(given).__name__}"
    kind = error["type"]
    if kind in ("too_short", "too_long"):
        low, high = schema.get("minItems"), schema.get("maxItems")
        wanted = f"exactly {low}" if low == high else f"between {low} and {high}"
        return f"{path} should have {wanted} items, got {len(given or ())}"
    if kind == "string_too_short":
        return f"{path} is too short"
    if kind == "greater_than_equal":
        return f"{path} should be >= {schema.get('minimum')}, got {given}"
    if kind == "less_than_equal":
        return f"{path} should be <= {schema.get('maximum')}, got {given}"
    if kind == "string_pattern_mismatch":
        return f"{path} = {given!r} does not match {schema.get('pattern')}"
    if kind == "value_error":
        return f"{path} {error['ctx']['error']}"
    return f"{path}: {error['msg']}"


def _at(schema: Mapping[str, Any], loc: tuple[Any, ...]) -> Mapping[str, Any]:
    node = schema
    for part in loc:
        node = node.get("items", {}) if isinstance(part, int) else node.get("properties", {})
        if not isinstance(part, int):
            node = node.get(part, {})
    return node


def _path(loc: tuple[Any, ...]) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
