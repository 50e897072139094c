"""covrag against a real served model: an OpenAI-compatible server on loopback, run by the
embedded runtime (xllamacpp's llama.cpp server with SmolLM2-135M) in its own process.

``covrag ask --llm "openai(base_url=...)"`` plans, critiques and rewrites through it, and
``covrag serve --llm "openai(...)"``'s ``/v1/answer`` writes through it: real HTTP both ways.
SmolLM2's answers are poor; what is checked is that every request the pipeline makes (chat,
JSON-schema ``response_format``, sampling settings, model name) is accepted by a real server and
its replies are read back into the records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("xllamacpp")
httpx = pytest.importorskip("httpx")
pytest.importorskip("openai")
pytest.importorskip("uvicorn")

from covrag.cli import main  # noqa: E402
from covrag.errors import MissingExtraError  # noqa: E402
from covrag.llm.models import smollm2_path  # noqa: E402

pytestmark = pytest.mark.model

# The child loads the model, checks its own /health, prints the base URL and serves until its
# stdin closes (the fixture's teardown, or this process dying), so it never outlives the tests.
_SERVER = """
import sys, urllib.request
from covrag.llm.local import LocalChat
llm = LocalChat("smollm2", n_ctx=4096, n_threads=1)
address = llm.address.rstrip("/")
urllib.request.urlopen(address + "/health", timeout=120).read()
print(address, flush=True)
sys.stdin.read()
"""

CORPUS = [
    {"id": "c1", "text": "School uniforms reduce bullying between pupils."},
    {"id": "c2", "text": "Uniforms cost parents a lot of money each year."},
    {"id": "c3", "text": "School uniforms stop pupils who want to express their identity."},
    {"id": "c4", "text": "Trains are faster than buses."},
]
ASPECTS = [
    {"id": "a1", "text": "Do uniforms reduce bullying?"},
    {"id": "a2", "text": "What do uniforms cost parents?"},
]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The base URL (``http://127.0.0.1:PORT/v1``) of SmolLM2 served by a child process."""
    try:
        smollm2_path()
    except MissingExtraError as exc:
        pytest.skip(str(exc))
    cache = tmp_path_factory.mktemp("served-cache")
    env = {**os.environ, "COVRAG_CACHE_DIR": str(cache)}
    child = subprocess.Popen(
        [sys.executable, "-c", _SERVER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        address = child.stdout.readline().strip()  # blocks until ready, or "" if it died
        if not address.startswith("http://127.0.0.1:"):
            pytest.fail(f"the model server did not start (exit code {child.poll()})")
        yield f"{address}/v1"
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A response cache of the test's own (the user's cache is never written)."""
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _spec(base_url: str) -> str:
    return f"openai(model='smollm2', base_url='{base_url}', timeout=120, max_retries=0)"


def test_ask_plans_writes_and_critiques_through_a_served_model(
    served: str, own_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p) + "\n" for p in CORPUS))
    out = tmp_path / "ask.json"
    args = ["ask", "Should schools require uniforms?", "--corpus", str(corpus)]
    args += ["--llm", _spec(served), "--subquestions", "2", "--pool", "4", "--k", "2"]
    args += ["--passes", "1"]
    # --floor 0 --gate 0: the tiny corpus need not clear the floor; the point is the model calls.
    args += ["--max-tokens", "64", "--floor", "0", "--gate", "0", "--out", str(out)]
    code = main(args)
    captured = capsys.readouterr()
    assert code == 0, captured.err
    record = json.loads(out.read_text())["topics"][0]
    costs = record["costs"]
    # Every LLM stage spoke to the server: none was answered from a cache.
    assert costs["plan"]["llm"]["calls"] >= 1 and costs["plan"]["llm"]["cached_calls"] == 0
    assert costs["generate"]["llm"]["calls"] >= 3  # write, critique, rewrite
    assert costs["generate"]["llm"]["prompt_tokens"] > 100
    # SmolLM2 may write fewer usable sub-questions than asked; the plan keeps what it got.
    assert 1 <= len(record["plan"]["subquestions"]["texts"]) <= 2
    assert len(record["generation"]["drafts"]) == 2
    assert all(record["costs"][s]["seconds"] >= 0 for s in ("plan", "retrieve", "generate"))
    assert "Answer" in captured.out and "Costs" in captured.out


def test_serve_answers_through_a_served_model(served: str, own_cache: Path) -> None:
    from covrag.server import ServerConfig
    from covrag.server.run import serve_in_background

    config = ServerConfig(llm=_spec(served), preload=False, timeout_s=120, llm_timeout_s=300)
    body = {
        "question": "Should schools require uniforms?",
        "passages": CORPUS[:3],
        "aspects": ASPECTS,
        "k": 2,
        "passes": 1,
        "sentences": 2,
        "rewrite_sentences": 2,
        "max_tokens": 48,
    }
    with serve_in_background(config) as url, httpx.Client(base_url=url, timeout=300) as http:
        response = http.post("/v1/answer", json=body)
        assert response.status_code == 200, response.text
        data = response.json()
    assert len(data["passage_ids"]) == 2
    assert len(data["drafts"]) == 2 and len(data["critiques"]) == 1
    assert data["sentences"] == data["drafts"][-1]["sentences"]
    for draft in data["drafts"]:
        assert all(set(s["passage_ids"]) <= set(data["passage_ids"]) for s in draft["sentences"])
    assert data["llm"]["calls"] >= 3 and data["llm"]["prompt_tokens"] > 100
