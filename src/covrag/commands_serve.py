"""``covrag serve``: the HTTP service (needs ``covrag[serve]``)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.console import Console

API_KEY_ENV = "COVRAG_API_KEY"


def add_serve_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Register ``covrag serve`` and its options."""
    p = sub.add_parser("serve", help="serve selection over HTTP (FastAPI + uvicorn)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument(
        "--api-key",
        default=None,
        help=f"require this key (Bearer or X-API-Key); also read from ${API_KEY_ENV}",
    )
    p.add_argument("--max-body-bytes", type=int, default=2_000_000, help="larger bodies get 413")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds per request before a 504")
    p.add_argument("--workers", type=int, default=2, help="threads for the CPU-bound work")
    p.add_argument(
        "--coverage",
        default="cross-encoder",
        help="coverage estimator when a request names none (cross-encoder, embedding, ...)",
    )
    p.add_argument(
        "--selector", default="expected-coverage", help="selector when a request names none"
    )
    p.add_argument(
        "--llm",
        default=None,
        help="LLM spec (e.g. local) that enables POST /v1/plan and /v1/answer (default: off)",
    )
    p.add_argument(
        "--llm-timeout", type=float, default=600.0, help="seconds per LLM request before a 504"
    )
    p.add_argument("--reports-dir", type=Path, default=None, help="folder of HTML reports to serve")
    p.add_argument(
        "--no-preload",
        action="store_true",
        help="load models on the first request instead of at start-up",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def run_serve(args: argparse.Namespace, console: Console) -> int:
    from covrag.server import ServerConfig
    from covrag.server.run import serve

    config = ServerConfig(
        api_key=args.api_key or os.environ.get(API_KEY_ENV) or None,
        max_body_bytes=args.max_body_bytes,
        timeout_s=args.timeout,
        workers=args.workers,
        default_coverage=args.coverage,
        default_selector=args.selector,
        reports_dir=args.reports_dir,
        preload=not args.no_preload,
        llm=args.llm,
        llm_timeout_s=args.llm_timeout,
    )
    auth = "API key required" if config.api_key else "no API key (open)"
    console.print(f"covrag serve on http://{args.host}:{args.port} ({auth}); docs at /docs")
    serve(config, host=args.host, port=args.port, log_level=args.log_level)
    return 0
