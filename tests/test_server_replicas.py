"""Replicas: ``covrag serve`` with ``$COVRAG_SERVE_PROCESSES=2``, a real supervisor and two real
server processes on one loopback port, spoken to over HTTP, against the single-process answer."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from covrag.cli import main  # noqa: E402
from covrag.errors import ConfigError  # noqa: E402
from covrag.server import ServerConfig  # noqa: E402
from covrag.server.replicas import config_from_json, config_json  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402

KEY = "replica-key"
AUTH = {"X-API-Key": KEY}
GOLD = {
    "query": "Should cities ban cars?",
    "passages": [
        {"id": "p1", "text": "Cars pollute the air in city centres.", "covers": ["a1"]},
        {"id": "p2", "text": "Banning cars hurts small shops downtown.", "covers": ["a2"]},
        {"id": "p3", "text": "Fumes cause asthma and hurt trade.", "covers": ["a1", "a2"]},
        {"id": "p4", "text": "Cycling lanes make commuting healthier.", "covers": []},
    ],
    "aspects": [
        {"id": "a1", "text": "air pollution from cars"},
        {"id": "a2", "text": "economic harm to shops"},
    ],
    "relevance": "order",
    "k": 2,
}


class Server:
    """``covrag serve`` in a child process; its output is read on a thread, line by line."""

    def __init__(self, args: list[str], processes: int) -> None:
        env = {**os.environ, "COVRAG_SERVE_PROCESSES": str(processes), "COVRAG_API_KEY": KEY}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # the server makes its own folder
        command = [sys.executable, "-m", "covrag.cli", "serve", "--port", "0", *args]
        self.process = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.lines: list[str] = []
        self.started = threading.Semaphore(0)
        self.url = ""
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            if found := re.search(r"covrag serve on (http://127\.0\.0\.1:\d+)", line):
                self.url = found.group(1)
            if "Application startup complete" in line:
                self.started.release()

    def wait_started(self, processes: int, timeout: float = 240) -> str:
        for _ in range(processes):
            if not self.started.acquire(timeout=timeout):
                self.stop()
                raise AssertionError("covrag serve did not start:\n" + "".join(self.lines))
        return self.url

    def served_by(self) -> dict[str, int]:
        """Request id -> the pid that served it, from the JSON access log."""
        out = {}
        for line in list(self.lines):
            if line.startswith("{"):
                record = json.loads(line)
                out[record["request_id"]] = record["pid"]
        return out

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        finally:
            if self.process.poll() is None:
                self.process.kill()


@pytest.fixture
def two_processes() -> Iterator[Server]:
    server = Server(["--no-preload", "--coverage", "gold", "--selector", "greedy-coverage"], 2)
    try:
        server.wait_started(2)
        yield server
    finally:
        server.stop()


def _without_timings(answer: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in answer.items() if k != "timings"}
    out["coverage"] = {k: v for k, v in out["coverage"].items() if k != "seconds"}
    return out


def _select_until_two_pids(server: Server, body: dict[str, Any]) -> list[tuple[int, Any]]:
    """POST /v1/select on fresh connections, 8 at a time, until two processes have answered
    (the kernel hands each connection to one of them); (pid, answer) of each request."""
    answers: list[Any] = []

    def one(_: int) -> Any:
        with httpx.Client(base_url=server.url, headers=AUTH, timeout=60) as client:
            return client.post("/v1/select", json=body)

    with ThreadPoolExecutor(8) as pool:
        for _ in range(25):
            answers += pool.map(one, range(8))
            served = server.served_by()
            pids = {served.get(a.headers["X-Request-ID"]) for a in answers}
            if len(pids - {None}) >= 2:
                break
    wanted = {a.headers["X-Request-ID"] for a in answers}
    served = server.served_by()
    for _ in range(300):  # a response can arrive before its access-log line is read
        if wanted <= served.keys():
            break
        time.sleep(0.1)
        served = server.served_by()
    missing = wanted - served.keys()
    assert not missing, f"{len(missing)} requests never reached the access log"
    return [(served[a.headers["X-Request-ID"]], a) for a in answers]


def test_two_processes_answer_as_one_does_and_metrics_sum_them(two_processes: Server) -> None:
    server = two_processes
    answers = _select_until_two_pids(server, GOLD)
    pids = {pid for pid, _ in answers}
    assert len(pids) == 2, f"one process answered all {len(answers)} requests"
    assert server.process.pid not in pids  # the supervisor serves nothing itself

    config = ServerConfig(
        preload=False, default_coverage="gold", default_selector="greedy-coverage"
    )
    with serve_in_background(config) as url:
        alone = httpx.post(f"{url}/v1/select", json=GOLD, timeout=60).json()
    assert alone["passage_ids"] == ["p3", "p1"]
    for _, answer in answers:
        assert answer.status_code == 200
        assert _without_timings(answer.json()) == _without_timings(alone)

    # whichever process answers the scrape, the counts are both processes' together
    for _ in range(2):
        text = httpx.get(f"{server.url}/metrics", headers=AUTH, timeout=30).text
        count = re.search(
            r'covrag_http_requests_total\{method="POST",route="/v1/select",status="200"\} (\S+)',
            text,
        )
        assert count is not None and float(count.group(1)) == len(answers), text
        memory = dict(
            re.findall(r'covrag_replica_resident_memory_bytes\{pid="(\d+)"\} (\S+)', text)
        )
        assert {int(pid) for pid in memory} == pids
        assert all(float(rss) > 10_000_000 for rss in memory.values())
        assert "process_resident_memory_bytes" not in text  # one process's, left out

    ready = httpx.get(f"{server.url}/readyz", timeout=30).json()  # open, like /healthz
    assert ready["status"] == "ready" and ready["models"] == "on first request"
    assert ready["pid"] in pids
    assert server.stop() == 0


def test_config_travels_to_the_processes_as_json(tmp_path: Path) -> None:
    config = ServerConfig(
        api_key="k",
        selectors=("mmr(lam=0.3)", "topk"),
        reports_dir=tmp_path,
        processes=3,
        max_llm_passages=7,
        preload=False,
    )
    assert config_from_json(config_json(config)) == config
    assert config_from_json('{"timeout_s": 5}') == ServerConfig(timeout_s=5)
    with pytest.raises(ConfigError, match="max_pears"):
        config_from_json('{"max_pears": 5}')
    with pytest.raises(ConfigError, match="not JSON"):
        config_from_json("{")
    with pytest.raises(ConfigError, match="processes must be >= 1"):
        ServerConfig(processes=0)


@pytest.mark.parametrize("value", ["two", "0", "-1", "1.5"])
def test_serve_refuses_a_bad_process_count(
    value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COVRAG_SERVE_PROCESSES", value)
    assert main(["serve", "--port", "0", "--no-preload", "--coverage", "gold"]) == 2
    assert "$COVRAG_SERVE_PROCESSES must be a whole number >= 1" in capsys.readouterr().err


def test_replicas_refuse_an_unknown_selector_before_starting(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COVRAG_SERVE_PROCESSES", "2")
    code = main(["serve", "--port", "0", "--no-preload", "--selector", "greedy-covrage"])
    assert code == 2
    assert "did you mean greedy-coverage" in capsys.readouterr().err


@pytest.mark.slow
@pytest.mark.model
def test_two_processes_load_their_own_models_and_agree_with_one() -> None:
    """Each process preloads MiniLM (embedding coverage) before it answers."""
    # 8 requests at a time share each process's model: they wait for it rather than get a 429
    args = ["--coverage", "embedding", "--selector", "greedy-coverage", "--model-wait", "30"]
    server = Server(args, 2)
    try:
        server.wait_started(2)
        body = {k: v for k, v in GOLD.items() if k != "relevance"}
        answers = _select_until_two_pids(server, body)
        ready = httpx.get(f"{server.url}/readyz", timeout=30).json()
        assert ready["models"] == "loaded"
    finally:
        server.stop()
    assert len({pid for pid, _ in answers}) == 2
    config = ServerConfig(default_coverage="embedding", default_selector="greedy-coverage")
    with serve_in_background(config) as url:
        alone = httpx.post(f"{url}/v1/select", json=body, timeout=60).json()
    for _, answer in answers:
        assert answer.status_code == 200, answer.text
        got = answer.json()
        assert got["passage_ids"] == alone["passage_ids"]
        for row, expected in zip(got["coverage"]["probs"], alone["coverage"]["probs"], strict=True):
            assert row == pytest.approx(expected, abs=1e-5)
