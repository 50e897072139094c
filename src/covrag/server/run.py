"""Running the app: in the foreground (``covrag serve``) or on a background thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from covrag.errors import ConfigError, CovragError, MissingExtraError
from covrag.server.app import create_app
from covrag.server.config import ServerConfig

try:
    import uvicorn
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("uvicorn", "serve") from exc


def check_port(port: int) -> None:
    """Refuse a port outside 0-65535 before any model is loaded."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port must be an integer in 0-65535, got {port!r}")


def serve(
    config: ServerConfig, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info"
) -> None:
    """Serve the app with uvicorn until interrupted."""
    check_port(port)
    uvicorn.run(create_app(config), host=host, port=port, log_level=log_level)


@contextmanager
def serve_in_background(
    config: ServerConfig, host: str = "127.0.0.1", port: int = 0, startup_timeout: float = 120.0
) -> Iterator[str]:
    """Run the app with uvicorn on a thread; yield its base URL, stop it on exit.

    Port 0 picks a free port. The URL is yielded once the app has started (models preloaded).

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
    server = uvicorn.Server(uvicorn.Config(create_app(config), log_level="warning", lifespan="on"))
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
