"""``covrag serve`` from the command line: a real process, spoken to over HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from covrag.cli import main  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_serve_command_runs_a_server_that_checks_the_key() -> None:
    port = _free_port()
    env = {**os.environ, "COVRAG_API_KEY": "from-env"}
    command = [sys.executable, "-m", "covrag.cli", "serve", "--port", str(port)]
    command += ["--no-preload", "--coverage", "gold", "--log-level", "warning"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(f"{url}/healthz", timeout=2)
                break
            except httpx.TransportError:
                assert process.poll() is None, process.stdout.read() if process.stdout else ""
                assert time.monotonic() < deadline, "covrag serve did not start"
                time.sleep(0.1)
        assert health.status_code == 200
        request = {
            "query": "q",
            "passages": [{"id": "p", "text": "t", "covers": ["a"]}],
            "aspects": [{"id": "a", "text": "t"}],
            "relevance": "order",
        }
        assert httpx.post(f"{url}/v1/select", json=request).status_code == 401
        ok = httpx.post(f"{url}/v1/select", json=request, headers={"X-API-Key": "from-env"})
        assert ok.status_code == 200 and ok.json()["passage_ids"] == ["p"]
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_serve_rejects_unknown_defaults_before_starting(capsys) -> None:  # type: ignore[no-untyped-def]
    code = main(["serve", "--selector", "greedy-covrage", "--port", str(_free_port())])
    assert code == 2
    assert "did you mean greedy-coverage" in capsys.readouterr().err
