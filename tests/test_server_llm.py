"""``POST /v1/plan`` and ``POST /v1/answer`` on a live uvicorn, with the real tiny model."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("xllamacpp")

from covrag.server import ServerConfig, create_app  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402

pytestmark = pytest.mark.model

TINY = "local(model='smollm2', n_threads=1)"
PASSAGES = [
    {"id": "p1", "text": "School uniforms reduce bullying between pupils."},
    {"id": "p2", "text": "Uniforms cost parents a lot of money each year."},
    {"id": "p3", "text": "Uniforms stop pupils who want to express their identity."},
]
ASPECTS = [
    {"id": "a1", "text": "Do uniforms reduce bullying?"},
    {"id": "a2", "text": "What do uniforms cost parents?"},
]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    config = ServerConfig(llm=TINY, preload=False, timeout_s=60, llm_timeout_s=120)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=120) as http:
        yield http


def test_llm_routes_exist_only_with_an_llm() -> None:
    assert "/v1/answer" not in create_app(ServerConfig(preload=False)).openapi()["paths"]
    paths = create_app(ServerConfig(preload=False, llm=TINY)).openapi()["paths"]
    assert {"/v1/plan", "/v1/answer", "/v1/select"} <= set(paths)
    assert "502" in paths["/v1/answer"]["post"]["responses"]


def test_answer_selects_writes_critiques_and_rewrites(client: Any) -> None:
    body = {
        "question": "Should schools require uniforms?",
        "passages": PASSAGES,
        "aspects": ASPECTS,
        "k": 2,
        "floor": 0,
        "passes": 1,
        "sentences": 2,
        "max_tokens": 48,
    }
    response = client.post("/v1/answer", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert len(data["passage_ids"]) == 2 and set(data["passage_ids"]) <= {"p1", "p2", "p3"}
    assert len(data["drafts"]) == 2 and len(data["critiques"]) == 1
    assert data["sentences"] == data["drafts"][-1]["sentences"]
    for draft in data["drafts"]:
        assert all(set(s["passage_ids"]) <= set(data["passage_ids"]) for s in draft["sentences"])
        assert all(not 1 <= c["number"] <= 2 for c in draft["invalid_citations"])
        assert draft["llm"]["calls"] + draft["llm"]["cached_calls"] == 1
    assert data["llm"]["prompt_tokens"] > 100
    assert data["critiques"][0]["verdict"].split(":")[0] in {"accepted", "unchanged", "rejected"}


def test_answer_never_pads_and_says_what_the_passages_do_not_answer(client: Any) -> None:
    """With the coverage floor (the default), passages that answer none of the aspects never
    enter the context: no model is asked, and the answer says the question is not answered."""
    body = {
        "question": "Should governments tax sugary drinks?",
        "passages": PASSAGES,
        "aspects": [{"id": "t", "text": "Do sugar taxes cut how much soda people drink?"}],
        "k": 2,
        "writer": "synthesis",
    }
    response = client.post("/v1/answer", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["passage_ids"] == [] and data["critiques"] == []
    assert data["llm"]["calls"] == 0
    (sentence,) = data["sentences"]
    assert sentence["passage_ids"] == [] and "sugar taxes" in sentence["text"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"passages": [PASSAGES[0], PASSAGES[0]]}, "passages[1].id"),
        ({"k": 1, "aspects": []}, "aspects"),
        ({"passes": 4}, "passes"),
        ({"passages": []}, "passages"),
        ({"feedback": "oracle-nuggets"}, "feedback"),
        ({"floor": 1.5}, "floor"),
        ({"gate": -2}, "gate"),
        ({"writer": "poet"}, "writer"),
        ({"surprise": 1}, "surprise"),
    ],
)
def test_answer_errors_name_the_field(client: Any, change: dict[str, Any], field: str) -> None:
    body = {"question": "Should schools require uniforms?", "passages": PASSAGES, **change}
    response = client.post("/v1/answer", json=body)
    assert response.status_code == 422
    assert response.json()["field"] == field


@pytest.mark.slow
def test_plan_returns_sub_questions_or_names_the_failing_step(client: Any) -> None:
    response = client.post(
        "/v1/plan",
        json={"question": "Should schools require uniforms?", "subquestions": 2, "answers": 2},
    )
    if response.status_code == 502:  # SmolLM2 failed a step's checks: the reply says which
        assert "the LLM failed" in response.json()["detail"]
    else:
        assert response.status_code == 200, response.text
        aspects = response.json()["aspects"]
        assert 1 <= len(aspects) <= 2 and all(a["text"].endswith("?") for a in aspects)
        # answer sketches (SmolLM2 may give none for an aspect, and the reply says so)
        unsketched = [a for a in aspects if not a["answers"]]
        assert len(response.json()["warnings"]) == len(unsketched)
        for aspect in aspects:
            assert len(aspect["answers"]) <= 2
            assert all(not t.endswith("?") and len(t.split()) <= 30 for t in aspect["answers"])
        # the plan's aspects go on to /v1/select as they are
        request = {"query": "Uniforms?", "passages": PASSAGES, "aspects": aspects, "k": 2}
        selected = client.post("/v1/select", json={**request, "coverage": "embedding"})
        assert selected.status_code == 200, selected.text
    bad = client.post("/v1/plan", json={"question": "x", "include": ["a"], "exclude": ["a"]})
    assert bad.status_code == 422 and bad.json()["field"] == "exclude"


def test_plan_reports_an_unreachable_llm_as_502() -> None:
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    spec = (
        f"openai(model='m', base_url='http://127.0.0.1:{port}/v1', api_key='k', "
        "max_retries=0, timeout=5)"
    )
    config = ServerConfig(llm=spec, preload=False, timeout_s=60, llm_timeout_s=60)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=60) as http:
        body = {"question": "Should schools require uniforms?", "subquestions": 2}
        response = http.post("/v1/plan", json={**body, "exclude": ["cost"]})
    assert response.status_code == 502
    detail = response.json()["detail"]
    assert detail.startswith("the LLM failed") and str(port) in detail
