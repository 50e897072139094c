"""What the service is doing: Prometheus metrics (``GET /metrics``) and one JSON log line a request.

The metrics are the process's (the model locks they watch are too), kept in a registry of their
own rather than ``prometheus_client``'s global one, so that covrag registers nothing on import
and an application embedding the app keeps its own. Names:

- ``covrag_http_requests_total{route, method, status}``: requests answered, refusals by the
  guard (401, 408, 413) included; ``route`` is the route's template (``/reports/{name}``), or
  ``unmatched`` for a path no route serves.
- ``covrag_http_request_seconds{route}``: latency histogram, from the first byte of the request
  the app sees to the end of the response.
- ``covrag_model_wait_seconds{lock}``: how long requests waited for a model lock (``model``: the
  encoders and cross-encoder; ``llm``: the LLM routes), whether they got it or not (429).
- ``covrag_model_waiting_requests{lock}``: requests waiting for a lock now (the queue depth).
- ``covrag_llm_tokens_total{kind}``: prompt and completion tokens the LLM routes spent (replies
  from the response cache spend none).
- ``covrag_coverage_pairs_scored_total``: (passage, aspect) pairs a coverage model scored.
- ``process_*``: CPU seconds, resident memory, open files of the process (Linux).

With several processes (replicas: ``ServerConfig.processes``, :mod:`covrag.server.replicas`),
``$PROMETHEUS_MULTIPROC_DIR`` names a folder the processes keep their values in
(``prometheus_client``'s multiprocess mode; it must be set before ``prometheus_client`` is
imported), and ``/metrics``, whichever process answers it, sums every process's counters and
histograms, and the queue depth of the live ones. ``process_*`` then describe one process only,
so they are left out; ``covrag_replica_resident_memory_bytes{pid}`` gives each live replica's
resident memory instead (Linux).

:class:`RequestObserver` gives every response an ``X-Request-ID`` (the client's when it sent a
valid one: 1-128 letters, digits, ``.``, ``_``, ``:`` or ``-``; else a new uuid4) and logs one
JSON line per request to the ``covrag.server.access`` logger (INFO): request id, method, route,
path, status and seconds, and the pid of the process that served it.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import sys
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from covrag.errors import MissingExtraError
from covrag.server.guard import ASGIApp, Message, Receive, Scope, Send

try:
    from prometheus_client import (
        CONTENT_TYPE_LATEST,
        CollectorRegistry,
        Counter,
        Gauge,
        Histogram,
        ProcessCollector,
        generate_latest,
    )
    from prometheus_client.core import GaugeMetricFamily, Metric
    from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead
    from prometheus_client.registry import Collector
    from starlette.routing import BaseRoute, Match
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError(exc.name or "prometheus_client", "serve") from exc

ACCESS_LOGGER = "covrag.server.access"
access_log = logging.getLogger(ACCESS_LOGGER)

REQUEST_ID_HEADER = "X-Request-ID"
_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")

#: Latency buckets, in seconds: selections take milliseconds to the 30 s timeout, answers up to
#: the 600 s LLM timeout.
SECONDS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)

CONTENT_TYPE = CONTENT_TYPE_LATEST

#: prometheus_client's folder for the values of several processes (its multiprocess mode).
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"


class ServerMetrics:
    """The service's metrics, in a registry of their own (see the module's docstring)."""

    def __init__(self) -> None:
        #: The folder of every process's values, when the server runs several processes.
        self.multiprocess_dir = os.environ.get(MULTIPROC_ENV) or None
        self.registry = registry = CollectorRegistry()
        self.requests = Counter(
            "covrag_http_requests",
            "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "covrag_http_request_seconds",
            "Seconds from a request's arrival to the end of its response, by route template",
            ["route"],
            buckets=SECONDS,
            registry=registry,
        )
        self.lock_wait = Histogram(
            "covrag_model_wait_seconds",
            "Seconds requests waited for a model lock (model: encoders; llm: the LLM routes)",
            ["lock"],
            buckets=SECONDS,
            registry=registry,
        )
        self.waiting = Gauge(
            "covrag_model_waiting_requests",
            "Requests waiting for a model lock now",
            ["lock"],
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.llm_tokens = Counter(
            "covrag_llm_tokens",
            "Tokens the LLM read (prompt) and wrote (completion) for served requests",
            ["kind"],
            registry=registry,
        )
        self.pairs_scored = Counter(
            "covrag_coverage_pairs_scored",
            "(passage, aspect) pairs a coverage model scored for served requests",
            registry=registry,
        )
        if self.multiprocess_dir is None:
            ProcessCollector(registry=registry)

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format (every process's, with several)."""
        if self.multiprocess_dir is None:
            return bytes(generate_latest(self.registry))
        merged = CollectorRegistry()
        MultiProcessCollector(merged, path=self.multiprocess_dir)  # type: ignore[no-untyped-call]
        merged.register(ReplicaMemory(Path(self.multiprocess_dir)))
        return bytes(generate_latest(merged))

    def forget_process(self) -> None:
        """Drop this process's live gauges from the shared folder (at its exit); its counts
        stay in the sums."""
        if self.multiprocess_dir is not None:
            mark_process_dead(os.getpid(), self.multiprocess_dir)  # type: ignore[no-untyped-call]


class ReplicaMemory(Collector):
    """``covrag_replica_resident_memory_bytes{pid}``: the resident memory of each process
    that keeps values in ``folder`` and shares this process's parent (the supervisor), read
    from ``/proc`` (Linux; nothing elsewhere)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "covrag_replica_resident_memory_bytes",
            "Resident memory of each server process (replica), by pid",
            labels=["pid"],
        )
        pids = {path.stem.rpartition("_")[2] for path in self.folder.glob("*.db")}
        for pid in sorted(int(p) for p in pids if p.isdigit()):
            rss = _resident_bytes(pid) if _parent_of(pid) == os.getppid() else None
            if rss is not None:
                family.add_metric([str(pid)], rss)
        yield family


def _parent_of(pid: int) -> int | None:
    """The parent pid of a live process (``/proc/PID/stat``), else None."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat.rpartition(")")[2].split()[1])  # after the name: state, ppid
    except (OSError, ValueError, IndexError):
        return None


def _resident_bytes(pid: int) -> int | None:
    try:
        pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


@functools.cache
def metrics() -> ServerMetrics:
    """The process's metrics, created on first use."""
    return ServerMetrics()


def request_id(sent: bytes | None) -> str:
    """The client's request id when it is a valid one, else a new uuid4."""
    if sent is not None:
        text = sent.decode("latin-1").strip()
        if _REQUEST_ID.match(text):
            return text
    return str(uuid.uuid4())


def route_of(scope: Scope, routes: Sequence[BaseRoute] = ()) -> str:
    """The template of the route that served ``scope``; for a request refused before routing
    (by the guard), the first of ``routes`` its path matches; ``unmatched`` when none does."""
    path = getattr(scope.get("route"), "path", None)
    if isinstance(path, str):
        return path
    for route in routes:
        if route.matches(scope)[0] != Match.NONE:
            path = getattr(route, "path", None)
            if isinstance(path, str):
                return path
    return "unmatched"


class RequestObserver:
    """Outermost ASGI middleware: request id header, metrics and the access log line.

    Args:
        app: The wrapped ASGI app (the guard, then FastAPI).
        routes: The app's routes, to name the route of a request refused before routing.
    """

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute] = ()) -> None:
        self.app = app
        self.routes = routes
        self.metrics = metrics()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = dict(scope.get("headers", [])).get(REQUEST_ID_HEADER.lower().encode())
        rid = request_id(sent)
        started = time.perf_counter()
        status = 500  # what the client sees when the app fails before it answers

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                headers = [*message.get("headers", []), (b"x-request-id", rid.encode())]
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            seconds = time.perf_counter() - started
            route = route_of(scope, self.routes)
            self.metrics.requests.labels(route, scope.get("method", ""), str(status)).inc()
            self.metrics.latency.labels(route).observe(seconds)
            access_log.info(
                json.dumps(
                    {
                        "request_id": rid,
                        "pid": os.getpid(),
                        "method": scope.get("method", ""),
                        "route": route,
                        "path": str(scope.get("path", ""))[:200],
                        "status": status,
                        "seconds": round(seconds, 4),
                    }
                )
            )


class _AccessHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The access log's stderr handler (one per process). It writes to the ``sys.stderr`` of
    the moment, not the one it was made with: a stream replaced and closed since (a test's
    captured stderr, a redirected log) would fail every later line."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def log_requests(log_level: str = "info") -> None:
    """Write the access log's JSON lines (``covrag.server.access``) to stderr, one a request,
    unless ``log_level`` is above ``info``; only the foreground server
    (:func:`~covrag.server.run.serve`) and each replica's app (:mod:`covrag.server.replicas`) do."""
    access = logging.getLogger(ACCESS_LOGGER)
    quiet = log_level.lower() not in ("trace", "debug", "info")
    access.setLevel(logging.WARNING if quiet else logging.INFO)
    if not any(isinstance(h, _AccessHandler) for h in access.handlers):
        handler = _AccessHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        access.addHandler(handler)
        access.propagate = False
