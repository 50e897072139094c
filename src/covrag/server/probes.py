"""``GET /readyz``: the readiness probe of one server process.

uvicorn runs the app's start-up (loading the default models, unless ``preload`` is off) before
it answers any request, so a process that answers is ready: the probe says whether its models
are loaded or load at the first request, and which process answered (with several replicas,
each connection reaches one of them). ``GET /healthz`` is the liveness probe.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

from fastapi import FastAPI

from covrag.schema.http import ReadyOut


@dataclass
class Readiness:
    """What the app's start-up has done in this process."""

    models_loaded: bool = False


def add_readiness_route(api: FastAPI) -> Readiness:
    """Register ``/readyz`` (open, as ``/healthz`` is); the app's start-up sets the returned
    record's ``models_loaded`` once its models are loaded."""
    readiness = Readiness()

    @api.get(
        "/readyz",
        response_model=ReadyOut,
        summary="Readiness: this process's models are loaded (or load on first request)",
    )
    async def readyz() -> ReadyOut:
        models: Literal["loaded", "on first request"] = (
            "loaded" if readiness.models_loaded else "on first request"
        )
        return ReadyOut(status="ready", models=models, pid=os.getpid())

    return readiness
