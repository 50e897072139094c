"""``/v1/plan`` and ``/v1/answer`` cannot hold the service: a deadline checked between the LLM's
tokens (504, every lock given back), a client that goes away stopping its work, a bounded wait
for the LLM (429 with ``Retry-After``), and size caps checked before any model work (413 / 422).

A real uvicorn on loopback; the LLM is a slow scripted one (``SlowScriptedLLM``: it writes a
word at a time and checks the request's deadline between words, as the embedded model does
between tokens, which ``test_llm_local`` checks on the real model); the coverage models are
real.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
parser = pytest.importorskip("prometheus_client.parser")

from covrag.server import ServerConfig  # noqa: E402
from covrag.server import gate as gate_module  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402
from covrag.server.service import LLM_GATE, MODEL_GATE  # noqa: E402
from llm_support import SlowScriptedLLM  # noqa: E402

pytestmark = pytest.mark.model

PASSAGES = [
    {"id": "p1", "text": "School uniforms reduce bullying between pupils."},
    {"id": "p2", "text": "Uniforms cost parents a lot of money each year."},
]
ANSWER = {
    "question": "Should schools require uniforms?",
    "passages": PASSAGES,
    "writer": "extractive",
    "passes": 0,
}
#: A reply the extractive writer keeps: passage 1, cited.
GOOD_REPLY = "School uniforms reduce bullying between pupils [1]."
#: A reply that would take 100 s at 0.01 s a word.
ENDLESS_REPLY = " ".join(["word"] * 10_000)


def sample(text: str, name: str, **labels: str) -> float:
    """The value of one sample of the Prometheus exposition ``text`` (0 when absent)."""
    for family in parser.text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                return float(s.value)
    return 0.0


def test_an_answer_past_its_deadline_is_a_504_and_frees_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No backstop from the event loop: a 504 can only come from the LLM stopping itself.
    monkeypatch.setattr(gate_module, "BACKSTOP_S", 600.0)
    llm = SlowScriptedLLM([ENDLESS_REPLY, GOOD_REPLY], seconds_per_word=0.01)
    config = ServerConfig(llm_timeout_s=3.0)  # preloaded: the support check's model is warm
    with (
        serve_in_background(config, llm=llm) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        started = time.monotonic()
        slow = http.post("/v1/answer", json=ANSWER)
        took = time.monotonic() - started
        assert slow.status_code == 504, slow.text
        assert "3 s timeout" in slow.json()["detail"]
        # the LLM stopped at its first word past the deadline, within a second of it
        (stopped_after,) = llm.stopped_after
        assert 2.0 < stopped_after < 4.0 and took < 4.0
        assert llm.words < 1_000
        assert not LLM_GATE.busy() and not MODEL_GATE.busy()

        after = http.post("/v1/answer", json=ANSWER)
        assert after.status_code == 200, after.text
        assert after.json()["sentences"][0]["passage_ids"] == ["p1"]
        exposition = http.get("/metrics").text
    assert sample(exposition, "covrag_http_requests_total", route="/v1/answer", status="504") >= 1
    assert sample(exposition, "covrag_llm_tokens_total", kind="completion") >= 2


def test_a_client_that_goes_away_stops_the_llm_within_a_second() -> None:
    llm = SlowScriptedLLM([ENDLESS_REPLY, GOOD_REPLY], seconds_per_word=0.01)
    config = ServerConfig(llm_timeout_s=60.0, preload=False)
    with serve_in_background(config, llm=llm) as url:
        # the client gives up after 1 s and closes its connection
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/v1/answer", json=ANSWER, timeout=httpx.Timeout(10, read=1.0))
        gone = time.monotonic()
        while not llm.stopped_after and time.monotonic() < gone + 10:
            time.sleep(0.01)
        stopped = time.monotonic()
        assert llm.stopped_after, "the LLM went on writing for the client that left"
        assert stopped - gone < 1.0
        assert 1.0 <= llm.stopped_after[0] < 2.0 and llm.words < 200
        assert not LLM_GATE.busy()
        with httpx.Client(base_url=url, timeout=60) as http:
            assert http.post("/v1/answer", json=ANSWER).status_code == 200
            exposition = http.get("/metrics").text
    assert sample(exposition, "covrag_http_requests_total", route="/v1/answer", status="499") >= 1


@pytest.fixture()
def held() -> Iterator[tuple[Any, SlowScriptedLLM, threading.Event]]:
    """A server whose LLM holds its first reply until the test sets the event; requests wait
    0.2 s for the LLM."""
    release = threading.Event()
    llm = SlowScriptedLLM([GOOD_REPLY, GOOD_REPLY], seconds_per_word=0.01, hold=release)
    config = ServerConfig(llm_timeout_s=60.0, model_wait_s=0.2, preload=False)
    with (
        serve_in_background(config, llm=llm) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        try:
            yield http, llm, release
        finally:
            release.set()


def test_a_second_model_request_while_the_llm_is_busy_is_a_429_with_retry_after(
    held: tuple[Any, SlowScriptedLLM, threading.Event],
) -> None:
    http, llm, release = held
    results: list[Any] = []
    first = threading.Thread(target=lambda: results.append(http.post("/v1/answer", json=ANSWER)))
    first.start()
    try:
        assert llm.writing.wait(60), "the first request never reached the LLM"
        started = time.monotonic()
        busy_answer = http.post("/v1/answer", json=ANSWER)
        busy_plan = http.post("/v1/plan", json={"question": "Should schools require uniforms?"})
        waited = time.monotonic() - started
    finally:
        release.set()
        first.join(60)
    for busy in (busy_answer, busy_plan):
        assert busy.status_code == 429, busy.text
        assert "busy" in busy.json()["detail"]
        assert 1 <= int(busy.headers["Retry-After"]) <= 60  # until the holder's deadline
    assert waited < 5.0  # each waited its 0.2 s, not for the first request
    assert results and results[0].status_code == 200, results
    # the LLM is free again: the next request is served
    assert http.post("/v1/answer", json=ANSWER).status_code == 200
    assert len(llm.requests) == 2  # the refused requests never reached the LLM

    exposition = http.get("/metrics").text
    assert sample(exposition, "covrag_http_requests_total", route="/v1/plan", status="429") >= 1
    assert sample(exposition, "covrag_model_wait_seconds_count", lock="llm") >= 4
    assert sample(exposition, "covrag_model_waiting_requests", lock="llm") == 0


def test_a_request_waiting_for_the_llm_is_counted_in_the_queue_depth() -> None:
    release = threading.Event()
    llm = SlowScriptedLLM([GOOD_REPLY, GOOD_REPLY], seconds_per_word=0.01, hold=release)
    config = ServerConfig(llm_timeout_s=60.0, model_wait_s=30.0, preload=False)
    with (
        serve_in_background(config, llm=llm) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        results: list[Any] = []
        threads = [
            threading.Thread(target=lambda: results.append(http.post("/v1/answer", json=ANSWER)))
            for _ in range(2)
        ]
        try:
            threads[0].start()
            assert llm.writing.wait(60), "the first request never reached the LLM"
            threads[1].start()
            deadline = time.monotonic() + 30
            depth = 0.0
            while depth < 1 and time.monotonic() < deadline:
                text = http.get("/metrics").text
                depth = sample(text, "covrag_model_waiting_requests", lock="llm")
                time.sleep(0.05)
            assert depth == 1
        finally:
            release.set()
            for thread in threads:
                thread.join(60)
        assert [r.status_code for r in results] == [200, 200]
        text = http.get("/metrics").text
        assert sample(text, "covrag_model_waiting_requests", lock="llm") == 0


#: An answer request within the capped server's max_tokens.
SMALL = {**ANSWER, "max_tokens": 64}


@pytest.fixture(scope="module")
def capped() -> Iterator[tuple[Any, SlowScriptedLLM]]:
    llm = SlowScriptedLLM([])  # no replies: a request that reaches it fails the test
    config = ServerConfig(
        preload=False,
        max_question_chars=60,
        max_llm_passages=3,
        max_llm_tokens=40,
        max_completion_tokens=100,
        max_pairs=4,
    )
    with (
        serve_in_background(config, llm=llm) as url,
        httpx.Client(base_url=url, timeout=60) as http,
    ):
        yield http, llm


@pytest.mark.parametrize(
    ("route", "body", "status", "field", "option"),
    [
        ("/v1/plan", {"question": "Why? " * 20}, 422, "question", "max_question_chars"),
        (
            "/v1/answer",
            {**SMALL, "question": "Why? " * 20},
            422,
            "question",
            "max_question_chars",
        ),
        (
            "/v1/answer",
            {**SMALL, "passages": [{"id": f"p{i}", "text": "Short."} for i in range(4)]},
            422,
            "passages",
            "max_llm_passages",
        ),
        ("/v1/answer", {**SMALL, "max_tokens": 101}, 422, "max_tokens", "max_completion_tokens"),
        (
            "/v1/answer",
            {**SMALL, "passages": [{"id": "p1", "text": "Uniforms cost money. " * 12}]},
            413,
            "passages",
            "max_llm_tokens",
        ),
        (
            "/v1/answer",
            {**SMALL, "aspects": [{"id": f"a{j}", "text": "Cost?"} for j in range(3)]},
            422,
            "passages",
            "--max-pairs",
        ),
    ],
)
def test_llm_requests_over_a_cap_are_refused_before_any_model_work(
    capped: tuple[Any, SlowScriptedLLM],
    route: str,
    body: dict[str, Any],
    status: int,
    field: str,
    option: str,
) -> None:
    http, llm = capped
    response = http.post(route, json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert error["field"] == field
    assert "over this server's limit of" in error["detail"] and option in error["detail"]
    assert llm.requests == []
