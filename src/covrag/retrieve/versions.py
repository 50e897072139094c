"""Index folders that change atomically: versions behind a pointer file, one writer at a time.

The layout of an index folder ``out``::

    out/CURRENT      the name of the live version, e.g. "v-3f2a9c0d1e4b5a67"
    out/v-3f2a.../   a complete index (manifest.json, passages.jsonl, the kind's files);
                     never changed once CURRENT names it
    out/.lock        locked (flock) by the process that is updating the index; holds its pid

**Readers see the old index or the new one.** POSIX has no atomic way to replace a folder:
rename(2) onto a non-empty folder fails, and moving the old one aside first leaves a moment with
no index at all (for good, if the writer dies in between). It does replace a *file* atomically.
So a writer builds the new version in a folder of its own, flushes it to disk (fsync), and
publishes it by writing a new ``CURRENT`` beside the old one, flushing it and renaming it over
the old one (:func:`os.replace`). A reader reads ``CURRENT`` once (:func:`resolve_index`) and
every file from that version, so it never mixes two versions. The version it reads may be
removed by the next update; :func:`~covrag.retrieve.kinds.load_index` then loads the new one.

**One writer.** A writer holds an exclusive :func:`fcntl.flock` on ``.lock`` from before it reads
the previous index until the new one is published (:func:`index_lock`); a second writer is
refused, or waits up to ``wait`` seconds, with an error naming the index and the holder's pid.
The system releases a flock when its process ends, however it ends, so the lock of a killed
writer never blocks the next one. (flock needs a local file system: on NFS it may not exclude.)

**Crashes and full disks.** Until ``CURRENT`` is replaced nothing a reader looks at has changed.
A writer that fails (no space left on the device, an error) removes its half-written version; one
that is killed leaves it, and the next writer removes it, under the lock, with a warning.

An index written before versions existed (its files directly in ``out``) is read as it is and
moves to this layout on its next update.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

from covrag.errors import CovragError, DataError

logger = logging.getLogger(__name__)

POINTER = "CURRENT"
LOCK = ".lock"
_VERSION = re.compile(r"v-[0-9a-f]{16}")
_POINTER_TMP = re.compile(r"\.CURRENT\.[0-9a-f]{16}\.tmp")
_POLL_SECONDS = 0.1


class IndexLockedError(CovragError):
    """Another process is updating the index (it holds the lock)."""


class IndexWriteError(CovragError, OSError):
    """An index could not be written (a full disk, a read-only folder...); the previous index is
    unchanged. It is an :class:`OSError` too, with the ``errno`` of the failure."""

    def __str__(self) -> str:
        return str(self.strerror)


def resolve_index(folder: str | os.PathLike[str]) -> Path:
    """The folder that holds the files of the index ``folder`` now: the version its ``CURRENT``
    names, or ``folder`` itself when it has none (an index written before versions, a version,
    a component of a fused index). Read every file of one load from the folder returned.

    A version that is gone by the time it is looked at was replaced and removed by an update
    between reading the pointer and the look: the pointer is read again, and names the new one.

    Raises:
        DataError: ``CURRENT`` cannot be read, names no version, or names one that is missing
            (and still names it when read again).
    """
    root = Path(folder)
    seen: set[str] = set()
    while True:
        name = _pointer_name(root)
        if name is None:
            return root
        version = root / name
        if version.is_dir():
            return version
        if name in seen:
            raise DataError(
                f"index is incomplete: {POINTER} names {name}, which is missing", path=str(root)
            )
        seen.add(name)


def _pointer_name(root: Path) -> str | None:
    """The version ``CURRENT`` names (None without a pointer)."""
    pointer = root / POINTER
    try:
        name = pointer.read_bytes().decode("utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise DataError(
            f"cannot read the index pointer: {exc.strerror}", path=str(pointer)
        ) from None
    except UnicodeDecodeError:
        name = ""
    if not _VERSION.fullmatch(name):
        raise DataError(f"{POINTER} names no version of this index", path=str(pointer))
    return name


def is_ours(name: str) -> bool:
    """Whether an entry of an index folder is one this module writes (pointer, lock, versions
    and what an interrupted update leaves), not a file of a user's."""
    return name in (POINTER, LOCK) or bool(_VERSION.fullmatch(name) or _POINTER_TMP.fullmatch(name))


def _current(root: Path) -> str | None:
    """The live version's name; None when there is no pointer. A damaged pointer is a
    DataError: a writer then stops rather than take every version for a leftover."""
    return resolve_index(root).name if (root / POINTER).is_file() else None


def _holder(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        pid = ""
    return f"pid {pid}" if pid.isdigit() else "a process that has just started"


def _acquire(fd: int, root: Path, wait: float) -> None:
    import fcntl

    deadline = time.monotonic() + wait
    waited = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise
        holder = _holder(fd)
        if time.monotonic() >= deadline:
            again = f"waited {wait:g} s; " if wait > 0 else ""
            raise IndexLockedError(
                f"{root}: another covrag process ({holder}) is updating this index; "
                f"{again}run again when it has finished"
            )
        if not waited:
            logger.warning("%s: waiting for %s, which is updating this index", root, holder)
            waited = True
        time.sleep(_POLL_SECONDS)


@contextlib.contextmanager
def index_lock(folder: str | os.PathLike[str], wait: float = 0.0) -> Iterator[None]:
    """Hold the index's write lock for the block (the folder is created when missing), after
    removing what an interrupted update left.

    Args:
        folder: The index folder.
        wait: Seconds to wait for another writer to finish (0: refuse at once).

    A folder this call creates is removed again when the block leaves no index in it (a first
    update that fails leaves nothing behind).

    Raises:
        IndexLockedError: another process holds the lock (naming the folder and its pid).
    """
    root = Path(folder)
    created = not root.exists()
    fd = _locked(root, wait)
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        _remove_leftovers(root)
        yield
        os.ftruncate(fd, 0)
    finally:
        if created and [entry.name for entry in os.scandir(root)] == [LOCK]:
            # Removed while still locked: a process waiting on this lock file sees that it is
            # gone once it gets the lock, and starts again (_locked).
            (root / LOCK).unlink()
            root.rmdir()
        os.close(fd)  # releases the lock


def _locked(root: Path, wait: float) -> int:
    """A descriptor of ``root/.lock``, locked (the folder is created when missing)."""
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    while True:
        root.mkdir(parents=True, exist_ok=True)
        fd = os.open(root / LOCK, flags, 0o666)
        try:
            _acquire(fd, root, wait)
            if os.path.samestat(os.fstat(fd), os.stat(root / LOCK)):
                return fd
        except FileNotFoundError:
            pass  # removed by the process that held it, as it left
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _remove_leftovers(root: Path) -> None:
    current = _current(root)
    leftovers = sorted(
        entry.name
        for entry in os.scandir(root)
        if (_VERSION.fullmatch(entry.name) and entry.name != current)
        or _POINTER_TMP.fullmatch(entry.name)
    )
    for name in leftovers:
        _remove(root / name)
    if leftovers:
        logger.warning(
            "%s: removed what an interrupted update left (%s); the index is the one it was "
            "before that update",
            root,
            ", ".join(leftovers),
        )


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _fsync(path: Path, folder: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if folder else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_tree(top: Path) -> None:
    """Flush every file and folder under ``top`` to disk (children before their folder)."""
    for here, _, files in os.walk(top, topdown=False):
        for name in files:
            _fsync(Path(here) / name)
        _fsync(Path(here), folder=True)


def _stage_pointer(root: Path, name: str) -> Path:
    tmp = root / f".{POINTER}.{secrets.token_hex(8)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.write(fd, f"{name}\n".encode("ascii"))
        os.fsync(fd)
    finally:
        os.close(fd)
    return tmp


@contextlib.contextmanager
def new_version(folder: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty folder for a new version of the index ``folder``, and publish it when the
    block ends without error. The caller holds :func:`index_lock`.

    On an error the new version is removed and the index is left as it was; an
    :class:`OSError` (a full disk...) is raised as :class:`IndexWriteError` naming the index.
    """
    root = Path(folder)
    before = _current(root)
    version = root / f"v-{secrets.token_hex(8)}"
    staged: Path | None = None
    try:
        os.mkdir(version)  # honours the umask (mkdtemp would make the index private)
        yield version
        _sync_tree(version)
        staged = _stage_pointer(root, version.name)
        os.replace(staged, root / POINTER)  # the one step that publishes the new version
    except BaseException as exc:
        if staged is not None:
            staged.unlink(missing_ok=True)
        shutil.rmtree(version, ignore_errors=True)
        if isinstance(exc, OSError) and not isinstance(exc, CovragError):
            raise _write_error(exc, root) from exc
        raise
    with contextlib.suppress(OSError):  # the rename is done; this only hastens its flush
        _fsync(root, folder=True)
    _drop_old(root, version.name, upgrade=before is None)


def _write_error(exc: OSError, root: Path) -> IndexWriteError:
    reason = "no space left on the device" if exc.errno == errno.ENOSPC else exc.strerror
    where = f" ({Path(exc.filename).name})" if exc.filename else ""
    return IndexWriteError(
        exc.errno,
        f"{root}: cannot write the index: {reason or type(exc).__name__}{where}; the previous "
        "index (if any) is unchanged",
    )


def _drop_old(root: Path, live: str, upgrade: bool) -> None:
    """Remove the versions ``CURRENT`` no longer names; on the first versioned update of an
    index written before versions, also its files directly in the folder."""
    for entry in os.scandir(root):
        if entry.name in (POINTER, LOCK, live):
            continue
        if _VERSION.fullmatch(entry.name) or (upgrade and not is_ours(entry.name)):
            _remove(Path(entry.path))
