"""Running the app: in the foreground (``covrag serve``) or on a background thread."""

from __future__ import annotations

import errno
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from covrag.errors import ConfigError, CovragError, MissingExtraError
from covrag.llm.base import LLM
from covrag.server.app import create_app
from covrag.server.config import ServerConfig
from covrag.server.metrics import log_requests

try:
    import uvicorn
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("uvicorn", "serve") from exc


def check_port(port: int) -> None:
    """Refuse a port outside 0-65535 before any model is loaded."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port must be an integer in 0-65535, got {port!r}")


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port``, before any model is loaded.

    Raises:
        ConfigError: One line naming ``host:port`` when it cannot be bound (in use, not an
            address of this machine, a privileged port), instead of uvicorn's log lines.
    """
    check_port(port)
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as exc:
        raise ConfigError(f"cannot listen on {where}: {exc.strerror or exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind(address)
    except OSError as exc:
        sock.close()
        reason = "the address is already in use" if exc.errno == errno.EADDRINUSE else None
        raise ConfigError(f"cannot listen on {where}: {reason or exc.strerror or exc}") from None
    return sock


def serve(
    config: ServerConfig,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    sock: socket.socket | None = None,
) -> None:
    """Serve the app with uvicorn until interrupted.

    Args:
        config: The server's settings.
        host: Interface to bind, unless ``sock`` is given.
        port: TCP port to bind, unless ``sock`` is given.
        log_level: uvicorn's log level; at ``info`` and below, the JSON access log too
            (:func:`log_requests`).
        sock: A socket from :func:`listen` (the CLI binds first, to report a busy port).

    With ``config.processes`` > 1, uvicorn's supervisor runs that many processes on the port
    (:mod:`covrag.server.replicas`); ``sock`` then only proved the port free and is closed.

    Raises:
        ConfigError: ``host:port`` cannot be bound (:func:`listen`).
    """
    sock = sock if sock is not None else listen(host, port)
    if config.processes > 1:
        from covrag.server.replicas import serve_replicas

        host, port = sock.getsockname()[:2]
        sock.close()  # uvicorn binds the port again (SO_REUSEADDR) for its processes
        serve_replicas(config, host, port, log_level)
        return
    log_requests(log_level)
    try:
        # covrag's JSON access log (covrag.server.metrics) replaces uvicorn's text one
        app = create_app(config)
        server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, access_log=False))
        server.run(sockets=[sock])
    finally:
        sock.close()


@contextmanager
def serve_in_background(
    config: ServerConfig,
    host: str = "127.0.0.1",
    port: int = 0,
    startup_timeout: float = 120.0,
    llm: LLM | None = None,
) -> Iterator[str]:
    """Run the app with uvicorn on a thread; yield its base URL, stop it on exit.

    Port 0 picks a free port. The URL is yielded once the app has started (models preloaded).
    One process, in this one: ``config.processes`` is for :func:`serve`.
    ``llm``: an LLM object for the LLM routes instead of ``config.llm`` (:func:`create_app`).

    Example:
        >>> with serve_in_background(ServerConfig(preload=False)) as url:  # doctest: +SKIP
        ...     httpx.get(f"{url}/healthz").json()["status"]
        'ok'
    """
    check_port(port)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    bound_port = sock.getsockname()[1]
    app = create_app(config, llm)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="covrag-server", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + startup_timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            sock.close()
            raise CovragError("the covrag server did not start (see the log above)")
        time.sleep(0.02)
    try:
        yield f"http://{host}:{bound_port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        sock.close()


def probe_request(n_passages: int, n_aspects: int, **fields: Any) -> dict[str, Any]:
    """A ``POST /v1/select`` body of ``n_passages`` x ``n_aspects`` cross-encoder pairs over texts
    tagged afresh, so no earlier request's scores are in the pair cache: the model scores every
    pair. For measuring a server's model work (``benchmarks/bench_deadline.py``) and testing its
    deadlines (``tests/test_server_deadline.py``); ``fields`` add to or replace the body's.
    """
    tag = uuid.uuid4().hex[:8]
    body: dict[str, Any] = {
        "query": f"Should cities ban cars? {tag}",
        "passages": [
            {"id": f"p{i}", "text": f"Passage {i} ({tag}) on traffic, shops and clean air."}
            for i in range(n_passages)
        ],
        "aspects": [
            {"id": f"a{j}", "text": f"Aspect {j} ({tag}): does a ban change this?"}
            for j in range(n_aspects)
        ],
        "coverage": "cross-encoder",
        "relevance": "order",
        "k": 2,
    }
    return body | fields
