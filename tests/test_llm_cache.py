from __future__ import annotations

import json
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from covrag.cli import main
from covrag.errors import StructuredOutputError
from covrag.llm import CachedLLM, ChatParams, ChatResult, ResponseCache, chat_json, user
from covrag.llm.cache import request_key
from covrag.schema.llm import reply_model
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


def _key(backend: str = "local", model: str = "m", **changes: Any) -> str:
    request: dict[str, Any] = {
        "messages": [user("q")],
        "schema": None,
        "params": ChatParams(),
        "endpoint": "",
        "constrained": True,
        **changes,
    }
    return request_key(
        backend,
        model,
        request["messages"],
        request["schema"],
        request["params"],
        endpoint=request["endpoint"],
        constrained=request["constrained"],
    )


def test_request_key_covers_everything_that_changes_the_answer() -> None:
    base = _key()
    assert base == _key()
    others = {
        _key("openai"),
        _key(model="m2"),
        _key(messages=[user("q2")]),
        _key(schema={"type": "object"}),
        _key(params=ChatParams(seed=1)),
        _key(params=ChatParams(temperature=0.5)),
        _key(params=ChatParams(max_tokens=7)),
        _key(endpoint="http://127.0.0.1:8000/v1"),
        _key(constrained=False),
    }
    assert base not in others and len(others) == 9


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


def _open_write_read(folder: str, me: int, rounds: int, n: int, barrier: Any, errors: Any) -> None:
    """Each round: open a new cache file at the same moment as the other process, then write
    replies and memos while reading the other's."""
    for r in range(rounds):
        barrier.wait(60)
        try:
            cache = ResponseCache(Path(folder) / f"fresh-{r}.sqlite")
            for i in range(n):
                cache.put(f"{me}-{i}", "test", ChatResult(f"text {me}-{i}", "m"))
                cache.put_memo(f"memo {me}-{i}", {"by": me, "i": i})
                other = cache.get(f"{1 - me}-{i}")  # written or not yet, never torn
                assert other is None or other.text == f"text {1 - me}-{i}"
            cache.close()
        except (sqlite3.Error, AssertionError) as exc:
            errors.put(f"process {me}, round {r}: {exc!r}")


def test_two_processes_opening_a_new_cache_at_once_both_write(tmp_path: Path) -> None:
    """Before: the second process to open a new cache file failed with 'database is locked'
    (switching the file to WAL does not wait for the busy timeout): 3 and 7 of two sets of
    10 rounds of four processes failed. Now both write and read every round, and nothing is lost."""
    rounds, n = 12, 40
    context = multiprocessing.get_context("spawn")
    barrier, errors = context.Barrier(2), context.Queue()
    workers = [
        context.Process(
            target=_open_write_read, args=(str(tmp_path), me, rounds, n, barrier, errors)
        )
        for me in (0, 1)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
    found = []
    while not errors.empty():
        found.append(errors.get())
    assert not found, found
    assert [w.exitcode for w in workers] == [0, 0]
    for r in range(rounds):
        path = tmp_path / f"fresh-{r}.sqlite"
        cache = ResponseCache(path)
        assert len(cache) == 2 * n and len(cache.memo_keys()) == 2 * n
        for me, i in ((0, 0), (1, n - 1), (0, n // 2)):
            hit = cache.get(f"{me}-{i}")
            assert hit is not None and hit.text == f"text {me}-{i}"
            assert cache.get_memo(f"memo {me}-{i}") == {"by": me, "i": i}
        cache.close()
        (ok,) = sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()
        assert ok == "ok"


NUMBER = reply_model("Number", n=int)


def test_rejected_structured_replies_are_not_cached(tmp_path: Path) -> None:
    """Before: the three rejected replies of a failed ``chat_json`` were stored, and replayed
    (and rejected again) after the endpoint was fixed. Now only the accepted reply is kept."""
    path = tmp_path / "cache.sqlite"
    broken = CachedLLM(ScriptedLLM(["<html>", '{"n": "x"}', "{}"]), ResponseCache(path))
    with pytest.raises(StructuredOutputError):
        chat_json(broken, [user("n?")], NUMBER, task="n", retries=2)
    assert len(ResponseCache(path)) == 0
    fixed_inner = ScriptedLLM(['{"n": 1}'])
    fixed = CachedLLM(fixed_inner, ResponseCache(path))
    assert chat_json(fixed, [user("n?")], NUMBER, task="n", retries=2).value.n == 1
    assert fixed_inner.usage.calls == 1 and len(ResponseCache(path)) == 1
    # A rerun replays the accepted reply without calling the model.
    rerun_inner = ScriptedLLM([])
    rerun = CachedLLM(rerun_inner, ResponseCache(path))
    assert chat_json(rerun, [user("n?")], NUMBER, task="n").value.n == 1
    assert rerun_inner.usage.calls == 0 and rerun.usage.cached_calls == 1


def test_a_reply_the_check_rejects_is_not_cached(tmp_path: Path) -> None:
    def positive(value: Any) -> int:
        if value.n <= 0:
            raise ValueError("n must be positive")
        return int(value.n)

    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = ScriptedLLM(['{"n": 0}', '{"n": 2}'])
    llm = CachedLLM(inner, cache)
    result = chat_json(llm, [user("n?")], NUMBER, task="n", check=positive, retries=1)
    assert result.value == 2 and result.attempts == 2
    # The accepted reply is kept for the retry's request and for the first request; the
    # rejected one is kept for neither, so a rerun repeats the accepted answer at once.
    assert len(cache) == 2
    again = ScriptedLLM([])
    rerun = CachedLLM(again, cache)
    repeated = chat_json(rerun, [user("n?")], NUMBER, task="n", check=positive, retries=1)
    assert repeated.value == 2 and repeated.attempts == 1
    assert again.usage.calls == 0 and rerun.usage.cached_calls == 1
    assert all(r.text != '{"n": 0}' for r in repeated.results)


def test_a_whole_reply_padded_to_the_token_limit_is_cached_once_accepted(tmp_path: Path) -> None:
    class Padded(ScriptedLLM):
        def _chat(self, messages, schema, params):  # type: ignore[no-untyped-def]
            result = super()._chat(messages, schema, params)
            return ChatResult(result.text, self.model, finish_reason="length")

    cache = ResponseCache(tmp_path / "c.sqlite")
    llm = CachedLLM(Padded(['{"n": 4}' + "\n" * 10]), cache)
    assert chat_json(llm, [user("n?")], NUMBER, task="n", retries=0).value.n == 4
    assert len(cache) == 1


def test_entries_of_older_key_versions_are_dropped(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.execute(
        "CREATE TABLE responses (key TEXT PRIMARY KEY, backend TEXT NOT NULL,"
        " model TEXT NOT NULL, result TEXT NOT NULL, created REAL NOT NULL)"
    )
    db.execute("INSERT INTO responses VALUES ('k', 'openai', 'm', '{\"text\": \"bad\"}', 0)")
    db.commit()
    db.close()
    cache = ResponseCache(path)
    assert len(cache) == 0
    cache.put("new", "openai", ChatResult("ok", "m"))
    assert len(ResponseCache(path)) == 1  # opening again keeps what the new version stored


def _fill(cache: ResponseCache) -> None:
    cache.put("a", "openai", ChatResult("one", "gpt"))
    cache.put("b", "openai", ChatResult("two", "gpt"))
    cache.put("c", "local", ChatResult("three", "smollm2"))
    cache.put_memo("decompose:x", {"kept": []})


def test_stats_and_clear_with_filters(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    _fill(cache)
    stats = cache.stats()
    assert (stats.entries, stats.memos) == (3, 1) and stats.bytes > 0
    assert [(m.backend, m.model, m.entries) for m in stats.models] == [
        ("openai", "gpt", 2),
        ("local", "smollm2", 1),
    ]
    assert cache.clear(older_than=3600) == 0 and len(cache) == 3
    assert cache.clear(model="smollm2") == 1 and cache.get("c") is None
    assert cache.stats().memos == 1  # memos belong to no model
    assert cache.clear() == 2 and len(cache) == 0 and cache.stats().memos == 0


def _keep_writing(path: str, stop: Any, busy: Any, count: Any) -> None:
    cache = ResponseCache(path)
    i = 0
    while not stop.is_set():
        cache.put(f"w{i}", "test", ChatResult("x", "m"))
        i += 1
        count.value = i
        if i == 20:
            busy.set()  # the reader starts once the writer is well under way
    cache.close()


def test_clear_and_stats_are_safe_while_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "busy.sqlite"
    ResponseCache(path).close()
    context = multiprocessing.get_context("spawn")
    stop, busy, count = context.Event(), context.Event(), context.Value("i", 0)
    writer = context.Process(target=_keep_writing, args=(str(path), stop, busy, count))
    writer.start()
    try:
        cache = ResponseCache(path)
        assert busy.wait(120), "the writer process never wrote 20 entries"
        for _ in range(5):
            stats = cache.stats()
            assert stats.entries == sum(m.entries for m in stats.models)  # one snapshot
            cache.clear()
    finally:
        stop.set()
        writer.join(30)
    assert writer.exitcode == 0 and count.value >= 20
    (ok,) = sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()
    assert ok == "ok"


def test_cache_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cli.sqlite"
    assert main(["cache", "stats", "--cache", str(path)]) == 0
    assert "no response cache" in capsys.readouterr().out and not path.exists()
    cache = ResponseCache(path)
    _fill(cache)
    cache.close()
    assert main(["cache", "stats", "--cache", str(path), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["entries"] == 3 and record["memos"] == 1
    assert record["models"][0] == {
        "backend": "openai",
        "model": "gpt",
        "entries": 2,
        "bytes": record["models"][0]["bytes"],
    }
    assert main(["cache", "stats", "--cache", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 cached replies, 1 memos" in out and "smollm2" in out
    assert main(["cache", "clear", "--cache", str(path), "--model", "gpt"]) == 0
    assert "removed 2 cached replies" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache", str(path), "--older-than", "1d"]) == 0
    assert "removed 0 cached replies" in capsys.readouterr().out
    assert main(["cache", "clear", "--cache", str(path)]) == 0
    assert "removed 1 cached replies" in capsys.readouterr().out and len(ResponseCache(path)) == 0
    with pytest.raises(SystemExit):
        main(["cache", "clear", "--cache", str(path), "--older-than", "soon"])
    assert "not an age" in capsys.readouterr().err
    assert main(["cache", "stats", "--cache", str(tmp_path)]) == 2
    assert "is not a file" in capsys.readouterr().err


def test_the_default_cache_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COVRAG_CACHE_DIR", str(tmp_path))
    cache = ResponseCache()
    _fill(cache)
    cache.close()
    assert main(["cache", "clear"]) == 0
    expected = f"removed 3 cached replies from {tmp_path / 'llm-cache.sqlite'}"
    assert expected in capsys.readouterr().out
