"""A persistent response cache: the same call to the same model is answered from disk.

Keys are the SHA-256 of the backend, the model, the messages, the JSON schema and the sampling
parameters, so a cached answer is only reused for exactly the same request. The store is one
SQLite file in WAL mode with a busy timeout: several processes (a bench and a ``covrag plan`` at
the same time) can read and write it safely, and every write is one atomic transaction, so an
interrupted run never leaves a half-written entry.

The same store keeps *memos*: results derived from cached replies (a decomposition's kept
sub-questions) by key, so a rerun answered from the cache also skips the work done on the replies.
It is the only cache of LLM-derived results (:meth:`LLM.recall` / :meth:`LLM.remember`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message, canonical

logger = logging.getLogger(__name__)

SCHEMA_VERSION = 1


def default_cache_dir() -> Path:
    """``$COVRAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/covrag``, else ``~/.cache/covrag``."""
    if os.environ.get("COVRAG_CACHE_DIR"):
        return Path(os.environ["COVRAG_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "covrag"


def default_cache_path() -> Path:
    return default_cache_dir() / "llm-cache.sqlite"


def request_key(
    backend: str,
    model: str,
    messages: Sequence[Message],
    schema: JsonSchema | None,
    params: ChatParams,
) -> str:
    """SHA-256 of everything that determines the answer."""
    payload = {
        "v": SCHEMA_VERSION,
        "backend": backend,
        "model": model,
        "messages": [m.to_dict() for m in messages],
        "schema": schema,
        "params": {
            "temperature": params.temperature,
            "max_tokens": params.max_tokens,
            "seed": params.seed,
        },
    }
    return hashlib.sha256(canonical(payload).encode("utf-8")).hexdigest()


class ResponseCache:
    """SQLite store of chat results by request key.

    Args:
        path: The database file (created with its folder when missing).
        timeout: Seconds to wait for another process's write lock.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, timeout: float = 30.0) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        self._db.execute("PRAGMA journal_mode = WAL")
        self._db.execute("PRAGMA synchronous = NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses ("
            " key TEXT PRIMARY KEY, backend TEXT NOT NULL, model TEXT NOT NULL,"
            " result TEXT NOT NULL, created REAL NOT NULL)"
        )
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS memos ("
            " key TEXT PRIMARY KEY, value TEXT NOT NULL, created REAL NOT NULL)"
        )

    def get(self, key: str) -> ChatResult | None:
        with self._lock:
            row = self._db.execute("SELECT result FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        data = json.loads(row[0])
        return ChatResult(
            text=data["text"],
            model=data["model"],
            prompt_tokens=data.get("prompt_tokens", 0),
            completion_tokens=data.get("completion_tokens", 0),
            finish_reason=data.get("finish_reason", "stop"),
            cached=True,
            seconds=0.0,
        )

    def put(self, key: str, backend: str, result: ChatResult) -> None:
        data = {
            "text": result.text,
            "model": result.model,
            "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "finish_reason": result.finish_reason,
        }
        with self._lock:
            # One statement in autocommit mode is one atomic transaction.
            self._db.execute(
                "INSERT OR REPLACE INTO responses (key, backend, model, result, created)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, backend, result.model, json.dumps(data), time.time()),
            )

    def get_memo(self, key: str) -> Any:
        """The memo kept under ``key`` (None when there is none or it is unreadable)."""
        with self._lock:
            row = self._db.execute("SELECT value FROM memos WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            return json.loads(row[0])
        except ValueError:
            logger.warning("ignoring an unreadable memo %s in %s", key, self.path)
            return None

    def put_memo(self, key: str, value: Any) -> None:
        """Keep the JSON-serialisable ``value`` under ``key`` (one atomic write)."""
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO memos (key, value, created) VALUES (?, ?, ?)",
                (key, json.dumps(value), time.time()),
            )

    def memo_keys(self) -> list[str]:
        """The keys of every memo kept."""
        with self._lock:
            rows = self._db.execute("SELECT key FROM memos ORDER BY key").fetchall()
        return [str(key) for (key,) in rows]

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedLLM(LLM):
    """Any :class:`LLM` behind a :class:`ResponseCache`.

    Only complete answers are cached (``finish_reason`` other than ``length``), so a call that ran
    out of tokens is retried next time rather than replayed.
    """

    def __init__(self, inner: LLM, cache: ResponseCache) -> None:
        super().__init__(inner.model, inner.params)
        self.inner = inner
        self.cache = cache
        self.backend = inner.backend
        self.supports_schema = inner.supports_schema

    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        key = request_key(self.inner.backend, self.inner.model, messages, schema, params)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        result = self.inner.chat(messages, schema=schema, params=params)
        if result.finish_reason != "length":
            self.cache.put(key, self.inner.backend, result)
        return result

    def recall(self, key: str) -> Any:
        return self.cache.get_memo(key)

    def remember(self, key: str, value: Any) -> None:
        self.cache.put_memo(key, value)

    def describe(self) -> str:
        return self.inner.describe()
