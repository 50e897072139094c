from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

from covrag.llm import CachedLLM, ChatParams, ChatResult, ResponseCache, user
from covrag.llm.cache import request_key
from llm_support import ScriptedLLM


def test_cached_llm_answers_repeats_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "cache.sqlite"
    inner = ScriptedLLM(["first", "second"])
    llm = CachedLLM(inner, ResponseCache(path))
    assert llm.chat([user("hello")]).text == "first"
    again = llm.chat([user("hello")])
    assert again.text == "first" and again.cached
    assert inner.usage.calls == 1
    assert llm.usage.calls == 1 and llm.usage.cached_calls == 1
    # Another message, another schema or other parameters are other requests.
    assert llm.chat([user("hello")], params=ChatParams(max_tokens=7)).text == "second"
    # A new process (a new cache object on the same file) replays without calling the model.
    fresh_inner = ScriptedLLM([])
    fresh = CachedLLM(fresh_inner, ResponseCache(path))
    assert fresh.chat([user("hello")]).text == "first"
    assert fresh_inner.usage.calls == 0


def test_request_key_covers_everything_that_changes_the_answer() -> None:
    base = request_key("local", "m", [user("q")], None, ChatParams())
    assert base == request_key("local", "m", [user("q")], None, ChatParams())
    others = {
        request_key("openai", "m", [user("q")], None, ChatParams()),
        request_key("local", "m2", [user("q")], None, ChatParams()),
        request_key("local", "m", [user("q2")], None, ChatParams()),
        request_key("local", "m", [user("q")], {"type": "object"}, ChatParams()),
        request_key("local", "m", [user("q")], None, ChatParams(seed=1)),
        request_key("local", "m", [user("q")], None, ChatParams(temperature=0.5)),
    }
    assert base not in others and len(others) == 6


def test_cut_off_answers_are_not_cached(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")

    class CutOff(ScriptedLLM):
        def _chat(self, messages, schema, params):  # type: ignore[no-untyped-def]
            result = super()._chat(messages, schema, params)
            return ChatResult(result.text, self.model, finish_reason="length")

    llm = CachedLLM(CutOff(["a", "b"]), cache)
    assert llm.chat([user("x")]).text == "a"
    assert llm.chat([user("x")]).text == "b"
    assert len(cache) == 0


def _writer(path: str, worker: int, n: int) -> None:
    cache = ResponseCache(path)
    for i in range(n):
        key = f"{worker}-{i}"
        cache.put(key, "test", ChatResult(f"text {key}", "m"))
        assert cache.get(key) is not None
    cache.close()


def test_several_processes_share_one_cache(tmp_path: Path) -> None:
    path = tmp_path / "shared.sqlite"
    ResponseCache(path).close()
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_writer, args=(str(path), w, 50)) for w in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    cache = ResponseCache(path)
    assert len(cache) == 150
    hit = cache.get("2-49")
    assert hit is not None and hit.text == "text 2-49" and hit.cached
    (mode,) = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()
    assert mode == "wal"
