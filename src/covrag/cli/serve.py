"""``covrag serve``: the HTTP service (needs ``covrag[serve]``).

Every :class:`~covrag.server.ServerConfig` field is an option, generated from the field, but for
the caps set from Python (:data:`PYTHON_ONLY`) and ``processes``, read from
``$COVRAG_SERVE_PROCESSES``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

from rich.console import Console

from covrag.cli.common import Subparsers, add_config_options, config_from_args
from covrag.errors import ConfigError
from covrag.server.config import API_KEY_ENV, PROCESSES_ENV, ServerConfig

#: Caps set from Python only (``ServerConfig``): the CLI's options are capped at 180 (issue 33).
PYTHON_ONLY = ("max_question_chars", "max_llm_passages", "max_completion_tokens", "max_llm_tokens")
SERVER_OPTIONS = tuple(
    f.name for f in dataclasses.fields(ServerConfig) if f.name not in (*PYTHON_ONLY, "processes")
)
FLAGS = {
    "timeout_s": "--timeout",
    "llm_timeout_s": "--llm-timeout",
    "default_coverage": "--coverage",
    "default_selector": "--selector",
    "body_timeout_s": "--body-timeout",
    "model_wait_s": "--model-wait",
}


def register(sub: Subparsers) -> None:
    """Register ``covrag serve`` and its options."""
    p = sub.add_parser("serve", help="serve selection over HTTP (FastAPI + uvicorn)")
    p.add_argument("--host", default="127.0.0.1", help="interface to bind (default: loopback)")
    p.add_argument("--port", type=port_number, default=8000, help="TCP port, 0-65535 (0: any free)")
    add_config_options(p, ServerConfig, SERVER_OPTIONS, flags=FLAGS)
    p.set_defaults(run_command=run_serve)


def port_number(text: str) -> int:
    """``--port``: an integer in 0-65535, refused by argparse (exit 2) otherwise."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number (0-65535)") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port number (0-65535)")
    return port


def processes() -> int:
    """``$COVRAG_SERVE_PROCESSES``: how many server processes (1 when unset or empty)."""
    text = os.environ.get(PROCESSES_ENV, "").strip()
    if not text:
        return 1
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"${PROCESSES_ENV} must be a whole number >= 1, got {text!r}")
    return int(text)


def run_serve(args: argparse.Namespace, console: Console) -> int:
    from covrag.server.run import listen, serve

    api_key = args.api_key
    if api_key is not None and not api_key.strip():
        raise ConfigError("--api-key is empty: give a key, or leave the option out to serve openly")
    if api_key is None:
        api_key = os.environ.get(API_KEY_ENV)
        if api_key is not None and not api_key.strip():
            raise ConfigError(
                f"${API_KEY_ENV} is set but empty: give a key, or unset it to serve openly"
            )
    names = [n for n in SERVER_OPTIONS if n not in ("api_key", "reports_dir")]
    config = config_from_args(
        ServerConfig, args, names, api_key=api_key, reports_dir=None, processes=processes()
    )
    sock = listen(args.host, args.port)  # a busy port is one line and exit 2, before models load
    port = sock.getsockname()[1]
    host = f"[{args.host}]" if ":" in args.host else args.host
    reports, created = args.reports_dir, False
    if reports is not None and not os.path.lexists(reports):
        # The docs' example names a folder that a first run has not made yet.
        Path(reports).mkdir(parents=True)
        created = True
        console.print(f"created the reports folder {reports} (empty; `covrag report` writes pages)")
    auth = "API key required" if config.api_key else "no API key (open)"
    try:
        config = dataclasses.replace(config, reports_dir=reports)
        replicas = f", {config.processes} processes" if config.processes > 1 else ""
        console.print(f"covrag serve on http://{host}:{port} ({auth}{replicas}); docs at /docs")
        # the server's log: each request at info, and everything with covrag's -v
        serve(config, log_level="debug" if args.verbose else "info", sock=sock)
    except BaseException:
        sock.close()
        # A refused start (an unknown selector) leaves no folder of its making.
        if created and not any(Path(reports).iterdir()):
            Path(reports).rmdir()
        raise
    return 0
