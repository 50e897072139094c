"""Self-contained HTML reports of selection runs and benches (``covrag report``).

A report is one HTML file with inline CSS, JavaScript and SVG, and a Content-Security-Policy that
forbids any external load. Every text from the input is escaped: passages are untrusted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from covrag.errors import DataError
from covrag.files import atomic_write_text
from covrag.report.bench_html import render_bench
from covrag.report.run_html import render_run
from covrag.report.runfile import (
    RunFile,
    TopicRun,
    parse_run_file,
    run_file_record,
    topic_run_record,
)

__all__ = [
    "RunFile",
    "TopicRun",
    "load_report_input",
    "parse_run_file",
    "render_report",
    "run_file_record",
    "topic_run_record",
    "write_report",
]


def render_report(data: Any, path: str | None = None) -> str:
    """HTML for a run file (``covrag select --run-json``) or a bench summary (``covrag bench``).

    Args:
        data: The decoded JSON.
        path: Where it came from, for error messages.
    """
    if isinstance(data, dict) and "topics" in data and isinstance(data["topics"], list):
        return render_run(parse_run_file(data, path))
    if isinstance(data, dict) and isinstance(data.get("results"), list):
        try:
            return render_bench(data)
        except DataError as exc:
            raise DataError(str(exc), path=path) from None
    raise DataError(
        "neither a run file (covrag select --run-json) nor a bench summary "
        "(covrag bench --out DIR writes DIR/summary.json)",
        path=path,
    )


def load_report_input(source: str | os.PathLike[str]) -> tuple[Any, str]:
    """Decode a run file or bench summary; a bench output folder means its ``summary.json``."""
    path = Path(source)
    if path.is_dir():
        path = path / "summary.json"
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text), str(path)
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON: {exc.msg}", path=str(path), line=exc.lineno) from None


def write_report(source: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Render ``source`` to ``out`` atomically; returns the path written."""
    data, where = load_report_input(source)
    atomic_write_text(out, render_report(data, where))
    return Path(out)
