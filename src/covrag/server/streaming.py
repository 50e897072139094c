"""A streamed ``/v1/answer`` (``"stream": true``): server-sent events from an EventStream.

The request's work runs as an :class:`~covrag.pipeline.EventStream` on the server's thread
pool, the same work as the plain route's (its caps, the LLM gate, ``run_answer``). The reply
waits for the first event: a request refused before it (a cap, 422 / 413; the LLM busy, 429;
the deadline while queued, 504) is answered as the plain route would, with its status and JSON
error. Then it is ``text/event-stream``, one event per record, each ``data`` one line of JSON::

    event: planned     {"aspects": [{"id", "text", "polarity"}]}
    event: retrieved   {"passage_ids": [...], "queries": []}
    event: selected    {"passage_ids": [...], "refusal": ""}
    event: token       {"text": " uniforms", "step": "write"}   (one per piece the LLM writes)
    event: answer      the plain route's response body, the last event
    event: error       {"status": 504, "detail", "field", "errors"}: instead of the answer

An error once the stream has started is its last event, with the status and body the plain
route would have answered with (:func:`~covrag.server.failures.failure`). A client that goes
away is noticed by Starlette, which cancels the reply; that cancels the work's deadline, so the
LLM stops at its next token and the LLM gate is given back. The access log and the metrics see
such a request, and one that ends in an error event, with the status it started with, 200.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from covrag.deadline import DeadlineExceeded
from covrag.pipeline import AnswerEvent, Event, EventStream
from covrag.server import gate
from covrag.server.failures import failure

MEDIA_TYPE = "text/event-stream"

#: Headers of a stream: no cache, and no buffering by a reverse proxy (nginx reads the last).
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(name: str, data: Any) -> str:
    """One server-sent event: its name and its data as one line of JSON (as FastAPI writes a
    JSON response)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return f"event: {name}\ndata: {text}\n\n"


def event_text(event: Event | AnswerEvent[Any]) -> str:
    """An event of the stream as a server-sent event (the answer as its response body)."""
    if isinstance(event, AnswerEvent):
        result = event.result
        body = result.model_dump(mode="json") if isinstance(result, BaseModel) else result
        return sse(event.name, body)
    return sse(event.name, event.as_dict())


def error_text(exc: BaseException) -> str:
    """The ``error`` event of a failure: the status and the body the plain route answers."""
    reply = failure(exc)
    return sse("error", {"status": reply.status, **reply.body.model_dump()})


async def streamed(
    stream: EventStream[Any], disconnected: Callable[[], Awaitable[bool]]
) -> StreamingResponse:
    """The response of a started ``stream``, once its first event is in.

    Raises:
        Whatever the work raised before its first event (answered as by the plain route), or
        ClientGone when the client went away before it.
    """
    until = time.monotonic() + stream.deadline.remaining() + gate.BACKSTOP_S
    events = aiter(stream)
    first = await _next(stream, events, until, disconnected)

    async def body() -> AsyncIterator[str]:
        try:
            event = first
            while True:
                yield event_text(event)
                if isinstance(event, AnswerEvent):
                    return
                event = await _next(stream, events, until)
        except Exception as exc:  # the stream's last event
            yield error_text(exc)
        finally:  # also when Starlette cancels the reply for a client that left
            stream.close()

    return StreamingResponse(body(), media_type=MEDIA_TYPE, headers=HEADERS)


async def _next(
    stream: EventStream[Any],
    events: AsyncIterator[Event | AnswerEvent[Any]],
    until: float,
    disconnected: Callable[[], Awaitable[bool]] | None = None,
) -> Event | AnswerEvent[Any]:
    """The next event, by ``until`` (past it: DeadlineExceeded, as the plain route's backstop);
    with ``disconnected``, the client is looked at every ``POLL_S`` seconds meanwhile."""
    waiting = asyncio.ensure_future(anext(events))
    try:
        while True:
            left = until - time.monotonic()
            step = left if disconnected is None else min(gate.POLL_S, left)
            done, _ = await asyncio.wait({waiting}, timeout=max(0.0, step))
            if done:
                return waiting.result()
            if disconnected is not None and await disconnected():
                raise gate.ClientGone()
            if time.monotonic() >= until:
                raise DeadlineExceeded(stream.deadline)
    except BaseException:
        stream.close()
        raise
    finally:
        waiting.cancel()
