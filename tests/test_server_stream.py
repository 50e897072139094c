"""``/v1/answer`` with ``"stream": true``: server-sent events in order, the answer last and equal
to the plain route's, an error event past the deadline, and a client that leaves mid-stream
stopping the LLM and freeing the LLM gate.

A real uvicorn on loopback, read by a real HTTP client (httpx, streaming); the LLM is the slow
scripted one of ``test_server_bounded`` (a word at a time, checking the deadline between words
and reporting each word as a streaming backend reports its tokens); the coverage models are
real.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from covrag.server import ServerConfig  # noqa: E402
from covrag.server import gate as gate_module  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402
from covrag.server.service import LLM_GATE, MODEL_GATE  # noqa: E402
from llm_support import SlowScriptedLLM  # noqa: E402
from test_server_bounded import ANSWER, ENDLESS_REPLY, GOOD_REPLY  # noqa: E402

pytestmark = pytest.mark.model

STREAM = {**ANSWER, "stream": True}


def events(response: Any) -> Iterator[tuple[str, Any]]:
    """``(event, data)`` of each server-sent event of a streamed ``response``, as they come."""
    name, data = "message", []
    for line in response.iter_lines():
        if not line:
            if data:
                yield name, json.loads("\n".join(data))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[len("event:") :].strip()
        elif line.startswith("data:"):
            data.append(line[len("data:") :].strip())


def untimed(value: Any) -> Any:
    """``value`` without its ``seconds`` fields (wall-clock times differ between two runs)."""
    if isinstance(value, dict):
        return {k: untimed(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [untimed(v) for v in value]
    return value


def test_the_stream_reports_the_stages_then_the_tokens_then_the_plain_answer() -> None:
    llm = SlowScriptedLLM([GOOD_REPLY, GOOD_REPLY], seconds_per_word=0.01)
    body = {**STREAM, "aspects": [{"id": "a1", "text": "Do uniforms reduce bullying?"}]}
    config = ServerConfig(llm_timeout_s=60.0, preload=False)
    with (
        serve_in_background(config, llm=llm) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        with http.stream("POST", "/v1/answer", json=body) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            seen = list(events(response))
        plain = http.post("/v1/answer", json={**body, "stream": False})
        assert plain.status_code == 200, plain.text

    names = [name for name, _ in seen]
    tokens = [data for name, data in seen if name == "token"]
    assert names == ["planned", "retrieved", "selected", *["token"] * len(tokens), "answer"]
    planned, retrieved, selected = (data for _, data in seen[:3])
    assert planned == {
        "aspects": [{"id": "a1", "text": "Do uniforms reduce bullying?", "polarity": "neutral"}]
    }
    assert retrieved == {"passage_ids": ["p1", "p2"], "queries": []}
    assert selected == {"passage_ids": ["p1", "p2"], "refusal": ""}
    # the writer's reply, a word at a time, as the LLM wrote it
    assert "".join(t["text"] for t in tokens) == GOOD_REPLY
    assert {t["step"] for t in tokens} == {"write"} and len(tokens) == len(GOOD_REPLY.split())
    answer = seen[-1][1]
    assert answer["sentences"][0]["passage_ids"] == ["p1"]
    assert untimed(answer) == untimed(plain.json())


def test_a_streamed_answer_past_its_deadline_ends_with_the_plain_routes_504(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No backstop from the event loop: the 504 can only come from the LLM stopping itself.
    monkeypatch.setattr(gate_module, "BACKSTOP_S", 600.0)
    llm = SlowScriptedLLM([ENDLESS_REPLY, ENDLESS_REPLY], seconds_per_word=0.01)
    config = ServerConfig(llm_timeout_s=2.0, preload=False)
    with (
        serve_in_background(config, llm=llm) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        plain = http.post("/v1/answer", json=ANSWER)
        assert plain.status_code == 504, plain.text
        started = time.monotonic()
        with http.stream("POST", "/v1/answer", json=STREAM) as response:
            assert response.status_code == 200
            seen = list(events(response))
        took = time.monotonic() - started
        assert not LLM_GATE.busy() and not MODEL_GATE.busy()

    names = [name for name, _ in seen]
    assert names[:3] == ["planned", "retrieved", "selected"] and names[3] == "token"
    assert names[-1] == "error" and "answer" not in names
    error = seen[-1][1]
    assert error == {"status": 504, **plain.json()}
    assert "2 s timeout" in error["detail"]
    assert len(llm.stopped_after) == 2 and took < 4.0


def test_a_client_that_leaves_mid_stream_stops_the_llm_within_a_second() -> None:
    llm = SlowScriptedLLM([ENDLESS_REPLY, GOOD_REPLY], seconds_per_word=0.01)
    config = ServerConfig(llm_timeout_s=60.0, preload=False)
    with serve_in_background(config, llm=llm) as url:
        with (
            httpx.Client(base_url=url, timeout=60) as http,
            http.stream("POST", "/v1/answer", json=STREAM) as response,
        ):
            for name, _ in events(response):
                if name == "token":
                    break  # the client reads one token, then closes the connection
        gone = time.monotonic()
        while not llm.stopped_after and time.monotonic() < gone + 10:
            time.sleep(0.01)
        stopped = time.monotonic()
        assert llm.stopped_after, "the LLM went on writing for the client that left"
        assert stopped - gone < 1.0 and llm.words < 500
        deadline = time.monotonic() + 5
        while LLM_GATE.busy() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not LLM_GATE.busy()
        with httpx.Client(base_url=url, timeout=60) as http:
            after = http.post("/v1/answer", json=STREAM)
        assert after.status_code == 200, after.text
        assert "event: answer" in after.text


def test_a_streamed_request_refused_before_any_work_is_a_plain_json_error() -> None:
    llm = SlowScriptedLLM([])  # no replies: a request that reaches it fails the test
    config = ServerConfig(llm_timeout_s=60.0, preload=False)
    twice = {**STREAM, "passages": [ANSWER["passages"][0]] * 2}
    with (
        serve_in_background(config, llm=llm) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        streamed = http.post("/v1/answer", json=twice)
        plain = http.post("/v1/answer", json={**twice, "stream": False})
    assert streamed.status_code == plain.status_code == 422, streamed.text
    assert streamed.headers["content-type"] == "application/json"
    assert streamed.json() == plain.json() and streamed.json()["field"] == "passages[1].id"
    assert llm.requests == []
