"""What a hostile client can and cannot make the server do (issue 14, items 1 and 7).

A real uvicorn on loopback, httpx or a raw socket as the client. Clients choose among the
selector and coverage specs the operator allowed; paths and model names are never theirs to set.
"""

from __future__ import annotations

import select
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from covrag.errors import ConfigError
from covrag.registry import parameter_types

httpx = pytest.importorskip("httpx")
pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

import covrag.server.guard as guard_module  # noqa: E402
from covrag.server import ServerConfig, create_app  # noqa: E402
from covrag.server.run import serve_in_background  # noqa: E402
from covrag.server.service import MODEL_LOCK, Menus  # noqa: E402

PASSAGES = [
    {"id": "p1", "text": "Cars pollute the air in city centres.", "covers": ["a1"]},
    {"id": "p2", "text": "Banning cars hurts small shops downtown.", "covers": ["a2"]},
]
ASPECTS = [
    {"id": "a1", "text": "air pollution from cars"},
    {"id": "a2", "text": "economic harm to shops"},
]
BODY_TIMEOUT = 0.5


def body(**overrides: Any) -> dict[str, Any]:
    request: dict[str, Any] = {
        "query": "Should cities ban cars?",
        "passages": PASSAGES,
        "aspects": ASPECTS,
        "relevance": "order",
    }
    request.update(overrides)
    return request


# --- what the server process touches: an audit hook (installed once, filtered by a watch list) --

_WATCH: list[str] = []
_TOUCHED: list[str] = []
_AUDITED = ("open", "os.listdir", "os.scandir", "os.chdir", "socket.getaddrinfo")


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _WATCH or event not in _AUDITED or not args:
        return
    target = str(args[0])
    for watched in _WATCH:
        if target == watched or target.startswith(watched + "/") or "evil-model" in target:
            _TOUCHED.append(f"{event} {target}")


sys.addaudithook(_audit)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    config = ServerConfig(
        preload=False, default_coverage="gold", timeout_s=5, body_timeout_s=BODY_TIMEOUT
    )
    with serve_in_background(config) as base:
        yield base


@pytest.fixture()
def watch(tmp_path: Path) -> Iterator[dict[str, str]]:
    existing = tmp_path / "model"
    existing.mkdir()
    (existing / "config.json").write_text("{}")
    (tmp_path / "model.json").write_text("{}")
    paths = {
        "dir": str(existing),
        "file": str(tmp_path / "model.json"),
        "missing": str(tmp_path / "missing"),
    }
    _WATCH[:] = [*paths.values(), "/etc", "/etc/passwd", "someone"]
    _TOUCHED.clear()
    yield paths
    _WATCH.clear()


def _post(url: str, request: dict[str, Any]) -> httpx.Response:
    return httpx.post(f"{url}/v1/select", json=request, timeout=10)


@pytest.mark.parametrize(
    ("field", "spec"),
    [
        ("coverage", "cross-encoder(model='someone/evil-model')"),
        ("selector", "lmvu(model='/etc/passwd')"),
        ("coverage", "cross-encoder(model='/etc')"),
        ("coverage", "embedding(model='someone/evil-model')"),
        ("coverage", "cross-encoder(batch_size=1000000000)"),
        ("coverage", "cross-encoder(max_length=1000000000)"),
        ("selector", "exact(time_limit=1e30)"),
    ],
)
def test_model_bearing_parameters_are_the_operators(
    url: str, watch: dict[str, str], field: str, spec: str
) -> None:
    # The model lock stays held by the test: a request that reached a model would wait for it.
    with MODEL_LOCK:
        response = _post(url, body(**{field: spec}))
    assert response.status_code == 422, response.text
    error = response.json()
    assert error["field"] == field and error["detail"].startswith(f"{field}: ")
    assert "set by the server's operator" in error["detail"]
    assert _TOUCHED == []


def test_an_existing_path_and_a_missing_one_get_the_same_answer(
    url: str, watch: dict[str, str]
) -> None:
    answers = []
    with MODEL_LOCK:
        for path in (watch["dir"], watch["missing"], watch["file"]):
            for field, name in (("coverage", "cross-encoder"), ("coverage", "embedding")):
                response = _post(url, body(**{field: f"{name}(model={path!r})"}))
                answers.append((name, response.status_code, response.json()))
            response = _post(url, body(selector=f"lmvu(model={path!r})"))
            answers.append(("lmvu", response.status_code, response.json()))
    assert {status for _, status, _ in answers} == {422}
    for name in ("cross-encoder", "embedding", "lmvu"):
        assert len({repr(a) for n, _, a in answers if n == name}) == 1, name
    assert not any(watch["dir"] in repr(a) for a in answers)  # the value is never echoed
    assert _TOUCHED == []


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("random(seed=1.5)", "seed must be an integer"),
        ("random(seed='abc')", "seed must be an integer"),
        ("random(seed=-1)", "seed must be an integer >= 0"),
        ("random(seed=100000000000000000000000000000)", "seed must lie in"),
        ("mmr(lam=1e999)", "lam must lie in [0, 1]"),
        ("mmr(lam=nan)", "lam must be a number"),
        ("mmr(", "selector"),
        ("mmr(lam=0.5, lam=0.6)", "given twice"),
        ("cluster(n_clusters=100000000)", "n_clusters must lie in"),
        ("mmkp(cap=0)", "cap must lie in"),
        ("expected-coverage(power=1e30)", "power must lie in"),
        ("greedy-coverage(exclude='/etc/passwd')", "exclude must be one of"),
        ("no-such-selector", "not offered by this server"),
        ("greedy-covrage", "did you mean greedy-coverage"),
    ],
)
def test_bad_selector_parameters_are_422_never_500(url: str, spec: str, fragment: str) -> None:
    response = _post(url, body(selector=spec))
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "selector"
    assert fragment in response.json()["detail"]


@pytest.mark.parametrize(
    "spec",
    ["embedding(threshold=1e999)", "embedding(threshold=-0.1)", "cross-encoder(threshold=2)"],
)
def test_bad_coverage_parameters_are_422(url: str, spec: str) -> None:
    response = _post(url, body(coverage=spec))
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "coverage"
    assert "threshold must lie in [0, 1]" in response.json()["detail"]


def test_tunable_parameters_still_work(url: str) -> None:
    # (Without a model to load: the default coverage is gold.)
    # A tuned spec keeps the operator's other parameters (exact's time limit).
    for spec, built in (
        ("random(seed=7)", "random(seed=7)"),
        ("greedy-coverage(cost_aware=True)", "greedy-coverage(cost_aware=True)"),
        ("expected-coverage(power=2, exclude='forbid')",) * 2,
        ("exact", "exact(time_limit=10.0)"),
        ("exact(strict=False)", "exact(time_limit=10.0, strict=False)"),
    ):
        response = _post(url, body(selector=spec, k=1))
        assert response.status_code == 200, (spec, response.text)
        assert response.json()["selector"] == built


def test_the_schema_and_healthz_list_the_allowed_specs(url: str) -> None:
    schema = httpx.get(f"{url}/openapi.json").json()
    properties = schema["components"]["schemas"]["SelectRequest"]["properties"]
    health = httpx.get(f"{url}/healthz").json()
    for field, listed in (("selector", "selectors"), ("coverage", "coverage_estimators")):
        choices = properties[field]["anyOf"]
        enum = next(c["enum"] for c in choices if "enum" in c)
        assert enum == health[listed], field
        assert not any("model=" in spec for spec in enum)
    assert "gold" in health["coverage_estimators"] and "mmr" in health["selectors"]


def test_operator_configured_models_are_offered_by_name_only(tmp_path: Path) -> None:
    model = tmp_path / "lmvu.json"
    config = ServerConfig(
        preload=False,
        default_coverage="gold",
        selectors=("topk", f"lmvu(model={str(model)!r})"),
        coverages=("gold",),
    )
    app = create_app(config)
    properties = app.openapi()["components"]["schemas"]["SelectRequest"]["properties"]
    enum = next(c["enum"] for c in properties["selector"]["anyOf"] if "enum" in c)
    assert enum == ["expected-coverage", "topk", f"lmvu(model={str(model)!r})"]
    with serve_in_background(config) as base:
        refused = _post(base, body(selector="lmvu(model='/etc/passwd')"))
        assert refused.status_code == 422 and refused.json()["field"] == "selector"
        other = _post(base, body(coverage="embedding"))
        assert other.status_code == 422 and "not offered by this server" in other.text


@pytest.mark.parametrize(
    ("request_body", "field"),
    [
        (body(tokens=1e30), "tokens"),
        (body(k=1e30), "k"),
        (body(tokens=10**30), "tokens"),
        (body(k=99999999999999999999), "k"),
        (body(passages=[{"id": "p", "text": "t", "tokens": 10**30}]), "passages[0].tokens"),
        (body(passages=[{"id": "p", "text": "t", "score": 1e300}]), "passages[0].score"),
    ],
)
def test_absurd_sizes_are_refused_naming_the_field(
    url: str, request_body: dict[str, Any], field: str
) -> None:
    response = _post(url, request_body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b'"passages": [{"id": "p", "text": "t", "score": NaN}]', "passages[0].score"),
        (
            b'"passages": [{"id": "p", "text": "t", "covers": ["a"]}], '
            b'"aspects": [{"id": "a", "text": "t", "weight": Infinity}]',
            "aspects[0].weight",
        ),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_field(url: str, raw: bytes, field: str) -> None:
    content = b'{"query": "q", "coverage": "gold", ' + raw + b"}"
    response = httpx.post(
        f"{url}/v1/select",
        content=content,
        headers={"Content-Type": "application/json"},
        timeout=10,
    )
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert "finite" in response.json()["detail"]


def test_deeply_nested_json_is_a_client_error(url: str) -> None:
    depth = 100_000
    content = b'{"query": "q", "passages": ' + b"[" * depth + b"]" * depth + b"}"
    response = httpx.post(
        f"{url}/v1/select", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code in (400, 413, 422), response.text
    assert response.json()["field"] == "body"


def _read_reply(sock: socket.socket) -> bytes:
    """What the server sent before it closed; a reset (bytes still arriving at a closed socket
    make the kernel answer RST, which may drop the reply) reads as ``b"reset"``."""
    reply = b""
    try:
        while chunk := sock.recv(65536):
            reply += chunk
    except ConnectionResetError:
        return reply or b"reset"
    return reply


def test_a_stalled_body_is_cut_after_the_read_timeout(url: str) -> None:
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(
            b"POST /v1/select HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n"
            b'Content-Length: 100\r\n\r\n{"query": "half a body'
        )
        reply = _read_reply(sock)  # the server answers, then closes
    # Only the timeout can answer a body that never completes: 408, naming the body.
    assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
    assert b'"field":"body"' in reply.replace(b" ", b"")
    assert f"within {BODY_TIMEOUT:g} s".encode() in reply


class _SteppedClock:
    """The guard's clock, moved by the test; it counts the guard's reads so that the test can
    wait (on a condition, not a sleep) until the guard has taken a chunk and waits for the next.
    """

    def __init__(self) -> None:
        self.now = 1000.0
        self.reads = 0
        self.changed = threading.Condition()

    def monotonic(self) -> float:
        with self.changed:
            self.reads += 1
            self.changed.notify_all()
            return self.now

    def wait_for_reads(self, count: int) -> None:
        """Block until the guard has read the clock ``count`` times (60 s bound: fails loudly)."""
        with self.changed:
            assert self.changed.wait_for(lambda: self.reads >= count, timeout=60), (
                f"the guard read its clock {self.reads} times, never {count}"
            )


def test_a_dripping_body_is_cut_by_one_deadline_not_per_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A body that keeps dripping (every gap 20 min, under the hour's limit) is cut once the
    whole body has taken an hour. The clock is stepped, so the test takes no time and holds no
    timing window; a deadline restarted per chunk would leave the guard waiting 20 real minutes,
    and the socket's 60 s bound fails the test."""
    clock = _SteppedClock()
    monkeypatch.setattr(guard_module, "time", clock)
    config = ServerConfig(preload=False, default_coverage="gold", body_timeout_s=3600)
    with serve_in_background(config) as base:
        host, port = base.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=60) as sock:
            sock.sendall(
                b"POST /v1/select HTTP/1.1\r\nHost: test\r\nContent-Type: application/json"
                b"\r\nContent-Length: 1000\r\n\r\n"
            )
            # Two reads: the deadline (now + 1 h), then the time left for the first chunk.
            clock.wait_for_reads(2)
            for reads in (3, 4):
                clock.now += 1200
                sock.sendall(b" ")
                clock.wait_for_reads(reads)  # took the chunk, waits for the next one
                assert not select.select([sock], [], [], 0)[0], "cut before the deadline"
            clock.now += 1200  # an hour since the body was first awaited
            sock.sendall(b" ")
            reply = _read_reply(sock)
    assert reply.startswith(b"HTTP/1.1 408 "), reply[:200]
    assert b'"field":"body"' in reply.replace(b" ", b"")


# --- every spec a client can write resolves or is a ConfigError (a 422), never anything else -----

_MENUS = Menus.of(ServerConfig(preload=False, default_coverage="gold"))
_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.integers(), max_size=3),
)


@st.composite
def _specs(draw: st.DrawFn) -> str:
    menu = draw(st.sampled_from([_MENUS.selectors, _MENUS.coverages]))
    name = draw(st.sampled_from(menu.registry.names()))
    params = list(parameter_types(menu.registry.get(name))) + ["model", "path", "x"]
    chosen = draw(st.dictionaries(st.sampled_from(params), _VALUES, max_size=3))
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in chosen.items()) + ")"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(spec=st.one_of(_specs(), st.text(max_size=60)))
def test_every_spec_resolves_or_is_a_config_error(spec: str) -> None:
    for menu in (_MENUS.selectors, _MENUS.coverages):
        try:
            built: Any = menu.resolve(spec)
        except ConfigError:
            continue
        assert built.name in {e.name for e in menu.entries}
        for param in ("model", "batch_size", "max_length", "time_limit"):
            if hasattr(built, param):  # the operator's value, whatever the request said
                entry = next(e for e in menu.entries if e.name == built.name)
                assert getattr(built, param) == getattr(entry.obj, param)
