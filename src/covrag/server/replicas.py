"""Several server processes (replicas) on one port: ``ServerConfig.processes`` > 1.

``covrag serve`` (``$COVRAG_SERVE_PROCESSES``) or :func:`~covrag.server.run.serve` hand the
port to uvicorn's supervisor, which starts ``processes`` fresh interpreters (``spawn``: nothing
loaded by the parent is shared) that accept from the one listening socket, so the kernel gives
each new connection to one of them, and which restarts one that dies. Each process builds the
app with :func:`factory` from the configuration the parent wrote to ``$COVRAG_SERVER_CONFIG``
and loads its own read-only models: its own model locks (a 429 says that *this* process's model
is busy), thread pool, caches and memory. The metrics are summed over the processes through
``$PROMETHEUS_MULTIPROC_DIR`` (:mod:`covrag.server.metrics`), a temporary folder the parent
makes and removes unless the operator set one.

An application may run :func:`factory` under uvicorn itself::

    COVRAG_SERVER_CONFIG='{"default_coverage": "embedding"}' PROMETHEUS_MULTIPROC_DIR=/tmp/m \\
        uvicorn covrag.server.replicas:factory --factory --workers 2 --no-access-log
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import json
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from covrag.errors import ConfigError
from covrag.server.app import create_app
from covrag.server.config import API_KEY_ENV, ServerConfig
from covrag.server.metrics import MULTIPROC_ENV, log_requests, metrics
from covrag.server.service import Menus

try:
    import uvicorn
    from fastapi import FastAPI
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from covrag.errors import MissingExtraError

    raise MissingExtraError(exc.name or "uvicorn", "serve") from exc

#: The environment variable that carries a :class:`ServerConfig` to the processes, as JSON.
CONFIG_ENV = "COVRAG_SERVER_CONFIG"

#: What uvicorn imports in each process.
FACTORY = "covrag.server.replicas:factory"


def config_json(config: ServerConfig) -> str:
    """``config`` as a JSON object of its fields (the key included: the environment of the
    server's own processes, as ``$COVRAG_API_KEY`` is)."""
    fields = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    if fields["reports_dir"] is not None:
        fields["reports_dir"] = str(fields["reports_dir"])
    return json.dumps(fields)


def config_from_json(text: str) -> ServerConfig:
    """The :class:`ServerConfig` of :func:`config_json` (a subset of the fields will do)."""
    try:
        fields: dict[str, Any] = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"${CONFIG_ENV} is not JSON: {exc}") from None
    known = {f.name for f in dataclasses.fields(ServerConfig)}
    if not isinstance(fields, dict) or set(fields) - known:
        unknown = sorted(set(fields) - known) if isinstance(fields, dict) else fields
        raise ConfigError(f"${CONFIG_ENV} must be an object of ServerConfig fields: {unknown}")
    if fields.get("reports_dir") is not None:
        fields["reports_dir"] = Path(fields["reports_dir"])
    return ServerConfig(**fields)


def factory() -> FastAPI:
    """The app of one process: :func:`~covrag.server.app.create_app` with the configuration of
    ``$COVRAG_SERVER_CONFIG`` (``ServerConfig()`` when unset; the key from ``$COVRAG_API_KEY``
    when the JSON has none), the JSON access log at uvicorn's log level, and, with several
    processes, this process's live gauges dropped from the metrics when it exits."""
    text = os.environ.get(CONFIG_ENV)
    config = config_from_json(text) if text else ServerConfig()
    if config.api_key is None and os.environ.get(API_KEY_ENV):
        config = dataclasses.replace(config, api_key=os.environ[API_KEY_ENV])
    level = logging.getLogger("uvicorn.error").getEffectiveLevel()
    log_requests(logging.getLevelName(level).lower())
    atexit.register(metrics().forget_process)
    return create_app(config)


def serve_replicas(config: ServerConfig, host: str, port: int, log_level: str = "info") -> None:
    """Serve ``config.processes`` processes on ``host:port`` until interrupted.

    The specs are checked here first (an unknown selector is one error, not a process that
    uvicorn restarts forever).
    """
    Menus.of(config)
    with _environment(config):
        uvicorn.run(
            FACTORY,
            factory=True,
            host=host,
            port=port,
            workers=config.processes,
            log_level=log_level,
            access_log=False,  # covrag's JSON access log replaces uvicorn's
        )


@contextlib.contextmanager
def _environment(config: ServerConfig) -> Iterator[None]:
    """The configuration, and a metrics folder unless ``$PROMETHEUS_MULTIPROC_DIR`` names one,
    in the environment the processes inherit; the parent's environment as it was afterwards."""
    saved = {name: os.environ.get(name) for name in (CONFIG_ENV, MULTIPROC_ENV)}
    folder = None
    given = os.environ.get(MULTIPROC_ENV)
    if given and not Path(given).is_dir():
        raise ConfigError(f"${MULTIPROC_ENV} names {given}, which is not a folder")
    if not given:
        folder = tempfile.mkdtemp(prefix="covrag-metrics-")
        os.environ[MULTIPROC_ENV] = folder
    os.environ[CONFIG_ENV] = config_json(config)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
