"""``covrag serve``: the HTTP service (needs ``covrag[serve]``).

Every :class:`~covrag.server.ServerConfig` field is an option, generated from the field.
"""

from __future__ import annotations

import argparse
import dataclasses
import os

from rich.console import Console

from covrag.cli._common import Subparsers, add_config_options, config_from_args
from covrag.server.config import API_KEY_ENV, ServerConfig

SERVER_OPTIONS = tuple(f.name for f in dataclasses.fields(ServerConfig))
FLAGS = {
    "timeout_s": "--timeout",
    "llm_timeout_s": "--llm-timeout",
    "default_coverage": "--coverage",
    "default_selector": "--selector",
}


def register(sub: Subparsers) -> None:
    """Register ``covrag serve`` and its options."""
    p = sub.add_parser("serve", help="serve selection over HTTP (FastAPI + uvicorn)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8000)
    add_config_options(p, ServerConfig, SERVER_OPTIONS, flags=FLAGS)
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.set_defaults(run_command=run_serve)


def run_serve(args: argparse.Namespace, console: Console) -> int:
    from covrag.server.run import serve

    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    config = config_from_args(
        ServerConfig, args, [n for n in SERVER_OPTIONS if n != "api_key"], api_key=api_key
    )
    auth = "API key required" if config.api_key else "no API key (open)"
    console.print(f"covrag serve on http://{args.host}:{args.port} ({auth}); docs at /docs")
    serve(config, host=args.host, port=args.port, log_level=args.log_level)
    return 0
