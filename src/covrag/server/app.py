"""The FastAPI app behind ``covrag serve``.

Routes: ``POST /v1/select``, ``POST /v1/plan`` and ``POST /v1/answer`` (with an LLM,
:mod:`covrag.server.llm_routes`), ``GET /healthz``, ``GET /readyz`` (:mod:`covrag.server.probes`),
``GET /metrics`` (Prometheus,
:mod:`covrag.server.metrics`), ``GET /reports`` and ``GET /reports/{name}``, and FastAPI's
``/openapi.json`` and ``/docs``. Every error is a JSON :class:`ErrorOut` naming the offending
field. CPU-bound work runs in a thread pool under a per-request deadline (504): the model work
stops at its first batch (or LLM token) past it, and a request that finds the model busy for
longer than ``model_wait_s`` is a 429 with ``Retry-After`` (:mod:`covrag.server.gate`). Every
response carries an ``X-Request-ID``, and every request is one JSON line in the access log.

Clients choose the selector and the coverage estimator among the specs the operator listed
(:mod:`covrag.server.specs`; the OpenAPI schema shows them as enums); they never name a model or
a path.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from covrag import __version__
from covrag.errors import MissingExtraError
from covrag.llm.base import LLM
from covrag.schema.http import (
    ErrorOut,
    FieldErrorOut,
    HealthOut,
    ReportsOut,
    SelectRequest,
    SelectResponse,
)
from covrag.server.config import ServerConfig
from covrag.server.failures import KNOWN, error_body, failure
from covrag.server.gate import run_gated
from covrag.server.guard import RequestGuard, is_protected
from covrag.server.metrics import CONTENT_TYPE, RequestObserver, metrics
from covrag.server.probes import add_readiness_route
from covrag.server.service import Menus, build_job, run_job, warm_up

try:
    from fastapi import FastAPI, HTTPException, Request
    from fastapi import Path as PathParam
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import FileResponse, JSONResponse, Response
    from starlette.exceptions import HTTPException as StarletteHTTPException
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("fastapi", "serve") from exc

logger = logging.getLogger(__name__)

REPORT_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.html$"
_REPORT_NAME = re.compile(REPORT_NAME)

_ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "the body cannot be decoded (not UTF-8 JSON)"},
    401: {"model": ErrorOut, "description": "missing or wrong API key"},
    408: {"model": ErrorOut, "description": "the body did not arrive within the server's limit"},
    413: {"model": ErrorOut, "description": "request body over the server's limit"},
    422: {"model": ErrorOut, "description": "a field is invalid; `field` names it"},
    429: {
        "model": ErrorOut,
        "description": "the model is busy with another request; retry after `Retry-After` s",
    },
    504: {"model": ErrorOut, "description": "the request ran past the server's timeout"},
}


def create_app(config: ServerConfig | None = None, llm: LLM | None = None) -> FastAPI:
    """Build the app: routes, JSON errors, and the API-key and body-size guard.

    Args:
        config: Limits, authentication and defaults; ``ServerConfig()`` when None.
        llm: The LLM behind ``/v1/plan`` and ``/v1/answer`` as an object (an application's own
            backend), instead of ``config.llm``'s specification.

    Returns:
        An ASGI application for uvicorn (or any ASGI server). Its thread pool and, unless
        ``config.preload`` is false, its models are set up when the server starts it.
    """
    config = config or ServerConfig()
    # Fail at start-up, not on the first request, when a spec names nothing known.
    menus = Menus.of(config)
    executor = ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="covrag")

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if config.preload:
            await asyncio.get_running_loop().run_in_executor(executor, warm_up, config)
            readiness.models_loaded = True
        yield
        executor.shutdown(wait=False, cancel_futures=True)

    api = FastAPI(
        title="covrag",
        version=__version__,
        summary="Coverage-aware context selection for long-form RAG",
        lifespan=lifespan,
    )

    _add_select_route(api, config, executor, menus)
    if llm is not None or config.llm is not None:
        from covrag.llm import parse_llm
        from covrag.server.llm_routes import add_llm_routes

        chat = llm if llm is not None else parse_llm(str(config.llm))
        add_llm_routes(api, config, executor, chat, _ERRORS)

    _add_info_routes(api, config, menus)
    readiness = add_readiness_route(api)
    _install_error_handlers(api)
    _customise_openapi(api, config, menus)
    api.add_middleware(
        RequestGuard,
        api_key=config.api_key,
        max_body_bytes=config.max_body_bytes,
        body_timeout_s=config.body_timeout_s,
    )
    api.add_middleware(RequestObserver, routes=api.routes)  # outermost: sees the guard's too
    return api


def _add_select_route(
    api: FastAPI, config: ServerConfig, executor: ThreadPoolExecutor, menus: Menus
) -> None:
    """``/v1/select``, run on ``executor`` under the request's deadline, which a client that
    goes away cancels (:func:`~covrag.server.gate.run_gated`)."""

    @api.post(
        "/v1/select",
        response_model=SelectResponse,
        responses=_ERRORS,
        summary="Select context that covers the aspects within a budget",
    )
    async def select(request: SelectRequest, http: Request) -> SelectResponse:
        """Estimate the coverage matrix of the passages against the aspects, then select.

        Returns the selection in pick order, the trace of what each pick newly covered, the
        aspects left uncovered and (unless ``include_matrix`` is false) the coverage matrix.
        """
        job = build_job(request, config, menus)
        return await run_gated(
            executor,
            lambda deadline: run_job(job, deadline, config.model_wait_s),
            config.timeout_s,
            http.is_disconnected,
        )


def _add_info_routes(api: FastAPI, config: ServerConfig, menus: Menus) -> None:
    """``/healthz`` and the HTML reports (``/reports``, ``/reports/{name}``)."""

    @api.get("/healthz", response_model=HealthOut, summary="Liveness and what the server offers")
    async def healthz() -> HealthOut:
        return HealthOut(
            status="ok",
            version=__version__,
            selectors=menus.selectors.specs,
            coverage_estimators=menus.coverages.specs,
        )

    @api.get(
        "/metrics",
        response_class=Response,
        responses={
            401: _ERRORS[401],
            200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text format"},
        },
        summary="Requests, latency, model-lock waits, LLM tokens and pairs scored (Prometheus)",
    )
    async def prometheus() -> Response:
        return Response(metrics().exposition(), media_type=CONTENT_TYPE)

    report_errors: dict[int | str, dict[str, Any]] = {
        k: v for k, v in _ERRORS.items() if k in (401, 422)
    }
    report_errors[404] = {"model": ErrorOut, "description": "no such report"}

    @api.get(
        "/reports",
        response_model=ReportsOut,
        responses=report_errors,
        summary="List the HTML reports the server serves",
    )
    async def list_reports() -> ReportsOut:
        folder = _reports_dir(config)
        names = sorted(p.name for p in folder.iterdir() if _servable(folder, p.name))
        return ReportsOut(reports=names)

    @api.get(
        "/reports/{name}",
        response_class=FileResponse,
        responses={**report_errors, 200: {"content": {"text/html": {}}, "description": "report"}},
        summary="One HTML report from the server's reports folder",
    )
    async def report(name: str = PathParam(pattern=REPORT_NAME, max_length=210)) -> FileResponse:
        folder = _reports_dir(config)
        if not _servable(folder, name):
            raise HTTPException(404, f"no report named {name!r}")
        return FileResponse(
            folder / name,
            media_type="text/html; charset=utf-8",
            headers={"X-Content-Type-Options": "nosniff"},
        )


def _reports_dir(config: ServerConfig) -> Path:
    if config.reports_dir is None:
        raise HTTPException(404, "this server has no reports folder (covrag serve --reports-dir)")
    return Path(config.reports_dir).resolve()


def _servable(folder: Path, name: str) -> bool:
    """A plain ``*.html`` file directly inside ``folder``, also after resolving links."""
    if not _REPORT_NAME.match(name):
        return False
    path = (folder / name).resolve()
    return path.parent == folder and path.is_file()


def field_path(loc: tuple[int | str, ...] | list[int | str]) -> str | None:
    """``("body", "passages", 3, "text")`` -> ``passages[3].text``; None for the body itself."""
    parts = list(loc)
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or None


def _field_error(error: dict[str, Any]) -> FieldErrorOut:
    """One pydantic error as ``field`` + ``message`` (``passages[3].text``, ``field required``)."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") == "json_invalid":
        at = f" at character {loc[-1]}" if loc and isinstance(loc[-1], int) else ""
        reason = error.get("ctx", {}).get("error", "cannot parse the body")
        return FieldErrorOut(field="body", message=f"invalid JSON{at}: {reason}")
    text = str(error.get("msg", "invalid value"))
    return FieldErrorOut(field=field_path(loc) or "body", message=text[:1].lower() + text[1:])


def _error_response(
    status: int, errors: list[FieldErrorOut], headers: Mapping[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(errors).model_dump(), status_code=status, headers=headers)


def _install_error_handlers(api: FastAPI) -> None:
    @api.exception_handler(RequestValidationError)
    async def validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [_field_error(dict(e)) for e in exc.errors()]
        return _error_response(422, errors or [FieldErrorOut(field="body", message="invalid")])

    async def failed(_: Request, exc: Exception) -> JSONResponse:
        reply = failure(exc)  # the work's exceptions, and any other (500)
        return JSONResponse(reply.body.model_dump(), reply.status, dict(reply.headers) or None)

    for kind in (*KNOWN, Exception):
        api.add_exception_handler(kind, failed)

    @api.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400:  # FastAPI's only 400: a body it cannot decode
            error = FieldErrorOut(field="body", message="cannot decode the body as UTF-8 JSON")
        else:
            error = FieldErrorOut(field=None, message=str(exc.detail))
        return _error_response(exc.status_code, [error], exc.headers)


def _customise_openapi(api: FastAPI, config: ServerConfig, menus: Menus) -> None:
    """The closed spec lists as enums, and the API key: either header works on protected paths."""
    generate = api.openapi

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is None:
            schema = generate()
            components = schema.setdefault("components", {})
            fields = components["schemas"]["SelectRequest"]["properties"]
            fields["selector"] = menus.selectors.json_schema("Selector")
            fields["coverage"] = menus.coverages.json_schema("Coverage estimator")
            if config.api_key is not None:
                components["securitySchemes"] = {
                    "bearer": {"type": "http", "scheme": "bearer"},
                    "apiKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
                }
                for path, operations in schema.get("paths", {}).items():
                    if is_protected(path):
                        for operation in operations.values():
                            operation["security"] = [{"bearer": []}, {"apiKey": []}]
            api.openapi_schema = schema
        return api.openapi_schema

    api.openapi = openapi  # type: ignore[method-assign]
