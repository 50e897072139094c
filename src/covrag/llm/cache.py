"""A persistent response cache: the same call to the same model is answered from disk.

Keys are the SHA-256 of everything that changes the answer: the backend, its endpoint (an HTTP
backend's base URL), the model, whether the schema constrains decoding, the messages, the JSON
schema and every sampling parameter, so a cached answer is only reused for exactly the same
request to the same server. Only *accepted* replies are kept: a plain call's complete reply, or a
structured reply once it passed parsing, schema validation and the step's own check
(:meth:`LLM.accept`); a reply that was rejected or cut off is asked again next time, so a broken
endpoint never leaves replies that are replayed after it is fixed.

The store is one SQLite file in WAL mode with a busy timeout: several processes (a bench and a
``covrag plan`` at the same time, or ``covrag cache clear``) can read and write it safely, and
every write is one atomic transaction, so an interrupted run never leaves a half-written entry.
Processes that open a new file at the same moment (the replicas of ``covrag serve``) wait for
each other while it is switched to WAL.

The same store keeps *memos*: results derived from cached replies (a decomposition's kept
sub-questions) by key, so a rerun answered from the cache also skips the work done on the replies.
It is the only cache of LLM-derived results (:meth:`LLM.recall` / :meth:`LLM.remember`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from covrag.errors import DataError
from covrag.llm.base import LLM, ChatParams, ChatResult, JsonSchema, Message, canonical

logger = logging.getLogger(__name__)

#: Version of the request keys; 2 added the endpoint, the schema switch and every sampling
#: parameter. Entries of older versions can never be hit and are dropped when a store is opened.
SCHEMA_VERSION = 2

#: SQLite's codes for a file that is not a database or whose pages are damaged: such a cache is
#: reported and left untouched, never overwritten.
_CORRUPT = (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)


def _busy(exc: sqlite3.OperationalError) -> bool:
    """Whether SQLite refused because another connection holds a lock."""
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return int(code) & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(exc)


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
    *,
    endpoint: str = "",
    constrained: bool = True,
) -> str:
    """SHA-256 of everything that determines the answer.

    Args:
        backend: The backend's name (``openai``, ``local``).
        model: The model it runs.
        messages: The request.
        schema: The JSON schema of the reply, if any.
        params: Every sampling parameter.
        endpoint: Where the model answers (:attr:`LLM.endpoint`; empty for a model in the
            process).
        constrained: Whether the backend decodes under the schema (:attr:`LLM.supports_schema`).
    """
    payload = {
        "v": SCHEMA_VERSION,
        "backend": backend,
        "endpoint": endpoint,
        "model": model,
        "constrained": constrained,
        "messages": [m.to_dict() for m in messages],
        "schema": schema,
        "params": dataclasses.asdict(params),
    }
    return hashlib.sha256(canonical(payload).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class ModelEntries:
    """The cached replies of one backend and model."""

    backend: str
    model: str
    entries: int
    bytes: int


@dataclass(frozen=True, slots=True)
class CacheStats:
    """What a response cache holds (read in one transaction).

    Attributes:
        path: The database file.
        entries: Cached replies.
        memos: Results derived from replies (:meth:`LLM.remember`).
        bytes: Size on disk (the database and its write-ahead log).
        oldest: When the oldest reply was stored (Unix seconds; None when empty).
        newest: When the newest reply was stored.
        models: The replies by backend and model, most first.
    """

    path: Path
    entries: int
    memos: int
    bytes: int
    oldest: float | None
    newest: float | None
    models: tuple[ModelEntries, ...]


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
        try:
            self._open(timeout)
        except sqlite3.DatabaseError as exc:
            self._db.close()
            if getattr(exc, "sqlite_errorcode", None) not in _CORRUPT:
                raise
            raise DataError(
                f"not a readable response cache ({exc}); it was left as it is: move it aside "
                "(or delete it) to start an empty cache there, or give another cache file",
                path=str(self.path),
            ) from None

    def _open(self, timeout: float) -> None:
        """Set the store up: WAL, the tables, and the request keys of this version."""
        self._db.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        self._wal(timeout)
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
        self._migrate()

    def _wal(self, timeout: float) -> None:
        """Switch the file to WAL mode (once per file; later opens find it so).

        The switch takes an exclusive lock that SQLite does not wait for (the busy timeout does
        not apply), so when several processes open a new cache at the same moment (the replicas
        of ``covrag serve``) all but one would fail with "database is locked": they retry, with
        growing pauses, for up to ``timeout`` seconds.
        """
        deadline = time.monotonic() + timeout
        pause = 0.002
        while True:
            try:
                (mode,) = self._db.execute("PRAGMA journal_mode = WAL").fetchone()
                break
            except sqlite3.OperationalError as exc:
                if not _busy(exc) or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)
            pause = min(2 * pause, 0.1)
        if str(mode).lower() != "wal":  # a file system without shared memory, e.g.
            logger.warning("response cache %s runs in %s mode, not WAL", self.path, mode)

    def _migrate(self) -> None:
        """Drop replies stored under older request keys (they can never be hit, and version 1
        kept replies no step had accepted)."""
        (version,) = self._db.execute("PRAGMA user_version").fetchone()
        if version >= SCHEMA_VERSION:
            return
        with self._transaction():
            (version,) = self._db.execute("PRAGMA user_version").fetchone()
            if version < SCHEMA_VERSION:
                self._db.execute("DELETE FROM responses")
                self._db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextlib.contextmanager
    def _transaction(self, mode: str = "IMMEDIATE") -> Iterator[None]:
        """One transaction (``IMMEDIATE`` takes the write lock at once; ``DEFERRED`` reads a
        consistent snapshot)."""
        with self._lock:
            self._db.execute(f"BEGIN {mode}")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

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

    def stats(self) -> CacheStats:
        """What the cache holds, read in one consistent snapshot."""
        with self._transaction("DEFERRED"):
            entries, oldest, newest = self._db.execute(
                "SELECT COUNT(*), MIN(created), MAX(created) FROM responses"
            ).fetchone()
            (memos,) = self._db.execute("SELECT COUNT(*) FROM memos").fetchone()
            rows = self._db.execute(
                "SELECT backend, model, COUNT(*), SUM(LENGTH(key) + LENGTH(result))"
                " FROM responses GROUP BY backend, model ORDER BY COUNT(*) DESC, backend, model"
            ).fetchall()
        files = (self.path, Path(f"{self.path}-wal"))
        size = sum(f.stat().st_size for f in files if f.exists())
        models = tuple(ModelEntries(str(b), str(m), int(n), int(z or 0)) for b, m, n, z in rows)
        return CacheStats(self.path, int(entries), int(memos), size, oldest, newest, models)

    def clear(self, *, older_than: float | None = None, model: str | None = None) -> int:
        """Remove replies (and memos) in one atomic transaction; returns how many replies went.

        Args:
            older_than: Only what was stored more than this many seconds ago.
            model: Only the replies of this model (memos, which belong to no model, stay).
        """
        where: list[str] = ["1 = 1"]
        args: list[float | str] = []
        if older_than is not None:
            where.append("created < ?")
            args.append(time.time() - older_than)
        memo_where = " AND ".join(where)
        if model is not None:
            where.append("model = ?")
            args.append(model)
        with self._transaction():
            removed = self._db.execute(
                f"DELETE FROM responses WHERE {' AND '.join(where)}", args
            ).rowcount
            if model is None:
                self._db.execute(f"DELETE FROM memos WHERE {memo_where}", args)
        return int(removed)

    def __len__(self) -> int:
        with self._lock:
            (count,) = self._db.execute("SELECT COUNT(*) FROM responses").fetchone()
        return int(count)

    def close(self) -> None:
        with self._lock:
            self._db.close()


class CachedLLM(LLM):
    """Any :class:`LLM` behind a :class:`ResponseCache`.

    A request seen before is answered from the cache; a new one goes to the model, and its reply
    is kept only once accepted (:meth:`LLM.accept`): at once for a plain call whose reply is
    complete (``finish_reason`` other than ``length``), after its checks for a structured one.
    """

    def __init__(self, inner: LLM, cache: ResponseCache) -> None:
        super().__init__(inner.model, inner.params)
        self.inner = inner
        self.cache = cache
        self.backend = inner.backend
        self.endpoint = inner.endpoint
        self.supports_schema = inner.supports_schema

    def _key(
        self, messages: Sequence[Message], schema: JsonSchema | None, params: ChatParams
    ) -> str:
        inner = self.inner
        return request_key(
            inner.backend,
            inner.model,
            messages,
            schema,
            params,
            endpoint=inner.endpoint,
            constrained=inner.supports_schema,
        )

    def _chat(
        self, messages: list[Message], schema: JsonSchema | None, params: ChatParams
    ) -> ChatResult:
        hit = self.cache.get(self._key(messages, schema, params))
        if hit is not None:
            return hit
        return self.inner.chat(messages, schema=schema, params=params, provisional=True)

    def accept(
        self,
        messages: Sequence[Message],
        result: ChatResult,
        *,
        schema: JsonSchema | None = None,
        params: ChatParams | None = None,
    ) -> None:
        if result.cached:
            return
        key = self._key(messages, schema, params or self.params)
        self.cache.put(key, self.inner.backend, result)

    def recall(self, key: str) -> Any:
        return self.cache.get_memo(key)

    def remember(self, key: str, value: Any) -> None:
        self.cache.put_memo(key, value)

    def describe(self) -> str:
        return self.inner.describe()
