"""``covrag serve`` from the command line: a real process, spoken to over HTTP."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from covrag.cli import main  # noqa: E402


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_listening(process: subprocess.Popen[str]) -> str:
    """The URL uvicorn says it listens on (its readiness line), or a loud failure with the log."""
    assert process.stdout is not None
    # A safety net, not a timing window: a server that hangs before listening is killed, which
    # ends the read below.
    timer = threading.Timer(120, process.kill)
    timer.daemon = True
    timer.start()
    seen: list[str] = []
    url = None
    try:
        for line in process.stdout:
            seen.append(line)
            # covrag binds the port first and names it; uvicorn then says when it serves
            if found := re.search(r"covrag serve on (http://127\.0\.0\.1:\d+)", line):
                url = found.group(1)
            if url and "Application startup complete" in line:
                return url
    finally:
        timer.cancel()
    raise AssertionError("covrag serve did not start:\n" + "".join(seen))


def test_serve_command_runs_a_server_that_checks_the_key() -> None:
    env = {**os.environ, "COVRAG_API_KEY": "from-env"}
    # Port 0: the kernel picks a free port, and uvicorn's readiness line names it.
    command = [sys.executable, "-m", "covrag.cli", "serve", "--port", "0"]
    command += ["--no-preload", "--coverage", "gold"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        url = _wait_for_listening(process)
        health = httpx.get(f"{url}/healthz", timeout=10)
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


@pytest.mark.parametrize("port", ["99999", "-1", "eighty"])
def test_serve_refuses_a_port_out_of_range_up_front(port: str, capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit) as exit_info:
        main(["serve", "--port", port, "--no-preload"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--port" in err and "0-65535" in err


def test_serving_from_python_refuses_a_port_out_of_range() -> None:
    from covrag.errors import ConfigError
    from covrag.server import ServerConfig
    from covrag.server.run import serve, serve_in_background

    config = ServerConfig(preload=False, default_coverage="gold")
    with pytest.raises(ConfigError, match="0-65535"):
        serve(config, port=99999)
    with pytest.raises(ConfigError, match="0-65535"), serve_in_background(config, port=-1):
        pass


def _serve_exit(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # A server that starts instead of refusing would run until the timeout fails the test.
    command = [sys.executable, "-m", "covrag.cli", "serve", "--port", str(_free_port())]
    command += ["--no-preload", "--coverage", "gold", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)


def test_serve_refuses_an_empty_api_key() -> None:
    env = {k: v for k, v in os.environ.items() if k != "COVRAG_API_KEY"}
    for args, extra, fragment in (
        (["--api-key", ""], {}, "--api-key is empty"),
        (["--api-key", "  "], {}, "--api-key is empty"),
        ([], {"COVRAG_API_KEY": ""}, "$COVRAG_API_KEY is set but empty"),
    ):
        result = _serve_exit(args, {**env, **extra})
        assert result.returncode == 2, (args, result.stderr)
        assert fragment in " ".join(result.stderr.split()), result.stderr
