"""One request cannot block the service: deadlines inside the model work, a fast 429 when the
model is busy, a cap on pairs per request, and a clear refusal of a port in use.

A real uvicorn on loopback and the shipped cross-encoder; no sleeps. Where a test must know that
a request is inside the model work it watches the deadline checks (:func:`watch_checks`).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from covrag.deadline import Deadline, watch_checks  # noqa: E402
from covrag.errors import ConfigError  # noqa: E402
from covrag.server import ServerConfig  # noqa: E402
from covrag.server import gate as gate_module  # noqa: E402
from covrag.server.run import probe_request, serve, serve_in_background  # noqa: E402
from covrag.server.service import MODEL_GATE  # noqa: E402

pytestmark = pytest.mark.model


def request(n_passages: int, n_aspects: int, **overrides: Any) -> dict[str, Any]:
    """A cross-encoder request over texts no other test scored (the pair cache cannot answer)."""
    return probe_request(n_passages, n_aspects, selector="greedy-coverage", **overrides)


@pytest.fixture(scope="module")
def short_deadline() -> Iterator[Any]:
    """A server whose requests have one second, and no cap on pairs in the way."""
    config = ServerConfig(default_coverage="cross-encoder", timeout_s=1.0, max_pairs=1_000_000)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=120) as http:
        yield http


def test_a_timed_out_request_frees_the_model_for_the_next(
    short_deadline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No backstop from the event loop: a 504 can only come from the model work stopping itself.
    monkeypatch.setattr(gate_module, "BACKSTOP_S", 600.0)
    heavy = short_deadline.post("/v1/select", json=request(300, 40))
    assert heavy.status_code == 504, heavy.text
    assert "1 s timeout" in heavy.json()["detail"]
    assert not MODEL_GATE.busy()  # the lock was given back before the 504 was sent
    small = short_deadline.post("/v1/select", json=request(2, 1))
    assert small.status_code == 200, small.text
    assert small.json()["coverage"]["pairs_scored"] == 2


def test_the_label_free_default_embeds_under_the_deadline_and_the_model_lock(
    short_deadline: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No aspects, no selector, no coverage: the same-point model embeds the pool in the estimate
    # step (selection itself runs unlocked and only computes). 2,000 fresh passages take far
    # longer than the 1 s timeout on any CPU here.
    monkeypatch.setattr(gate_module, "BACKSTOP_S", 600.0)
    held: list[bool] = []
    body = request(2000, 0)
    del body["aspects"], body["coverage"], body["selector"]
    with watch_checks(lambda _: held.append(MODEL_GATE.busy())):
        heavy = short_deadline.post("/v1/select", json=body)
    assert heavy.status_code == 504, heavy.text
    assert held and all(held)  # every batch boundary was inside the model lock
    assert not MODEL_GATE.busy()
    small = request(3, 0)
    del small["aspects"], small["coverage"], small["selector"]
    answer = short_deadline.post("/v1/select", json=small)
    assert answer.status_code == 200, answer.text
    assert "same-point" in answer.json()["selector"]


@pytest.fixture(scope="module")
def no_wait() -> Iterator[Any]:
    """A server where a request does not wait for a busy model at all."""
    config = ServerConfig(default_coverage="cross-encoder", timeout_s=60, model_wait_s=0.0)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=120) as http:
        yield http


def test_a_busy_model_is_a_fast_429_with_retry_after(no_wait: Any) -> None:
    inside, release = threading.Event(), threading.Event()

    def hold_first(_: Deadline) -> None:  # keep the first request inside the model work
        if not inside.is_set():
            inside.set()
            release.wait(60)

    responses: list[Any] = []
    with watch_checks(hold_first):
        url = str(no_wait.base_url).rstrip("/")
        worker = threading.Thread(
            target=lambda: responses.append(
                httpx.post(f"{url}/v1/select", json=request(20, 4), timeout=120)
            )
        )
        worker.start()
        try:
            assert inside.wait(60), "the first request never reached the model"
            busy = no_wait.post("/v1/select", json=request(2, 1))
        finally:
            release.set()
            worker.join(120)
    assert busy.status_code == 429, busy.text
    assert "busy" in busy.json()["detail"]
    assert 1 <= int(busy.headers["Retry-After"]) <= 60
    assert responses and responses[0].status_code == 200, responses
    assert no_wait.post("/v1/select", json=request(2, 1)).status_code == 200


@pytest.fixture(scope="module")
def capped() -> Iterator[Any]:
    config = ServerConfig(default_coverage="cross-encoder", max_pairs=50, preload=False)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=120) as http:
        yield http


def test_pairs_over_the_cap_are_refused_before_any_model_work(capped: Any) -> None:
    over = capped.post("/v1/select", json=request(10, 6))
    assert over.status_code == 422, over.text
    assert over.json()["field"] == "passages"
    detail = over.json()["detail"]
    assert "10 passages x 6 aspects = 60 pairs" in detail and "limit of 50" in detail
    assert "--max-pairs" in detail

    sketched = request(10, 4)
    sketched["aspects"][0]["answers"] = ["Yes, shops lose trade.", "No, shops gain."]
    over = capped.post("/v1/select", json=sketched)
    assert over.status_code == 422, over.text
    assert "6 aspects and answer sketches = 60 pairs" in over.json()["detail"]

    at_cap = capped.post("/v1/select", json=request(10, 5))
    assert at_cap.status_code == 200, at_cap.text
    gold = request(10, 6, coverage="gold")  # gold scores no pairs: the cap does not apply
    for passage in gold["passages"]:
        passage["covers"] = ["a0"]
    assert capped.post("/v1/select", json=gold).status_code == 200


def test_pool_aspects_count_against_the_cap() -> None:
    config = ServerConfig(default_coverage="cross-encoder", max_pairs=5, preload=False)
    with serve_in_background(config) as url:
        body = request(6, 0)
        del body["aspects"]
        response = httpx.post(f"{url}/v1/select", json=body, timeout=120)
    assert response.status_code == 422, response.text
    assert "6 passages x" in response.json()["detail"]
    assert not MODEL_GATE.busy()


def test_a_client_that_goes_away_gives_the_model_back(short_wait_long_deadline: str) -> None:
    inside = threading.Event()
    payload = json.dumps(request(300, 40)).encode()
    host, port = short_wait_long_deadline.removeprefix("http://").split(":")
    head = (
        f"POST /v1/select HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    with watch_checks(lambda _: inside.set()):
        with socket.create_connection((host, int(port))) as client:
            client.sendall(head + payload)
            assert inside.wait(60), "the request never reached the model"
        gone = time.monotonic()  # 12,000 pairs: tens of seconds of scoring left
        while MODEL_GATE.busy() and time.monotonic() < gone + 30:
            time.sleep(0.01)
    assert not MODEL_GATE.busy()
    # far below the tens of seconds the scoring had left (2 s measured at a load average of 9)
    assert time.monotonic() - gone < 5.0
    small = httpx.post(f"{short_wait_long_deadline}/v1/select", json=request(2, 1), timeout=60)
    assert small.status_code == 200, small.text


@pytest.fixture(scope="module")
def short_wait_long_deadline() -> Iterator[str]:
    config = ServerConfig(default_coverage="cross-encoder", timeout_s=120, max_pairs=1_000_000)
    with serve_in_background(config) as url:
        yield url


def test_server_limits_are_validated() -> None:
    with pytest.raises(ConfigError, match="max_pairs"):
        ServerConfig(max_pairs=0)
    with pytest.raises(ConfigError, match="model_wait_s"):
        ServerConfig(model_wait_s=-1.0)


@pytest.fixture()
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_serve_on_a_port_in_use_is_one_line_and_exit_2(taken_port: int) -> None:
    command = [sys.executable, "-m", "covrag.cli", "serve", "--port", str(taken_port)]
    command += ["--no-preload", "--coverage", "gold"]
    result = subprocess.run(
        command, env=dict(os.environ), capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"127.0.0.1:{taken_port}" in lines[0] and "already in use" in lines[0]
    assert "covrag serve on" not in result.stdout


def test_serving_from_python_on_a_port_in_use_raises(taken_port: int) -> None:
    config = ServerConfig(preload=False, default_coverage="gold")
    with pytest.raises(ConfigError, match=f"127.0.0.1:{taken_port}: the address is already in use"):
        serve(config, port=taken_port)
