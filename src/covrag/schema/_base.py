"""What every schema module shares: pydantic's errors turned into covrag's :class:`DataError`.

A pydantic :class:`~pydantic.ValidationError` lists every problem with a location tuple such as
``("passages", 1, "text")``; covrag reports the first one as ``passages[1].text`` with a message a
user can act on, together with the file and line it came from.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from covrag.errors import DataError

M = TypeVar("M", bound=BaseModel)

# pydantic error types -> covrag's wording (the others keep pydantic's message).
_MESSAGES: Mapping[str, str] = {
    "missing": "missing required field",
    "list_type": "must be a list",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
    "string_type": "must be a string",
    "extra_forbidden": "unexpected field",
}


class RecordError(Exception):
    """A rule across fields (duplicate ids, unknown references) broken inside a record.

    Raised from a model validator with the field it names. It is deliberately not a
    ``ValueError``: pydantic passes it through instead of folding it into a ValidationError.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def field_path(loc: tuple[int | str, ...], prefix: str = "") -> str:
    """``("passages", 1, "text")`` -> ``passages[1].text`` (after ``prefix`` when given)."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def problem(error: Mapping[str, Any]) -> str:
    """The message of one pydantic error, in covrag's words."""
    kind = str(error.get("type", ""))
    if kind in ("value_error", "assertion_error"):
        cause = (error.get("ctx") or {}).get("error")
        if cause is not None:
            return str(cause)
    return _MESSAGES.get(kind, str(error.get("msg", "invalid value")))


def read_model(
    model: type[M],
    data: Any,
    *,
    path: str | None = None,
    line: int | None = None,
    prefix: str = "",
) -> M:
    """Validate ``data`` as ``model``; a bad value raises :class:`DataError` naming where it is.

    Args:
        model: The schema.
        data: Decoded JSON.
        path: The file it came from, for the message.
        line: The 1-based line in that file (JSONL), for the message.
        prefix: Field path of ``data`` inside a larger document (``topics[3]``).
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = field_path(tuple(first["loc"]), prefix) or None
        raise DataError(problem(first), path=path, line=line, field=field) from None
    except RecordError as exc:
        field = exc.field if not prefix else f"{prefix}.{exc.field}"
        raise DataError(exc.message, path=path, line=line, field=field) from None
