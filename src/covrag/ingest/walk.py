"""Which files ``covrag index --docs`` reads, and reading each one within limits.

The paths a user names (files, folders, globs) are the *roots*. Only regular files are read, so
that a folder of documents cannot make the index read what the user did not give it:

- A symlink is resolved; one whose target lies outside every root is skipped (its text would
  reach the index, and from there an LLM: ``notes.txt -> ../outside/secret.txt``) unless
  ``follow_symlinks``. A path named on the command line may itself be a symlink: it was chosen.
- Devices, FIFOs and sockets are skipped: ``/dev/zero`` never ends and opening a FIFO waits for
  a writer forever. :func:`read_file` opens without following a symlink and without blocking,
  and checks the open file again, so a file swapped for one of these after the walk is refused
  too.
- A file over ``max_bytes`` is skipped; at most ``max_bytes + 1`` bytes of it are ever read.
- Symlink loops (a file pointing at itself, a folder at one that holds it) and folders nested
  deeper than :data:`MAX_DEPTH` levels are skipped. A folder reached twice is searched once.

Hidden files and folders (``.git``) and covrag index folders are not searched. Every skip is a
:class:`Missing` with a ``kind`` and a reason, which the CLI lists and ``documents.json`` keeps.
"""

from __future__ import annotations

import errno
import fnmatch
import glob
import os
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from covrag.files import special_kind
from covrag.ingest.readers import METADATA, SUPPORTED, UnreadableError
from covrag.retrieve.versions import POINTER

#: Default per-file size cap (bytes); ``--max-file-mb`` changes it.
DEFAULT_MAX_BYTES = 100_000_000
#: Folders nested deeper than this below a named folder are not searched.
MAX_DEPTH = 100
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Missing:
    """A path that gives no file to read, and why.

    Attributes:
        path: The path as found (a symlink's own path, not its target's).
        reason: Why, in words.
        kind: ``missing``, ``unsupported``, ``outside`` (a symlink out of the roots),
            ``special`` (a device, FIFO or socket), ``too-large``, ``loop``, ``too-deep`` or
            ``unreadable``.
    """

    path: str
    reason: str
    kind: str = "unreadable"


class SkipError(UnreadableError):
    """A file :func:`read_file` refuses; ``kind`` as in :class:`Missing`."""

    def __init__(self, reason: str, kind: str) -> None:
        super().__init__(reason)
        self.kind = kind


def _special(mode: int) -> str:
    return f"{special_kind(mode) or 'a special file'}, not a regular file"


def _too_large(size: int | None, limit: int) -> SkipError:
    got = f"{size:,} bytes" if size is not None else "more bytes"
    return SkipError(f"{got}, over the {limit:,}-byte limit (--max-file-mb)", "too-large")


def read_file(path: str | os.PathLike[str], max_bytes: int = DEFAULT_MAX_BYTES) -> bytes:
    """The bytes of one regular file, reading no more than ``max_bytes + 1`` of them.

    Raises:
        SkipError: the path is now a symlink, a device, FIFO or socket, or the file holds more
            than ``max_bytes`` bytes.
        OSError: the file cannot be opened or read.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink put there after the walk
            raise SkipError("a symlink where a file was found", "outside") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SkipError(_special(info.st_mode), "special")
        if info.st_size > max_bytes:
            raise _too_large(info.st_size, max_bytes)
        chunks: list[bytes] = []
        total = 0
        while total <= max_bytes:
            chunk = os.read(fd, min(_BLOCK, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > max_bytes:  # the file grew since fstat
            raise _too_large(None, max_bytes)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _component(pattern: str, name: str) -> bool:
    """Whether one path component matches one glob component (``*`` skips hidden names)."""
    if name.startswith(".") and not pattern.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pattern)


def _step(pattern: Sequence[str], states: frozenset[int], name: str) -> frozenset[int]:
    """Where in ``pattern`` a glob match can be after one more component (``**``: any number
    of folders, as in :func:`glob.glob` with ``recursive=True``)."""
    nxt: set[int] = set()
    for j in states:
        if j < len(pattern) and pattern[j] == "**":
            if not name.startswith("."):
                nxt.add(j)
        elif j < len(pattern) and _component(pattern[j], name):
            nxt.add(j + 1)
    return _closure(pattern, nxt)


def _closure(pattern: Sequence[str], states: set[int]) -> frozenset[int]:
    todo = list(states)
    while todo:
        j = todo.pop()
        if j < len(pattern) and pattern[j] == "**" and j + 1 not in states:
            states.add(j + 1)
            todo.append(j + 1)
    return frozenset(states)


@dataclass(frozen=True)
class _Dir:
    """A folder waiting to be searched: its path, depth, the folders holding it, and either the
    part of its path that names files (``anchor``) or where a glob match of it stands."""

    path: Path
    real: str
    parts: tuple[str, ...]
    ancestors: frozenset[tuple[int, int]]
    anchor: int | None
    states: frozenset[int] = frozenset()


@dataclass
class _Walker:
    roots: tuple[str, ...]
    follow_symlinks: bool
    found: dict[Path, str] = field(default_factory=dict)
    missing: list[Missing] = field(default_factory=list)
    visited: set[tuple[int, int]] = field(default_factory=set)

    def skip(self, path: Path | str, reason: str, kind: str) -> None:
        self.missing.append(Missing(os.path.abspath(path), reason, kind))

    def target(
        self, path: Path, is_link: bool, within: str | None = None
    ) -> tuple[str, os.stat_result] | None:
        """The real path and status of a found entry, or None (noted) when it is skipped
        (``within``: the real path of the folder that holds an entry that is no symlink)."""
        try:
            if within is not None and not is_link:  # no symlink to resolve: one lstat
                real, info = os.path.join(within, path.name), os.lstat(path)
            else:
                real = os.path.realpath(path, strict=True)
                info = os.stat(real)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                self.skip(path, "a symlink loop", "loop")
            elif exc.errno == errno.ENOENT and is_link:
                self.skip(path, "a symlink to a missing file", "missing")
            else:
                self.skip(path, exc.strerror or type(exc).__name__, "unreadable")
            return None
        if is_link and not self.follow_symlinks and not _inside_any(real, self.roots):
            what = "folder" if stat.S_ISDIR(info.st_mode) else "file"
            reason = f"a symlink to a {what} outside the paths given (--follow-symlinks reads it)"
            self.skip(path, reason, "outside")
            return None
        return real, info

    def search(self, top: _Dir, pattern: Sequence[str] = ()) -> None:
        """Search ``top`` and the folders below it, without recursion."""
        stack = [top]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(folder.path) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                self.skip(folder.path, exc.strerror or type(exc).__name__, "unreadable")
                continue
            below = []
            for entry in entries:
                if entry.name.startswith(".") and folder.anchor is not None:
                    continue
                nxt = self.entry(folder, entry, pattern)
                if nxt is not None:
                    below.append(nxt)
            stack.extend(reversed(below))  # popped in name order

    def entry(self, folder: _Dir, entry: os.DirEntry[str], pattern: Sequence[str]) -> _Dir | None:
        """Note or keep one entry of a folder; a folder to search next is returned."""
        parts = (*folder.parts, entry.name)
        states: frozenset[int] = frozenset()
        matched = False
        if folder.anchor is None:
            states = _step(pattern, folder.states, entry.name)
            matched = len(pattern) in states
            if not matched and not (states and _is_dir(entry)):
                return None  # no glob match here or below
        elif not _is_dir(entry) and not _supported(entry.name):
            return None  # another type inside a folder: ignored without a word
        path = Path(entry.path)
        found = self.target(path, entry.is_symlink(), folder.real)
        if found is None:
            return None
        real, info = found
        if stat.S_ISDIR(info.st_mode):
            if _is_index(path):
                return None
            # a folder a glob matched: its files are named by their path under it
            anchor = len(parts) if matched else folder.anchor
            return self.folder(path, real, parts, info, folder, anchor, states)
        name = entry.name if folder.anchor is None else "/".join(parts[folder.anchor :])
        self.file(path, real, info, name)
        return None

    def folder(
        self,
        path: Path,
        real: str,
        parts: tuple[str, ...],
        info: os.stat_result,
        parent: _Dir,
        anchor: int | None,
        states: frozenset[int],
    ) -> _Dir | None:
        key = (info.st_dev, info.st_ino)
        if key in parent.ancestors:
            self.skip(path, "a symlink loop (a folder inside itself)", "loop")
            return None
        if key in self.visited:
            return None  # reached again through a symlink: searched once
        if len(parts) > MAX_DEPTH:
            self.skip(path, f"nested deeper than {MAX_DEPTH} folders: not searched", "too-deep")
            return None
        self.visited.add(key)
        return _Dir(path, real, parts, parent.ancestors | {key}, anchor, states)

    def file(self, path: Path, real: str, info: os.stat_result, name: str) -> None:
        if not _supported(path.name):
            kinds = ", ".join(SUPPORTED)
            self.skip(path, f"unsupported file type (reads {kinds})", "unsupported")
        elif not stat.S_ISREG(info.st_mode):
            self.skip(path, _special(info.st_mode), "special")
        else:
            self.found.setdefault(Path(real), name)


def _is_dir(entry: os.DirEntry[str]) -> bool:
    """Whether an entry is a folder or a symlink to one (False for a symlink loop)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def _supported(name: str) -> bool:
    return Path(name).suffix.lower() in SUPPORTED or name in METADATA


def _inside_any(real: str, roots: Sequence[str]) -> bool:
    return any(os.path.commonpath([real, root]) == root for root in roots)


def _is_index(folder: Path) -> bool:
    if (folder / POINTER).is_file():
        return True
    return (folder / "manifest.json").is_file() and (folder / "passages.jsonl").is_file()


def _split_glob(spec: str) -> tuple[str, list[str]]:
    """A glob's folder without wildcards, and the components after it."""
    parts = spec.split(os.sep)
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    base = os.sep.join(parts[:first]) or (os.sep if spec.startswith(os.sep) else ".")
    return base, [p for p in parts[first:] if p]


def _root(spec: str) -> str | None:
    """The real path a named path or a glob's base folder stands for (None: none)."""
    base = _split_glob(spec)[0] if glob.has_magic(spec) else spec
    try:
        return os.path.realpath(base, strict=True)
    except OSError:
        return None


def find_files(
    paths: Sequence[str | os.PathLike[str]], *, follow_symlinks: bool = False
) -> tuple[dict[Path, str], list[Missing]]:
    """The supported regular files named by ``paths`` (files, folders searched recursively,
    globs such as ``notes/**/*.md``) and what was skipped, with why.

    Returns:
        Each file, as its real path, with a short name for its ``doc_id``: its path under the
        folder that was named (``notes/tea.md``), or its file name when it was named itself or
        matched by a glob; sorted by path. Files of other types inside a folder are ignored; a
        file of another type named on its own (or matched by a glob) is reported.
    """
    specs = [str(p) for p in paths]
    roots = tuple(r for r in map(_root, specs) if r is not None)
    walker = _Walker(roots, follow_symlinks)
    for spec in specs:
        if glob.has_magic(spec):
            base, pattern = _split_glob(spec)
            if not os.path.isdir(base):
                walker.missing.append(Missing(spec, "no such file or folder", "missing"))
                continue
            before = (len(walker.found), len(walker.missing))
            real = os.path.realpath(base)
            _search_root(walker, Path(base), real, pattern, os.stat(real))
            if (len(walker.found), len(walker.missing)) == before:
                walker.missing.append(Missing(spec, "no file matches", "missing"))
            continue
        if not os.path.lexists(spec):
            walker.missing.append(Missing(spec, "no such file or folder", "missing"))
            continue
        found = walker.target(Path(spec), is_link=os.path.islink(spec))
        if found is None:
            continue
        real, info = found
        if stat.S_ISDIR(info.st_mode):
            _search_root(walker, Path(spec), real, None, info)
        else:
            walker.file(Path(spec), real, info, Path(spec).name)
    return dict(sorted(walker.found.items())), walker.missing


def _search_root(
    walker: _Walker, base: Path, real: str, pattern: list[str] | None, info: os.stat_result
) -> None:
    key = (info.st_dev, info.st_ino)
    walker.visited.add(key)
    if pattern is None:
        walker.search(_Dir(base, real, (), frozenset({key}), 0))
        return
    states = _closure(pattern, {0})
    if len(pattern) in states:  # "notes/**" matches the folder itself
        walker.search(_Dir(base, real, (), frozenset({key}), 0))
    else:
        walker.search(_Dir(base, real, (), frozenset({key}), None, states), pattern)
