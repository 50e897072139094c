"""``POST /v1/plan`` and ``POST /v1/answer`` on a live uvicorn, with the real tiny model, and
with a scripted chat-completions server on loopback where a reply must be exactly one thing (a
writer that copies passage n and cites n + 1, one that cites nothing)."""

from __future__ import annotations

import re
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("xllamacpp")

from covrag.pipeline.config import DEFAULT_FLOOR, DEFAULT_GATE  # noqa: E402
from covrag.server import ServerConfig, create_app  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402
from llm_support import chat_server  # noqa: E402

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
SUGAR = [{"id": "t", "text": "Do sugar taxes cut how much soda people drink?"}]


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    config = ServerConfig(llm=TINY, preload=False, timeout_s=60, llm_timeout_s=120)
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=120) as http:
        yield http


# The scripted writer's questions: each names the reply the chat server gives to a prompt
# holding it (a question per script, so the response cache never answers one with another's).
SHIFTED = "Should schools require uniforms, and why?"
UNCITED = "Are school uniforms a good idea?"
OFF_TOPIC = ["The weather is mild in spring.", "Trains in Spain leave on time."]


def _shifted(shown: list[tuple[str, str]]) -> str:
    """Sentence n copies passage n and cites the next passage (the last cites the first)."""
    return "\n".join(f"{text.rstrip('.')} [{int(n) % len(shown) + 1}]." for n, text in shown)


SCRIPTS: dict[str, Callable[[list[tuple[str, str]]], str]] = {
    SHIFTED: _shifted,
    UNCITED: lambda shown: "\n".join(OFF_TOPIC),
}


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[Any, list[dict[str, Any]]]]:
    """A server whose LLM is a scripted chat-completions server on loopback, and the requests
    that server received."""

    def reply(body: dict[str, Any]) -> str:
        prompt = body["messages"][-1]["content"]
        question = next(q for q in SCRIPTS if q in prompt)
        return SCRIPTS[question](re.findall(r"^\[(\d+)\] (.*)$", prompt, re.M))

    with chat_server(reply, model="writer") as (base_url, requests):
        spec = f"openai(model='writer', base_url='{base_url}', api_key='k', max_retries=0)"
        config = ServerConfig(llm=spec, preload=False, timeout_s=60, llm_timeout_s=120)
        with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=120) as http:
            yield http, requests


def _check_support(data: dict[str, Any]) -> None:
    """Every sentence the writer wrote carries its check; a supporting span lies in its
    passage, and a shown sentence that is supported cites the passage holding the span."""
    texts = {p["id"]: p["text"] for p in PASSAGES}
    for sentence in [*data["sentences"], *data["dropped"]]:
        check = sentence["check"]
        if sentence["framing"]:
            continue
        assert check is not None and check["verified"] in {"aligned", "judged", "unsupported"}
        if check["span"] is not None:
            start, end = check["span"]
            assert 0 <= start < end <= len(texts[check["passage_id"]])
    for sentence in data["sentences"]:
        check = sentence["check"]
        if check is not None and check["verified"] != "unsupported":
            assert check["passage_id"] in sentence["passage_ids"]
    assert all(s["check"]["verified"] == "unsupported" for s in data["dropped"])


def _check_aspect_coverage(data: dict[str, Any], aspects: list[dict[str, Any]]) -> None:
    """One row per wanted aspect; a covered-in-answer row names supported sentences citing a
    context passage that covers the aspect."""
    rows = data["aspect_coverage"]
    assert [r["aspect_id"] for r in rows] == [a["id"] for a in aspects]
    for row in rows:
        assert row["in_context"] == bool(row["context_passages"])
        assert set(row["context_passages"]) <= set(data["passage_ids"])
        assert row["in_answer"] == bool(row["answer_sentences"])
        for i in row["answer_sentences"]:
            sentence = data["sentences"][i]
            assert set(sentence["passage_ids"]) & set(row["context_passages"])
            assert sentence["check"]["verified"] != "unsupported"


def test_llm_routes_exist_only_with_an_llm() -> None:
    assert "/v1/answer" not in create_app(ServerConfig(preload=False)).openapi()["paths"]
    schema = create_app(ServerConfig(preload=False, llm=TINY)).openapi()
    paths = schema["paths"]
    assert {"/v1/plan", "/v1/answer", "/v1/select"} <= set(paths)
    assert "502" in paths["/v1/answer"]["post"]["responses"]
    # the answer is described by the run file's records, not by records of its own
    answer = schema["components"]["schemas"]["AnswerResponse"]["properties"]
    for name in ("sentences", "dropped"):
        assert answer[name]["items"]["$ref"] == "#/components/schemas/RunSentence"
    assert answer["aspect_coverage"]["items"]["$ref"] == "#/components/schemas/AspectCoverageOut"
    assert answer["filters"]["anyOf"][0]["$ref"] == "#/components/schemas/FiltersOut"
    sentence = schema["components"]["schemas"]["RunSentence"]["properties"]
    assert sentence["check"]["anyOf"][0]["$ref"] == "#/components/schemas/RunCheck"


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
    # the support check's results, as an ask run file records them
    assert data["dropped"] == data["drafts"][-1]["dropped"]
    assert data["fallback"] == data["drafts"][-1]["fallback"]
    _check_support(data)
    _check_aspect_coverage(data, ASPECTS)
    filters = data["filters"]
    assert filters["pool"] == 3 and filters["floor"] == 0 and filters["cleared_floor"] == 3
    assert filters["kept"] >= len(data["passage_ids"])


def test_answer_repairs_a_reply_that_copies_passage_n_and_cites_n_plus_1(scripted: Any) -> None:
    http, requests = scripted
    asked = len(requests)
    body = {
        "question": SHIFTED,
        "passages": PASSAGES,
        "aspects": ASPECTS,
        "writer": "extractive",
        "passes": 0,
    }
    response = http.post("/v1/answer", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert len(requests) == asked + 1
    sentences = data["sentences"]
    # each citation now names the passage the sentence copies; the check keeps what was written
    assert [s["passage_ids"] for s in sentences] == [["p1"], ["p2"], ["p3"]]
    assert [s["check"]["cited_as_written"] for s in sentences] == [["p2"], ["p3"], ["p1"]]
    for sentence, passage in zip(sentences, PASSAGES, strict=True):
        check = sentence["check"]
        assert check["verified"] == "aligned" and check["passage_id"] == passage["id"]
        start, end = check["span"]
        assert passage["text"][start:end] == sentence["text"].rstrip(".")
    assert data["dropped"] == [] and data["fallback"] is None
    assert any(
        "3 sentence(s) cited no passage, or passages that do not support them" in w
        for w in data["warnings"]
    ), data["warnings"]
    assert data["drafts"][0]["sentences"] == sentences and data["filters"] is None
    _check_aspect_coverage(data, ASPECTS)
    bullying = data["aspect_coverage"][0]  # p1 states it, sentence 0 copies p1
    assert "p1" in bullying["context_passages"] and 0 in bullying["answer_sentences"]


def test_answer_to_a_reply_citing_nothing_quotes_the_passages_or_refuses(scripted: Any) -> None:
    http, _ = scripted
    body = {"question": UNCITED, "passages": PASSAGES, "writer": "extractive", "passes": 0}
    response = http.post("/v1/answer", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["fallback"] == "quote" and data["drafts"][-1]["fallback"] == "quote"
    assert [s["text"] for s in data["dropped"]] == OFF_TOPIC
    texts = {p["id"]: p["text"] for p in PASSAGES}
    assert [s["passage_ids"] for s in data["sentences"]] == [["p1"], ["p2"], ["p3"]]
    for sentence in data["sentences"]:  # each an exact, cited quotation of its passage
        check = sentence["check"]
        start, end = check["span"]
        assert check["verified"] == "aligned" and sentence["passage_ids"] == [check["passage_id"]]
        assert sentence["text"] == f"\u201c{texts[check['passage_id']][start:end]}\u201d"
    assert any("the answer quotes the selected passages instead" in w for w in data["warnings"])
    _check_support(data)

    refused = http.post("/v1/answer", json={**body, "fallback": "refuse"})
    assert refused.status_code == 200, refused.text
    data = refused.json()
    (sentence,) = data["sentences"]
    assert sentence["framing"] and sentence["text"].startswith("No answer is given")
    assert data["fallback"] == "refuse" and len(data["dropped"]) == 2
    assert data["warnings"] == [
        "no sentence of the model's answer is supported by a passage: no answer is given"
    ]


@pytest.mark.parametrize(
    ("question", "aspects", "change", "removed"),
    [
        (
            "Should governments tax sugary drinks?",
            SUGAR,
            {"writer": "synthesis", "gate_margin": 0},  # the fixed gate: both filters
            "both filters removed all 3 retrieved passages",
        ),
        (
            "Should governments tax sugary drinks?",
            SUGAR,
            {"gate": 0, "writer": "extractive"},
            "the coverage floor removed all 3 retrieved passages",
        ),
        (
            "Should schools require uniforms?",
            ASPECTS,
            {"floor": 0, "gate": 0.99, "gate_margin": 0, "writer": "extractive"},
            "the topic gate removed all 3 passages that cleared the coverage floor",
        ),
    ],
)
def test_answer_never_pads_and_names_the_filter_that_emptied_the_context(
    scripted: Any,
    question: str,
    aspects: list[dict[str, Any]],
    change: dict[str, Any],
    removed: str,
) -> None:
    """With the coverage floor (the default) or the topic gate, passages that answer none of
    the aspects never enter the context: no model is asked, and the answer, its warnings and
    its filters' report say which filter removed them."""
    http, requests = scripted
    asked = len(requests)
    body = {"question": question, "passages": PASSAGES, "aspects": aspects, "k": 2, **change}
    response = http.post("/v1/answer", json=body)
    assert response.status_code == 200, response.text
    data = response.json()
    assert data["passage_ids"] == [] and data["critiques"] == []
    assert data["llm"]["calls"] == 0 and len(requests) == asked
    (sentence,) = data["sentences"]
    assert sentence["passage_ids"] == [] and sentence["framing"]
    assert removed in sentence["text"] and aspects[0]["text"] in sentence["text"]
    assert data["warnings"][0].startswith(f"no answer: {removed}")
    filters = data["filters"]
    assert filters["pool"] == 3 and filters["kept"] == 0
    assert filters["floor"] == body.get("floor", DEFAULT_FLOOR)
    assert filters["gate"] == body.get("gate", DEFAULT_GATE)
    _check_aspect_coverage(data, aspects)
    assert not any(r["in_context"] or r["in_answer"] for r in data["aspect_coverage"])


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
