"""An index that survives: one writer at a time, readers that see the old or the new index, and
a killed writer or a full disk that leaves the previous index readable.

Writers and readers are real processes (``python -m covrag.cli index``, and a paused writer that
holds the real lock); only the full disk is injected, at the file system layer.
"""

from __future__ import annotations

import errno
import json
import os
import random
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from covrag.cli import main
from covrag.errors import DataError
from covrag.ingest import update_index
from covrag.retrieve import BM25Retriever, load_index
from covrag.retrieve.versions import (
    IndexLockedError,
    IndexWriteError,
    index_lock,
    resolve_index,
)
from covrag.types import Passage

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
COVRAG = [sys.executable, "-m", "covrag.cli"]
WORDS = "tea coffee cocoa water leaf bean farm brew cup sleep milk sugar acid heat".split()

#: A writer that takes the index's lock through a real update of ``docs`` and stops after its
#: first file until the file ``go`` appears: argv = docs, index, go.
PAUSED_WRITER = """
import sys, time
from pathlib import Path
from covrag.ingest import update_index

docs, index, go = sys.argv[1:]

def pause(_path):
    while not Path(go).exists():
        time.sleep(0.02)

update_index([docs], index, on_file=pause)
print("done")
"""


def _corpus(path: Path, n: int, seed: int = 0) -> Path:
    """A passage JSONL file of ``n`` passages (``covrag index --docs`` reads it as passages)."""
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(n):
            text = " ".join(rng.choice(WORDS) for _ in range(30)) + f" item{i}"
            handle.write(json.dumps({"id": f"{path.stem}{i}", "text": text}) + "\n")
    return path


def _search(index: Path) -> list[tuple[str, float]]:
    results = load_index(index).search("green tea brew leaf", 5)
    return [(p.id, round(float(p.score or 0), 6)) for p in results]


def _entries(index: Path) -> list[str]:
    return sorted("v-*" if p.name.startswith("v-") else p.name for p in index.iterdir())


def _index(docs: Path, index: Path) -> subprocess.CompletedProcess[str]:
    command = [*COVRAG, "index", "--docs", str(docs), "--out", str(index)]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=ENV)


def _holds_lock(index: Path, pid: int) -> bool:
    try:
        return (index / ".lock").read_text().strip() == str(pid)
    except FileNotFoundError:
        return False


def _wait_for(check: object, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    """A docs folder and an index of it."""
    pytest.importorskip("semchunk")
    docs = tmp_path / "docs"
    docs.mkdir()
    _corpus(docs / "tea.jsonl", 200)
    index = tmp_path / "idx"
    update_index([docs], index)
    return docs, index


def test_a_second_writer_is_refused_naming_the_index_and_the_holder(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    docs, index = built
    before = _search(index)
    _corpus(docs / "more.jsonl", 50, seed=1)
    go = tmp_path / "go"
    first = subprocess.Popen(
        [sys.executable, "-c", PAUSED_WRITER, str(docs), str(index), str(go)],
        env=ENV,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        _wait_for(lambda: _holds_lock(index, first.pid))
        second = _index(docs, index)
        assert second.returncode == 2
        message = " ".join(second.stderr.split())
        assert f"{index}: another covrag process (pid {first.pid}) is updating this index" in (
            message
        )
        assert _search(index) == before  # the index is intact
        with pytest.raises(IndexLockedError, match=f"pid {first.pid}"):
            update_index([docs], index)  # the library says the same
        # A writer that waits gets its turn when the first one is done.
        threading.Timer(0.5, go.touch).start()
        waited = update_index([docs], index, wait=120)
        assert first.wait(timeout=120) == 0
    finally:
        go.touch()
        first.kill()
        first.wait()
    assert waited.documents == 2 and not waited.written  # the first writer did the work
    assert len(load_index(index).passages) == 250
    assert _entries(index) == [".lock", "CURRENT", "v-*"]


def test_the_lock_of_a_killed_writer_does_not_block(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    docs, index = built
    go = tmp_path / "go"
    first = subprocess.Popen(
        [sys.executable, "-c", PAUSED_WRITER, str(docs), str(index), str(go)], env=ENV
    )
    _wait_for(lambda: _holds_lock(index, first.pid))
    first.send_signal(signal.SIGKILL)
    first.wait()
    with index_lock(index):  # at once: the system released the dead process's lock
        pass


def test_a_writer_killed_while_writing_leaves_the_previous_index(
    built: tuple[Path, Path],
) -> None:
    """kill -9 between the first file of the new version and the pointer's swap."""
    docs, index = built
    before, version = _search(index), resolve_index(index)
    (docs / "tea.jsonl").unlink()
    _corpus(docs / "big.jsonl", 30_000, seed=2)  # a second or so of writing
    command = [*COVRAG, "index", "--docs", str(docs), "--out", str(index)]
    writer = subprocess.Popen(command, env=ENV, stderr=subprocess.PIPE)

    def writing() -> bool:
        new = [v for v in index.glob("v-*") if v != version]
        return any(any(v.iterdir()) for v in new) or writer.poll() is not None

    try:
        _wait_for(writing)  # its first files are in the new version
        writer.send_signal(signal.SIGKILL)
    finally:
        writer.kill()
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    assert len(list(index.glob("v-*"))) == 2  # its half-written version is left behind
    assert resolve_index(index) == version and _search(index) == before
    again = _index(docs, index)
    assert again.returncode == 0, again.stderr
    assert "removed what an interrupted update left" in again.stderr
    assert _entries(index) == [".lock", "CURRENT", "v-*"]
    assert len(load_index(index).passages) == 30_000


def _fsize_limit() -> None:  # pragma: no cover - runs in the child process
    resource.setrlimit(resource.RLIMIT_FSIZE, (64_000, 64_000))


def test_a_write_the_file_system_refuses_leaves_the_previous_index(
    built: tuple[Path, Path],
) -> None:
    """A real process whose files may not grow past 64 kB (RLIMIT_FSIZE: EFBIG, as a full
    disk's ENOSPC, from the kernel): the update fails with one clear line."""
    docs, index = built
    before, version = _search(index), resolve_index(index)
    _corpus(docs / "more.jsonl", 2000, seed=3)  # passages.jsonl of ~400 kB
    command = [*COVRAG, "index", "--docs", str(docs), "--out", str(index)]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, env=ENV, preexec_fn=_fsize_limit
    )
    assert done.returncode == 2
    message = " ".join(done.stderr.split())
    assert f"{index}: cannot write the index: File too large" in message
    assert "the previous index (if any) is unchanged" in message
    assert resolve_index(index) == version and _search(index) == before
    assert _entries(index) == [".lock", "CURRENT", "v-*"]  # nothing half-written is left


def test_a_full_disk_mid_update_leaves_the_previous_index(
    built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """ENOSPC from the file system when the new version, written in full, is flushed to disk
    (where delayed allocation and NFS report a full disk)."""
    docs, index = built
    before, version = _search(index), resolve_index(index)
    _corpus(docs / "more.jsonl", 50, seed=4)
    flushed: list[int] = []

    def full(fd: int) -> None:
        flushed.append(fd)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(IndexWriteError) as info:
        update_index([docs], index)
    assert flushed  # the new version was written, and failed as it was flushed
    assert info.value.errno == errno.ENOSPC and isinstance(info.value, OSError)
    assert str(info.value) == (
        f"{index}: cannot write the index: no space left on the device; "
        "the previous index (if any) is unchanged"
    )
    assert main(["index", "--docs", str(docs), "--out", str(index)]) == 2
    assert "no space left on the device" in capsys.readouterr().err
    assert resolve_index(index) == version and _search(index) == before
    assert _entries(index) == [".lock", "CURRENT", "v-*"]
    monkeypatch.undo()
    assert update_index([docs], index).written  # the next run does the update
    assert len(load_index(index).passages) == 250


def test_readers_see_the_old_index_or_the_new_one_never_a_mix(tmp_path: Path) -> None:
    """A reader loads the index again and again while a writer replaces it."""
    index = tmp_path / "idx"
    corpora = [
        tuple(Passage(f"{name}{i}", f"{name} passage number {i} about tea") for i in range(n))
        for name, n in (("a", 300), ("b", 200))
    ]
    BM25Retriever().index(corpora[0]).save(index)
    seen: list[tuple[Passage, ...]] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(load_index(index).passages)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for i in range(30):
            BM25Retriever().index(corpora[i % 2]).save(index)
    finally:
        done.set()
        reader.join()
    assert not errors, errors
    assert seen and all(passages in corpora for passages in seen)


def test_a_failed_first_build_leaves_nothing(tmp_path: Path) -> None:
    pytest.importorskip("semchunk")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "empty.txt").write_text("")
    index = tmp_path / "idx"
    with pytest.raises(DataError, match="no passages"):
        update_index([docs], index)
    assert not index.exists()  # not even the lock file
    (docs / "tea.txt").write_text("Green tea is brewed at 80 degrees.")
    assert update_index([docs], index).passages == 1


def test_a_damaged_pointer_stops_a_writer_before_it_removes_anything(
    built: tuple[Path, Path],
) -> None:
    docs, index = built
    version = resolve_index(index)
    (index / "CURRENT").write_text("garbage\n")
    with pytest.raises(DataError, match="CURRENT names no version"):
        update_index([docs], index)
    assert version.is_dir() and (version / "passages.jsonl").is_file()


def test_a_version_removed_between_reading_the_pointer_and_looking_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race the readers' test found under load: the pointer is read (old version), an
    update swaps it and removes the old version, then the reader looks for the old one."""
    from covrag.errors import DataError
    from covrag.retrieve import versions

    index = tmp_path / "idx"
    BM25Retriever().index([Passage("a0", "tea leaves")]).save(index)
    live = versions.resolve_index(index)
    names = iter(["v-0123456789abcdef", live.name])  # gone, then the new one
    real = versions._pointer_name
    monkeypatch.setattr(versions, "_pointer_name", lambda root: next(names, real(root)))
    assert versions.resolve_index(index) == live
    # a pointer that names the same missing version twice is an incomplete index
    monkeypatch.setattr(versions, "_pointer_name", lambda root: "v-0123456789abcdef")
    with pytest.raises(DataError, match="which is missing"):
        versions.resolve_index(index)
