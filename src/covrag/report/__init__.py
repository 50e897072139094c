"""Self-contained HTML reports of selection runs and benches (``covrag report``).

A report is one HTML file with inline CSS, JavaScript and SVG, and a Content-Security-Policy that
forbids any external load. Every text from the input is escaped: passages are untrusted.
"""

from __future__ import annotations

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
from covrag.schema._json import read_json_file

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
    """Decode a run file or bench summary; a bench output folder means its ``summary.json``.

    A bench summary that lists its run files (``run_files``) is refused unless every one of
    them is in the folder beside it: a bench that did not finish is not reported as one.
    """
    path = Path(source)
    if path.is_dir():
        path = path / "summary.json"
    data = read_json_file(path)
    if isinstance(data, dict) and "run_files" in data:
        _check_run_files(data["run_files"], path)
    return data, str(path)


def _check_run_files(listed: Any, summary: Path) -> None:
    """Every run file a bench summary lists exists beside it (relative paths inside it only)."""
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise DataError("must be a list of paths", path=str(summary), field="run_files")
    missing = []
    for name in listed:
        relative = Path(name)
        if relative.is_absolute() or ".." in relative.parts:
            raise DataError(f"{name!r} is not inside the bench folder", path=str(summary))
        if not (summary.parent / relative).is_file():
            missing.append(name)
    if missing:
        raise DataError(
            f"the bench is incomplete: {len(missing)} of its {len(listed)} run files are "
            f"missing ({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''})",
            path=str(summary),
        )


def write_report(source: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    """Render ``source`` to ``out`` atomically; returns the path written."""
    data, where = load_report_input(source)
    atomic_write_text(out, render_report(data, where))
    return Path(out)
