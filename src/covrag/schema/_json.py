"""Decoding untrusted JSON text into values the schemas can check, or a :class:`DataError`.

``json.loads`` fails in more ways than :class:`json.JSONDecodeError`: JSON nested thousands deep
raises :class:`RecursionError`, an integer of more than 4,300 digits raises a plain
:class:`ValueError` (Python's limit on converting long strings to integers), and a ``\\ud800``
escape decodes to a lone surrogate that no UTF-8 file can hold, so the run written from it would
fail at the end of the work. Every reader of a JSON file or line goes through :func:`decode_json`,
which turns each of these into one message naming the file, the line and, where one is at fault,
the field.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from covrag.errors import DataError
from covrag.schema._base import field_path

#: Python's limit on the digits of an integer read from text (``sys.get_int_max_str_digits``).
MAX_INT_DIGITS = sys.get_int_max_str_digits() or 4300


class _LongInt(str):
    """The digits of an integer too long to convert, kept so its field can be named."""


def _parse_int(digits: str) -> Any:
    return _LongInt(digits) if len(digits.lstrip("-")) > MAX_INT_DIGITS else int(digits)


def decode_json(text: str, *, path: str, line: int | None = None) -> Any:
    """The JSON value of ``text``, read from ``path`` (at ``line`` of a JSONL file).

    Raises:
        DataError: bad JSON (with its line and column), JSON nested too deeply, an integer
            longer than :data:`MAX_INT_DIGITS` digits or a string holding a lone surrogate
            (naming the field of each).
    """
    long_ints = False
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        message = f"invalid JSON: {exc.msg} at column {exc.colno}"
        raise DataError(message, path=path, line=where) from None
    except RecursionError:
        raise DataError("invalid JSON: nested too deeply", path=path, line=line) from None
    except ValueError:  # an integer with too many digits (the only other ValueError)
        value = json.loads(text, parse_int=_parse_int)
        long_ints = True
    # Only a \\ud800-\\udfff escape decodes to a surrogate: most text is never walked.
    if long_ints or "\\ud" in text or "\\uD" in text:
        _check_values(value, path, line)
    return value


def _check_values(value: Any, path: str, line: int | None) -> None:
    """Raise a DataError for the first too-long integer or lone surrogate inside ``value``."""
    stack: list[tuple[tuple[int | str, ...], Any]] = [((), value)]
    while stack:
        loc, item = stack.pop()
        if isinstance(item, _LongInt):
            digits = len(item.lstrip("-"))
            message = f"an integer of {digits:,} digits is too long (at most {MAX_INT_DIGITS:,})"
            raise DataError(message, path=path, line=line, field=field_path(loc) or None)
        if isinstance(item, str):
            _check_text(item, loc, path, line)
        elif isinstance(item, dict):
            for key, inner in reversed(item.items()):
                _check_text(key, (*loc, key), path, line)
                stack.append(((*loc, key), inner))
        elif isinstance(item, list):
            stack.extend(((*loc, i), inner) for i, inner in reversed(list(enumerate(item))))


def _check_text(text: str, loc: tuple[int | str, ...], path: str, line: int | None) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = text[exc.start]
        message = (
            f"a lone surrogate \\u{ord(bad):04x} (half of a UTF-16 pair) is not text and "
            "cannot be written as UTF-8"
        )
        raise DataError(message, path=path, line=line, field=field_path(loc) or None) from None


def read_json_file(source: str | os.PathLike[str]) -> Any:
    """The JSON value of a whole file, checked as :func:`decode_json` checks it.

    Raises:
        DataError: an empty file, bytes that are not UTF-8 (naming the line and byte), or any
            problem :func:`decode_json` names.
        OSError: the file cannot be read.
    """
    path = str(source)
    raw = Path(source).read_bytes()
    if not raw.strip():
        raise DataError("the file is empty (expected a JSON document)", path=path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        message = f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {exc.start}"
        raise DataError(message, path=path, line=line) from None
    return decode_json(text, path=path)
