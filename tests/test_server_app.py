"""The HTTP service, spoken to over HTTP: a real uvicorn on loopback, httpx as the client."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import covrag.server.app as app_module  # noqa: E402
from covrag.pipeline import LABEL_FREE_SELECTOR  # noqa: E402
from covrag.server import ServerConfig  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402
from covrag.server.service import run_job  # noqa: E402

pytestmark = pytest.mark.model

KEY = "test-key-123"
AUTH = {"Authorization": f"Bearer {KEY}"}
LIMIT = 20_000

PASSAGES = [
    {"id": "p1", "text": "Cars pollute the air in city centres.", "covers": ["a1"]},
    {"id": "p2", "text": "Banning cars hurts small shops downtown.", "covers": ["a2"]},
    {
        "id": "p3",
        "text": "Traffic fumes cause asthma and hurt local trade.",
        "covers": ["a1", "a2"],
    },
    {"id": "p4", "text": "Cycling lanes make commuting healthier.", "covers": []},
]
ASPECTS = [
    {"id": "a1", "text": "air pollution from cars"},
    {"id": "a2", "text": "economic harm to shops"},
]


def body(**overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "query": "Should cities ban cars?",
        "passages": PASSAGES,
        "aspects": ASPECTS,
    }
    request.update(overrides)
    return request


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("served")
    folder = root / "reports"
    folder.mkdir()
    (folder / "run-1.html").write_text("<!doctype html><title>run 1</title><p>heatmap</p>")
    (folder / "notes.txt").write_text("not a report")
    (root / "secret.html").write_text("<p>outside the reports folder</p>")
    (folder / "escape.html").symlink_to(root / "secret.html")
    return folder


@pytest.fixture(scope="module")
def client(reports: Path) -> Iterator[Any]:
    config = ServerConfig(
        api_key=KEY,
        max_body_bytes=LIMIT,
        default_coverage="embedding",
        reports_dir=reports,
        timeout_s=60,
    )
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=60) as http:
        yield http


def test_select_greedy_gold_trace_and_matrix(client: Any) -> None:
    response = client.post(
        "/v1/select", json=body(coverage="gold", relevance="order", k=2), headers=AUTH
    )
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["passage_ids"] == ["p3", "p1"]  # p3 covers both aspects, then ties by order
    assert data["trace"][0] == {
        "passage_id": "p3",
        "score": 2.0,
        "newly_covered": ["a1", "a2"],
        "tokens": data["trace"][0]["tokens"],
    }
    assert data["trace"][1]["newly_covered"] == []
    assert data["covered"] == ["a1", "a2"] and data["uncovered"] == []
    assert data["budget"] == "k=2" and data["selector"] == "expected-coverage"
    matrix = data["coverage"]
    assert matrix["passage_ids"] == ["p1", "p2", "p3", "p4"]
    assert matrix["aspect_ids"] == ["a1", "a2"]
    assert matrix["probs"] == [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    assert matrix["source"] == "gold" and matrix["threshold"] == 0.5


def test_select_embedding_coverage_respects_token_budget(client: Any) -> None:
    request = body(coverage="embedding(threshold=0.3)", tokens=25, selector="greedy-coverage")
    response = client.post("/v1/select", json=request, headers=AUTH)
    assert response.status_code == 200, response.text
    data = response.json()
    assert 0 < data["tokens_used"] <= 25
    assert data["tokens_used"] == sum(step["tokens"] for step in data["trace"])
    assert data["budget"] == "tokens=25"
    matrix = data["coverage"]
    assert matrix["source"] == "embedding(threshold=0.3)" and matrix["pairs_scored"] == 8
    probs = matrix["probs"]
    assert len(probs) == 4 and all(len(row) == 2 and all(0 <= p <= 1 for p in row) for row in probs)
    # The trace agrees with the matrix: each newly covered aspect is above the threshold.
    row = {pid: i for i, pid in enumerate(matrix["passage_ids"])}
    col = {aid: j for j, aid in enumerate(matrix["aspect_ids"])}
    for step in data["trace"]:
        for aspect in step["newly_covered"]:
            assert probs[row[step["passage_id"]]][col[aspect]] >= 0.3


def test_aspects_may_bring_answer_sketches_that_the_estimator_also_reads(client: Any) -> None:
    plain = client.post("/v1/select", json=body(coverage="embedding(threshold=0.3)"), headers=AUTH)
    aspects = [dict(ASPECTS[0]), {**ASPECTS[1], "answers": ["Banning cars hurts small shops."]}]
    request = body(aspects=aspects, coverage="embedding(threshold=0.3)")
    sketched = client.post("/v1/select", json=request, headers=AUTH)
    assert plain.status_code == sketched.status_code == 200, sketched.text
    before, after = plain.json()["coverage"], sketched.json()["coverage"]
    assert after["pairs_scored"] == 12  # 4 passages x (2 aspects + 1 sketch)
    assert [row[0] for row in after["probs"]] == [row[0] for row in before["probs"]]
    shops = [row[1] for row in after["probs"]]
    unsketched = [row[1] for row in before["probs"]]
    assert shops[1] > 0.9 and all(a >= b for a, b in zip(shops, unsketched, strict=True))


def test_select_mmr_without_aspects_and_without_matrix(client: Any) -> None:
    request = body(aspects=[], selector="mmr(lam=0.5)", k=3)
    for passage in request["passages"]:
        assert "covers" in passage
    request["passages"] = [{k: v for k, v in p.items() if k != "covers"} for p in PASSAGES]
    response = client.post("/v1/select", json=request, headers=AUTH)
    assert response.status_code == 200, response.text
    data = response.json()
    assert len(data["passage_ids"]) == 3 and len(set(data["passage_ids"])) == 3
    assert data["coverage"] is None and data["selector"] == "mmr"
    hidden = client.post(
        "/v1/select", json=body(coverage="gold", include_matrix=False), headers=AUTH
    )
    assert hidden.status_code == 200 and hidden.json()["coverage"] is None


def test_select_relevance_score_orders_topk(client: Any) -> None:
    passages = [{"id": f"d{i}", "text": f"passage {i}", "score": float(i)} for i in range(5)]
    request = {"query": "q", "passages": passages, "selector": "topk", "relevance": "score", "k": 3}
    response = client.post("/v1/select", json=request, headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.json()["passage_ids"] == ["d4", "d3", "d2"]


def test_without_aspects_or_selector_the_label_free_default_selects(client: Any) -> None:
    plain = [{"id": p["id"], "text": p["text"]} for p in PASSAGES]
    request = {"query": "Should cities ban cars?", "passages": plain, "k": 2}
    response = client.post("/v1/select", json=request, headers=AUTH)
    assert response.status_code == 200, response.text
    answer = response.json()
    # facility location over the shipped same-point similarity: no aspects, no estimator
    assert answer["selector"] == LABEL_FREE_SELECTOR
    assert answer["aspects"] is None and answer["coverage"] is None
    assert len(answer["passage_ids"]) == 2
    named = client.post("/v1/select", json={**request, "selector": "topk"}, headers=AUTH).json()
    assert named["selector"] == "topk"  # a named selector is used as named


def test_without_aspects_a_coverage_selector_covers_the_pools_representatives(
    client: Any,
) -> None:
    plain = [{"id": p["id"], "text": p["text"]} for p in PASSAGES]
    request = {"query": "Should cities ban cars?", "passages": plain, "k": 2}
    request["selector"] = "expected-coverage"
    response = client.post("/v1/select", json=request, headers=AUTH)
    assert response.status_code == 200, response.text
    answer = response.json()
    found = answer["aspects"]
    assert found and [a["id"] for a in found] == [f"pool{i}" for i in range(1, len(found) + 1)]
    assert {a["text"] for a in found} <= {p["text"] for p in PASSAGES}
    assert answer["coverage"]["aspect_ids"] == [a["id"] for a in found]
    assert set(answer["covered"]) | set(answer["uncovered"]) == {a["id"] for a in found}
    assert len(answer["passage_ids"]) == 2
    given = client.post("/v1/select", json=body(k=2), headers=AUTH).json()
    assert given["aspects"] is None  # the request's own aspects are not echoed


@pytest.mark.parametrize(
    ("request_body", "field", "fragment"),
    [
        (body(passages=[PASSAGES[0], {"id": "p2"}]), "passages[1].text", "field required"),
        (body(k="ten"), "k", "valid integer"),
        (body(k=0), "k", "greater than or equal to 1"),
        (body(aspects=[{"id": "a1", "text": "x", "polarity": "maybe"}]), "aspects[0].polarity", ""),
        (body(aspects=[{"id": "a1", "text": "x", "answers": [" "]}]), "aspects[0].answers[0]", ""),
        (body(aspects=[{"id": "a1", "text": "x", "answers": "y"}]), "aspects[0].answers", "list"),
        (body(colour="red"), "colour", "extra inputs"),
        ({"passages": PASSAGES}, "query", "field required"),
        (body(selector="greedy-covrage"), "selector", "did you mean greedy-coverage"),
        (body(selector="mmr(lam=2)"), "selector", "lam must lie in [0, 1]"),
        (body(coverage="cross-encodr"), "coverage", "did you mean cross-encoder"),
        (
            body(aspects=[], coverage="gold", passages=[{"id": "x", "text": "y"}]),
            "aspects",
            "gold coverage reads",
        ),
        (body(passages=[PASSAGES[0], PASSAGES[0]]), "passages[1].id", "duplicate id 'p1'"),
        (body(aspects=[ASPECTS[0]]), "passages[1].covers", "unknown aspect id 'a2'"),
        (body(relevance="score"), "passages[0].score", "needs a score"),
        (
            body(coverage="gold", passages=[{"id": "x", "text": "y"}]),
            "coverage",
            "'covers' lists",
        ),
    ],
)
def test_select_errors_name_the_field(
    client: Any, request_body: dict[str, Any], field: str, fragment: str
) -> None:
    response = client.post("/v1/select", json=request_body, headers=AUTH)
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field
    assert error["detail"].startswith(f"{field}: ")
    assert fragment in error["detail"]


def test_malformed_json_unknown_route_and_wrong_method(client: Any) -> None:
    response = client.post(
        "/v1/select",
        content=b'{"query": "x", "passages": [',
        headers={**AUTH, "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["field"] == "body" and "invalid JSON" in response.json()["detail"]
    undecodable = client.post(
        "/v1/select", content=b"\x1c\xff", headers={**AUTH, "Content-Type": "application/json"}
    )
    assert undecodable.status_code == 400 and undecodable.json()["field"] == "body"
    missing = client.get("/v1/nothing-here", headers=AUTH)
    assert missing.status_code == 404 and missing.json()["detail"] == "Not Found"
    wrong = client.get("/v1/select", headers=AUTH)
    assert wrong.status_code == 405 and "POST" in wrong.headers["allow"]


def test_auth(client: Any) -> None:
    assert client.get("/healthz").status_code == 200  # open to load balancers
    assert client.get("/openapi.json").status_code == 200
    for headers in (
        {},
        {"Authorization": "Bearer nope"},
        {"X-API-Key": "nope"},
        {"Authorization": KEY},
    ):
        response = client.post("/v1/select", json=body(coverage="gold"), headers=headers)
        assert response.status_code == 401, headers
        assert response.json()["field"] == "Authorization"
        assert response.headers["www-authenticate"] == "Bearer"
        assert client.get("/reports/run-1.html", headers=headers).status_code == 401
    for headers in (AUTH, {"X-API-Key": KEY}, {"authorization": f"bearer {KEY}"}):
        response = client.post("/v1/select", json=body(coverage="gold"), headers=headers)
        assert response.status_code == 200, headers
    schema = client.get("/openapi.json").json()
    assert set(schema["components"]["securitySchemes"]) == {"bearer", "apiKey"}
    assert schema["paths"]["/v1/select"]["post"]["security"] == [{"bearer": []}, {"apiKey": []}]
    assert "security" not in schema["paths"]["/healthz"]["get"]


def test_body_size_limit(client: Any) -> None:
    big = body(coverage="gold", query="x" * (LIMIT + 10))
    response = client.post("/v1/select", json=big, headers=AUTH)
    assert response.status_code == 413
    assert response.json()["field"] == "body" and str(LIMIT) in response.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: the guard counts streamed bytes
        yield b'{"query": "'
        for _ in range(30):
            yield b"y" * 1000
        yield b'", "passages": []}'

    # The rest of a refused body (up to the limit again) is read and dropped before the 413
    # goes out, so the client reads the answer rather than a connection reset.
    streamed = client.post(
        "/v1/select", content=chunks(), headers={**AUTH, "Content-Type": "application/json"}
    )
    assert streamed.status_code == 413

    def flood() -> Iterator[bytes]:  # far over the limit: cut, never read in full
        for _ in range(200):
            yield b"z" * 1000

    try:
        flooded = client.post(
            "/v1/select", content=flood(), headers={**AUTH, "Content-Type": "application/json"}
        )
    except (httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError):
        pass  # cut after the limit twice over: the client may see the reset
    else:
        assert flooded.status_code == 413
    small = client.post("/v1/select", json=body(coverage="gold", k=1), headers=AUTH)
    assert small.status_code == 200


def test_healthz_lists_what_the_server_offers(client: Any) -> None:
    data = client.get("/healthz").json()
    assert data["status"] == "ok"
    assert "greedy-coverage" in data["selectors"] and "embedding" in data["coverage_estimators"]


def test_readyz_says_the_models_are_loaded_and_which_process_answered(client: Any) -> None:
    # open without the key, like /healthz; the server runs in this process (preloaded)
    assert client.get("/readyz").json() == {
        "status": "ready",
        "models": "loaded",
        "pid": os.getpid(),
    }


def test_reports_are_served_without_escaping_the_folder(client: Any) -> None:
    listing = client.get("/reports", headers=AUTH)
    assert listing.status_code == 200 and listing.json() == {"reports": ["run-1.html"]}
    report = client.get("/reports/run-1.html", headers=AUTH)
    assert report.status_code == 200 and "heatmap" in report.text
    assert report.headers["content-type"].startswith("text/html")
    assert client.get("/reports/missing.html", headers=AUTH).status_code == 404
    assert client.get("/reports/escape.html", headers=AUTH).status_code == 404  # symlink out
    assert client.get("/reports/notes.txt", headers=AUTH).status_code == 422
    for path in (
        "/reports/..%2Fsecret.html",
        "/reports/%2E%2E%2Fsecret.html",
        "/reports/..%5Csecret.html",
        "/reports/.hidden.html",
    ):
        response = client.get(path, headers=AUTH)
        assert response.status_code in (404, 422), path
        assert "outside" not in response.text
    raw = httpx.get(str(client.base_url) + "/reports/../../secret.html", headers=AUTH)
    assert "outside" not in raw.text


def test_reports_without_a_folder_are_404() -> None:
    config = ServerConfig(preload=False, default_coverage="gold")
    with serve_in_background(config) as url:
        response = httpx.get(f"{url}/reports/run-1.html")
        assert response.status_code == 404 and "--reports-dir" in response.json()["detail"]


def test_timeout_answers_504_and_the_loop_stays_free(monkeypatch: pytest.MonkeyPatch) -> None:
    config = ServerConfig(default_coverage="gold", timeout_s=0.05, preload=False)
    started, release = threading.Event(), threading.Event()

    def held(*args: Any) -> Any:
        # The real selection, held in its pool thread until the test lets it go: the request
        # outlives the timeout by construction, not by being slow enough.
        started.set()
        assert release.wait(120), "the test never released the selection"
        return run_job(*args)

    monkeypatch.setattr(app_module, "run_job", held)
    with serve_in_background(config) as url:
        results: dict[str, Any] = {}

        def select() -> None:
            results["select"] = httpx.post(f"{url}/v1/select", json=body(), timeout=60)

        thread = threading.Thread(target=select)
        thread.start()
        try:
            assert started.wait(60), "the selection never reached the thread pool"
            health = httpx.get(f"{url}/healthz", timeout=10)
            thread.join(60)
            answered_while_held = not thread.is_alive() and not release.is_set()
        finally:
            release.set()
            thread.join(60)
    # The loop stayed free: it answered /healthz and fired the 0.05 s timeout while the
    # selection was still running in the thread pool.
    assert health.status_code == 200
    assert answered_while_held
    response = results["select"]
    assert response.status_code == 504
    assert "0.05 s timeout" in response.json()["detail"]
