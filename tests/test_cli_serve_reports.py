"""``covrag serve --reports-dir DIR`` as the docs write it: a folder not made yet is created."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from covrag.cli import main  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_missing_reports_folder_is_created_and_served(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    port = _free_port()
    command = [sys.executable, "-m", "covrag.cli", "serve", "--port", str(port), "--no-preload"]
    command += ["--coverage", "gold", "--reports-dir", str(reports)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                listing = httpx.get(f"http://127.0.0.1:{port}/reports", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "covrag serve did not start"
                time.sleep(0.1)
        assert listing.status_code == 200 and reports.is_dir()
    finally:
        process.terminate()
        out, _ = process.communicate(timeout=30)
    assert f"created the reports folder {reports}" in out.decode()


def test_a_refused_serve_command_creates_no_folder(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    reports = tmp_path / "reports"
    code = main(["serve", "--selector", "greedy-covrage", "--reports-dir", str(reports)])
    assert code == 2 and "did you mean greedy-coverage" in capsys.readouterr().err
    assert not reports.exists()
    (tmp_path / "file").write_text("x")
    code = main(["serve", "--no-preload", "--reports-dir", str(tmp_path / "file")])
    assert code == 2 and "is not a folder" in capsys.readouterr().err
