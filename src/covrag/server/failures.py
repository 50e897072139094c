"""What a failed request is answered with: its status, its JSON :class:`ErrorOut` and headers.

One mapping from the exceptions of the work (a bad field, the deadline, a client gone, a busy
model, a failed LLM, anything else) to the reply, used by the app's exception handlers and by a
streamed answer's ``error`` event, so both say the same (:mod:`covrag.server.streaming`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from covrag.deadline import DeadlineExceeded
from covrag.errors import LLMError
from covrag.schema.http import ErrorOut, FieldErrorOut
from covrag.server.gate import ClientGone, ModelBusy
from covrag.server.service import RequestFieldError

logger = logging.getLogger(__name__)

#: The exceptions :func:`failure` answers as themselves (anything else is a 500).
KNOWN = (RequestFieldError, DeadlineExceeded, ClientGone, ModelBusy, LLMError)


@dataclass(frozen=True)
class Failure:
    """The reply to a failed request."""

    status: int
    body: ErrorOut
    headers: Mapping[str, str] = field(default_factory=dict)


def error_body(errors: list[FieldErrorOut]) -> ErrorOut:
    """The JSON error: the first error as ``detail`` (``field: message``), and all of them."""
    first = errors[0]
    detail = f"{first.field}: {first.message}" if first.field else first.message
    if len(errors) > 1:
        detail += f" (and {len(errors) - 1} more)"
    return ErrorOut(detail=detail, field=first.field, errors=errors)


def failure(exc: BaseException) -> Failure:
    """The reply to the work's exception ``exc`` (an unknown one is logged, and a 500)."""
    if isinstance(exc, RequestFieldError):
        return _reply(exc.status, exc.message, exc.field)
    if isinstance(exc, DeadlineExceeded):
        seconds = exc.deadline.seconds
        return _reply(504, f"the request took longer than the server's {seconds:g} s timeout")
    if isinstance(exc, ClientGone):
        # 499 (nginx's "client closed request"): for the log and the metrics, nobody reads it
        return _reply(499, str(exc))
    if isinstance(exc, ModelBusy):
        return _reply(429, str(exc), headers={"Retry-After": str(exc.retry_after_s)})
    if isinstance(exc, LLMError):
        return _reply(502, f"the LLM failed: {exc}")
    logger.exception("internal error while serving a request", exc_info=exc)
    return _reply(500, f"internal error: {type(exc).__name__}")


def _reply(
    status: int, message: str, field: str | None = None, headers: Mapping[str, str] | None = None
) -> Failure:
    body = error_body([FieldErrorOut(field=field, message=message)])
    return Failure(status, body, dict(headers or {}))
