"""What an operator sees: ``GET /metrics`` in the Prometheus text format, an ``X-Request-ID`` on
every response, and one JSON access-log line per request. A real uvicorn on loopback; the
exposition is read with ``prometheus_client``'s own parser."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
parser = pytest.importorskip("prometheus_client.parser")

from covrag.server import ServerConfig  # noqa: E402
from covrag.server.metrics import ACCESS_LOGGER  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402

KEY = "s3cret-key"
AUTH = {"X-API-Key": KEY}
SELECT = {
    "query": "Should cities ban cars?",
    "passages": [
        {"id": "p1", "text": "Bans cut air pollution.", "covers": ["a1"]},
        {"id": "p2", "text": "Shops lose trade.", "covers": ["a2"]},
    ],
    "aspects": [{"id": "a1", "text": "Air?"}, {"id": "a2", "text": "Trade?"}],
    "selector": "greedy-coverage",
    "coverage": "gold",
    "relevance": "order",
    "k": 1,
}


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    config = ServerConfig(preload=False, default_coverage="gold", api_key=KEY)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=60) as http:
        yield http


def families(text: str) -> dict[str, Any]:
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def requests_counted(http: Any, **labels: str) -> float:
    """``covrag_http_requests_total`` for ``labels``, read from ``/metrics``."""
    response = http.get("/metrics", headers=AUTH)
    assert response.status_code == 200, response.text
    family = families(response.text)["covrag_http_requests"]
    return sum(
        s.value
        for s in family.samples
        if s.name == "covrag_http_requests_total"
        and all(s.labels.get(k) == v for k, v in labels.items())
    )


def counted_soon(http: Any, expected: float, **labels: str) -> float:
    """:func:`requests_counted`, read again for up to 10 s until it reaches ``expected``: the
    server counts a request after its response is sent, so a client can ask before it has."""
    for _ in range(100):
        if (count := requests_counted(http, **labels)) >= expected:
            return count
        time.sleep(0.1)
    return count


def test_metrics_parse_and_count_each_request(client: Any) -> None:
    response = client.get("/metrics", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    found = families(response.text)
    assert found["covrag_http_requests"].type == "counter"
    for name, kind in [
        ("covrag_http_request_seconds", "histogram"),
        ("covrag_model_wait_seconds", "histogram"),
        ("covrag_model_waiting_requests", "gauge"),
        ("covrag_llm_tokens", "counter"),
        ("covrag_coverage_pairs_scored", "counter"),
    ]:
        assert found[name].type == kind, name

    ok = {"route": "/v1/select", "method": "POST", "status": "200"}
    before = requests_counted(client, **ok)
    assert client.post("/v1/select", json=SELECT, headers=AUTH).status_code == 200
    assert counted_soon(client, before + 1, **ok) == before + 1

    # a refusal by the guard counts too, under its route
    refused = {"route": "/v1/select", "status": "401"}
    before = requests_counted(client, **refused)
    assert client.post("/v1/select", json=SELECT).status_code == 401
    assert counted_soon(client, before + 1, **refused) == before + 1
    # a path no route serves is one label, whatever the path
    assert client.get("/no/such/path", headers=AUTH).status_code == 404
    assert counted_soon(client, 1, route="unmatched", status="404") >= 1
    text = client.get("/metrics", headers=AUTH).text
    assert "/no/such/path" not in text
    latency = families(text)["covrag_http_request_seconds"]
    counts = [
        s.value
        for s in latency.samples
        if s.name.endswith("_count") and s.labels["route"] == "/v1/select"
    ]
    assert counts and counts[0] >= 2


def test_metrics_need_the_api_key_when_the_server_has_one(client: Any) -> None:
    response = client.get("/metrics")
    assert response.status_code == 401
    assert client.get("/healthz").status_code == 200  # the probe stays open


def test_the_request_id_round_trips_and_is_in_the_log_line(
    client: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger=ACCESS_LOGGER):
        sent = client.post(
            "/v1/select", json=SELECT, headers={**AUTH, "X-Request-ID": "trace-42.a:b_c"}
        )
        new = client.get("/healthz", headers={"X-Request-ID": "not valid; id=" + "x" * 200})
        absent = client.get("/healthz")
        wanted = {"trace-42.a:b_c", new.headers["X-Request-ID"], absent.headers["X-Request-ID"]}
        for _ in range(100):  # the line is written after the response is sent
            lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == ACCESS_LOGGER]
            by_id = {line["request_id"]: line for line in lines}
            if wanted <= by_id.keys():
                break
            time.sleep(0.1)
    assert sent.headers["X-Request-ID"] == "trace-42.a:b_c"
    for response in (new, absent):  # an invalid or missing id is replaced by a new uuid4
        assert uuid.UUID(response.headers["X-Request-ID"]).version == 4
    assert new.headers["X-Request-ID"] != absent.headers["X-Request-ID"]

    line = by_id["trace-42.a:b_c"]
    assert line["route"] == "/v1/select" and line["method"] == "POST"
    assert line["status"] == 200 and 0 <= line["seconds"] < 60
    assert by_id[new.headers["X-Request-ID"]]["route"] == "/healthz"


def test_an_error_response_carries_the_request_id_too(client: Any) -> None:
    response = client.post("/v1/select", json={"query": ""}, headers={**AUTH, "X-Request-ID": "r1"})
    assert response.status_code == 422
    assert response.headers["X-Request-ID"] == "r1"
