"""Safe file output: atomic writes, outputs checked against inputs, folders swapped into place.

Every file covrag writes appears complete or not at all: it is written to a temporary file next
to the target and renamed over it (a rename on one file system is atomic). An overwritten file
keeps its permission bits; a new one gets the usual ``0o666`` less the umask. A failure names the
user's path, never the temporary one.

Only regular files are written: an existing output that is a device, FIFO or socket (or a symlink
to one, such as ``/proc/self/fd/1``) is refused, never replaced by a file (as root, ``--out
/dev/null`` would otherwise put a regular file where the system's device was). Temporary names
are kept within the 255-byte limit of a file name, so a target whose own name is near it works.

A result made of several files (``select --out --run-json``) is staged completely before
the first rename (:func:`write_all`), and a result folder (``bench --out``) is built in a
temporary folder beside it and renamed into place at the end (:func:`staged_folder`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from covrag.errors import ConfigError, DataError

PathLike = str | os.PathLike[str]


def _os_error(exc: OSError, path: PathLike) -> OSError:
    """The same error, naming ``path`` (the user's) instead of a temporary file."""
    error = type(exc)(exc.errno, exc.strerror or str(exc), str(path))
    return error


#: The longest file name (bytes) most file systems take.
NAME_MAX = 255


def temporary_path(target: Path, kind: str) -> Path:
    """A new hidden name beside ``target`` (``.NAME.XXXXXXXX.KIND``), its ``NAME`` shortened
    when the whole would pass :data:`NAME_MAX` bytes."""
    token = secrets.token_hex(4)
    room = NAME_MAX - len(os.fsencode(f"..{token}.{kind}"))
    name = target.name
    while len(os.fsencode(name)) > room:
        name = name[:-1]
    return target.parent / f".{name}.{token}.{kind}"


def special_kind(mode: int) -> str | None:
    """What a file of this ``st_mode`` is when it is neither a regular file nor a folder
    (``a character device``, ``a FIFO (named pipe)``...), else None."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kinds = {
        stat.S_ISCHR: "a character device",
        stat.S_ISBLK: "a block device",
        stat.S_ISFIFO: "a FIFO (named pipe)",
        stat.S_ISSOCK: "a socket",
    }
    return next((name for test, name in kinds.items() if test(mode)), "a special file")


def _special(path: Path) -> str | None:
    """:func:`special_kind` of what ``path`` names, following symlinks (None: none there)."""
    try:
        return special_kind(os.stat(path).st_mode)
    except OSError:
        return None  # missing, a broken symlink...: the write itself says what is wrong


def refuse_special(path: PathLike) -> None:
    """Refuse to write over a device, FIFO or socket (or a symlink to one).

    Raises:
        ConfigError: naming ``path`` and what it is.
    """
    kind = _special(Path(path))
    if kind is not None:
        raise ConfigError(
            f"{path}: is {kind}, not a regular file; covrag writes only regular files"
        )


def _stage(target: Path, data: bytes) -> Path:
    """Write ``data`` to a new temporary file next to ``target``; return its path.

    The file is created with mode ``0o666`` (the umask applies) or, when ``target`` exists, with
    the target's permission bits.
    """
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(target.stat().st_mode) if target.is_file() else None
    except OSError as exc:
        raise _os_error(exc, target) from None
    tmp = temporary_path(target, "tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as exc:
        raise _os_error(exc, target) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        if mode is not None:
            os.chmod(tmp, mode)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise _os_error(exc, target) from None
        raise
    return tmp


def _commit(tmp: Path, target: Path) -> None:
    try:
        refuse_special(target)  # checked again: it may have appeared since the start
        os.replace(tmp, target)
    except ConfigError:
        tmp.unlink(missing_ok=True)
        raise
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _os_error(exc, target) from None


def atomic_write_text(path: PathLike, text: str) -> None:
    """Write ``text`` to ``path`` as UTF-8 through a temporary file and a rename."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename.

    The parent folder is created when missing; the temporary file lives next to the target (so
    the rename stays on one file system) and is removed when the write fails. An existing
    target keeps its permission bits.

    Raises:
        OSError: naming ``path`` (a folder in the way, a read-only or full disk...).
        ConfigError: ``path`` is a device, FIFO or socket, or a symlink to one.
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(21, "is a folder, not a file", str(path))
    refuse_special(target)
    _commit(_stage(target, data), target)


def write_all(files: Mapping[Path, str]) -> None:
    """Write several files so that a failure leaves none of them written.

    Every file is staged (written in full next to its target) before the first rename; a
    failure while staging removes what was staged and leaves every target as it was.
    """
    for path in files:
        if path.is_dir():
            raise IsADirectoryError(21, "is a folder, not a file", str(path))
        refuse_special(path)
    staged: list[tuple[Path, Path]] = []
    try:
        for path, text in files.items():
            staged.append((_stage(path, text.encode("utf-8")), path))
    except BaseException:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        raise
    for tmp, path in staged:
        _commit(tmp, path)


# --- reading -----------------------------------------------------------------------------------


def iter_lines(path: PathLike) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each line of a UTF-8 text file (1-based numbers).

    Raises:
        DataError: bytes that are not UTF-8, naming the line and the byte offset in the file.
        OSError: the file cannot be read (a folder, missing, unreadable).
    """
    offset = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                at = offset + exc.start
                raise DataError(
                    f"not UTF-8: byte 0x{raw[exc.start]:02x} at byte offset {at} "
                    f"(column {exc.start + 1})",
                    path=str(path),
                    line=number,
                ) from None
            offset += len(raw)
            yield number, text


# --- outputs against inputs -------------------------------------------------------------------


def _same(a: Path, b: Path) -> bool:
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _inside(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def check_outputs(
    inputs: Iterable[tuple[str, PathLike | None]],
    outputs: Iterable[tuple[str, PathLike | None]],
    folders: Iterable[tuple[str, PathLike | None]] = (),
) -> None:
    """Refuse, before any work, outputs that would write over an input or over each other.

    Args:
        inputs: ``(option, path)`` of what the command reads (``None`` entries are skipped).
        outputs: ``(option, path)`` of the files it writes; each must not be an existing folder.
        folders: ``(option, path)`` of the folders it replaces as a whole; no input may lie
            inside one.

    Raises:
        ConfigError: naming both options and the path; or an output (or output folder) that is
            a device, FIFO or socket, or a symlink to one.
    """
    ins = [(name, Path(p)) for name, p in inputs if p is not None]
    outs = [(name, Path(p)) for name, p in outputs if p is not None]
    dirs = [(name, Path(p)) for name, p in folders if p is not None]
    for name, out in (*outs, *dirs):
        kind = _special(out)
        if kind is not None:
            raise ConfigError(f"{name} {out}: is {kind}; covrag writes only regular files")
    for name, out in outs:
        if out.is_dir():
            raise ConfigError(f"{name} {out}: is a folder; name a file to write")
        for source, path in ins:
            if _same(out, path):
                raise ConfigError(f"{name} {out} is the input {source}: it would be overwritten")
    for name, folder in dirs:
        for source, path in ins:
            if _same(folder, path) or _inside(path, folder):
                raise ConfigError(
                    f"{name} {folder} holds the input {source} {path}: it would be replaced"
                )
    written = outs + dirs
    for i, (name, out) in enumerate(written):
        for other, path in written[i + 1 :]:
            if _same(out, path) or _inside(path, out) or _inside(out, path):
                raise ConfigError(f"{name} and {other} both write {out}")


# --- result folders ---------------------------------------------------------------------------


def _check_replaceable(folder: Path, own: frozenset[str]) -> None:
    if not folder.exists() and not folder.is_symlink():
        return
    if folder.is_symlink() or not folder.is_dir():
        raise ConfigError(f"{folder}: exists and is not a folder")
    if _inside(Path.cwd(), folder):
        raise ConfigError(f"{folder}: holds the current folder; name a folder beside it")
    foreign = sorted(p.name for p in folder.iterdir() if p.name not in own)
    if foreign:
        shown = ", ".join(foreign[:3]) + (" ..." if len(foreign) > 3 else "")
        raise ConfigError(
            f"{folder}: exists and holds files covrag did not write there ({shown}); "
            "name a new or empty folder"
        )


@contextlib.contextmanager
def staged_folder(folder: PathLike, own: Iterable[str]) -> Iterator[Path]:
    """Build a result folder in a temporary folder beside it; rename it into place on success.

    An existing ``folder`` may hold only the entries named in ``own`` (what an earlier run of
    the same command wrote); it is replaced as a whole, so none of its files survive. On any
    error, or when the process is killed, ``folder`` is left as it was (a killed process
    leaves the hidden temporary folder ``.NAME.XXXX.tmp`` beside it).

    Raises:
        ConfigError: ``folder`` exists and is not such a result folder.
        OSError: naming ``folder`` when the temporary folder cannot be made.
    """
    _check_replaceable(Path(folder), frozenset(own))
    target = Path(os.path.abspath(folder))  # "." and "x/.." name their folder
    tmp = temporary_path(target, "tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp.mkdir()
    except OSError as exc:
        raise _os_error(exc, folder) from None
    except BaseException:  # interrupted right after the folder was made
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    try:
        yield tmp
        _swap(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        named = Path(str(exc.filename)) if exc.filename is not None else None
        if named is not None and _inside(named, tmp):  # name the user's folder, not ours
            raise _os_error(exc, Path(folder) / named.relative_to(tmp)) from None
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _swap(tmp: Path, target: Path) -> None:
    """Put the folder ``tmp`` at ``target``, replacing an existing one."""
    old = None
    try:
        if target.exists():
            old = temporary_path(target, "old")
            os.rename(target, old)
        os.rename(tmp, target)
    except OSError as exc:
        if old is not None and not target.exists():
            os.rename(old, target)
        raise _os_error(exc, target) from None
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
