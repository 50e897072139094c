"""ASGI middleware that refuses requests before any parsing: wrong API key (401), body too large
(413), body that does not arrive in time (408). It runs outside FastAPI so an unauthenticated,
oversized or stalled body is never read in full.

uvicorn's ``timeout_keep_alive`` only covers the idle time between requests; once the headers
are in, nothing bounds how long a body may take. The guard reads the body under one deadline
(``body_timeout_s`` from the first byte it waits for), which also cuts a body that drips in a byte
at a time. A client that stalls inside the headers is not covered (uvicorn has no such timeout);
put a reverse proxy in front of a server open to untrusted networks.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PROTECTED_PREFIXES = ("/v1/", "/reports")


def is_protected(path: str) -> bool:
    """Whether a path needs the API key (everything but /healthz and the OpenAPI docs)."""
    return path.startswith(PROTECTED_PREFIXES) or path == "/metrics"


class RequestGuard:
    """Checks the API key on protected paths, then buffers the body up to ``max_body_bytes``.

    Args:
        app: The wrapped ASGI app.
        api_key: The key clients must send, or None to accept every request.
        max_body_bytes: Largest body accepted; a larger declared ``Content-Length`` is refused
            before the app sees it, a larger streamed (chunked) body as soon as it passes the
            limit (what the client still sends of it is read and dropped, up to this many bytes
            more, so that it reads the refusal).
        body_timeout_s: Seconds the whole body may take to arrive; then 408 and the
            connection is closed.
    """

    def __init__(
        self, app: ASGIApp, api_key: str | None, max_body_bytes: int, body_timeout_s: float = 10.0
    ) -> None:
        self.app = app
        self.api_key = api_key.encode() if api_key is not None else None
        self.max_body_bytes = max_body_bytes
        self.body_timeout_s = body_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v for k, v in scope.get("headers", [])}
        if self.api_key is not None and is_protected(scope["path"]):
            if not self._authorised(headers):
                await self._drain(receive)
                await _error(
                    send,
                    401,
                    "missing or wrong API key: send 'Authorization: Bearer <key>' or "
                    "'X-API-Key: <key>'",
                    "Authorization",
                    extra_headers=[(b"www-authenticate", b"Bearer")],
                )
                return
        declared = headers.get("content-length")
        if declared is not None:
            if not declared.isdigit():
                await _error(send, 400, "Content-Length is not a number", "Content-Length")
                return
            if int(declared) > self.max_body_bytes:
                await self._drain(receive)
                await self._too_large(send)
                return
        body = await self._read_body(receive, send)
        if body is None:
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _read_body(self, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None once a refusal was sent (or the client went away)."""
        chunks: list[bytes] = []
        size = 0
        more = True
        deadline = time.monotonic() + self.body_timeout_s
        while more:
            try:
                message = await asyncio.wait_for(receive(), deadline - time.monotonic())
            except TimeoutError:
                await _error(
                    send,
                    408,
                    f"the request body did not arrive within {self.body_timeout_s:g} s",
                    "body",
                )
                return None
            if message["type"] != "http.request":  # the client went away
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body_bytes:
                if message.get("more_body", False):
                    await self._drain(receive)
                await self._too_large(send)
                return None
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        return b"".join(chunks)

    async def _drain(self, receive: Receive) -> None:
        """Read and drop what is left of a refused body, at most ``max_body_bytes`` more within
        ``body_timeout_s``, so that a client still sending it reads the refusal instead of a
        connection reset (closing a socket with unread bytes resets it). A longer or slower body
        is cut there: the client may then see the reset, never a body read in full."""
        drained = 0
        deadline = time.monotonic() + self.body_timeout_s
        while drained <= self.max_body_bytes:
            try:
                message = await asyncio.wait_for(receive(), deadline - time.monotonic())
            except TimeoutError:
                return
            if message["type"] != "http.request":
                return
            drained += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    def _authorised(self, headers: dict[str, bytes]) -> bool:
        assert self.api_key is not None
        candidates = []
        authorization = headers.get("authorization", b"")
        scheme, _, token = authorization.partition(b" ")
        if scheme.lower() == b"bearer":
            candidates.append(token.strip())
        if "x-api-key" in headers:
            candidates.append(headers["x-api-key"].strip())
        return any(hmac.compare_digest(c, self.api_key) for c in candidates)

    async def _too_large(self, send: Send) -> None:
        await _error(send, 413, f"request body is larger than {self.max_body_bytes} bytes", "body")


async def _error(
    send: Send,
    status: int,
    message: str,
    field: str | None,
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    body = json.dumps(
        {"detail": message, "field": field, "errors": [{"field": field, "message": message}]}
    ).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
        *(extra_headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
