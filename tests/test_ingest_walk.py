"""What ``covrag index --docs`` may read (issue 35: items 2, 3 and the walker's tracebacks): only
regular files inside the paths given; symlinks out of them, devices, FIFOs, files over the size
cap, symlink loops and folders nested too deep are skipped, listed at the end of the run and kept
in ``documents.json`` with their kind."""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from covrag.cli import main
from covrag.ingest import find_files, read_documents, update_index
from covrag.retrieve.versions import resolve_index

pytest.importorskip("semchunk")

SECRET = "the launch code is swordfish"
TEA = "Green tea is brewed with water at about 80 degrees, which keeps it from turning bitter."


def _folder(tmp_path: Path) -> Path:
    """``docs/tea.txt`` beside ``outside/secret.txt``."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.txt").write_text(TEA)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret.txt").write_text(SECRET)
    return docs


def _passages(index: Path) -> str:
    return (resolve_index(index) / "passages.jsonl").read_text()


def _skips(index: Path) -> dict[str, str]:
    """``{file name: kind}`` of what ``documents.json`` says was skipped."""
    listing = read_documents(index)
    assert listing is not None
    return {Path(s.source).name: str(s.kind) for s in listing.skipped}


def _index(docs: Path | str, out: Path, *extra: str) -> int:
    return main(["index", "--docs", str(docs), "--out", str(out), *extra])


def test_a_symlink_out_of_the_folder_is_skipped_unless_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _folder(tmp_path)
    (docs / "notes.txt").symlink_to("../outside/secret.txt")
    (docs / "more").symlink_to("../outside", target_is_directory=True)
    (docs / "also.txt").symlink_to("tea.txt")  # inside the folder: read (once)
    index = tmp_path / "idx"
    assert _index(docs, index) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "swordfish" not in _passages(index)
    assert TEA in _passages(index)
    assert _skips(index) == {"notes.txt": "outside", "more": "outside"}
    assert f"skipped {docs / 'notes.txt'}: a symlink to a file outside" in printed
    assert "--follow-symlinks" in printed and "1 skipped" not in printed
    # Asked for, the link is read.
    assert _index(docs, index, "--follow-symlinks") == 0
    assert SECRET in _passages(index)
    listing = read_documents(index)
    assert listing is not None and listing.limits["follow_symlinks"] is True
    # A symlink named on its own is the user's choice: read.
    assert _index(docs / "notes.txt", tmp_path / "named") == 0
    assert SECRET in _passages(tmp_path / "named")


def test_a_glob_cannot_leave_its_folder_through_a_symlink(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    (docs / "notes.txt").symlink_to("../outside/secret.txt")
    files, missing = find_files([str(docs / "*.txt")])
    assert list(files.values()) == ["tea.txt"]
    assert [(Path(m.path).name, m.kind) for m in missing] == [("notes.txt", "outside")]


def _limited() -> None:  # pragma: no cover - runs in the child process
    gib = 1 << 30
    resource.setrlimit(resource.RLIMIT_AS, (3 * gib, 3 * gib))


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom", "fifo", "link-to-fifo"])
def test_devices_and_fifos_are_skipped_never_read(tmp_path: Path, special: str) -> None:
    """Run as a separate process with a memory limit and a timeout: reading ``/dev/zero``
    would fill memory, and opening a FIFO would wait for a writer forever."""
    docs = _folder(tmp_path)
    paths = [str(docs)]
    # Each run: its options and the kinds of skip expected. Followed, a symlink out of the
    # folder is stopped by its target's type.
    runs = [([], {"outside"}), (["--follow-symlinks"], {"special"})]
    if special.startswith("/dev/"):
        (docs / "zero.txt").symlink_to(special)
        (tmp_path / "also").mkdir()
        os.symlink(special, tmp_path / "also" / "named.txt")
        paths.append(str(tmp_path / "also" / "named.txt"))  # named on its own: refused too
        runs[0] = ([], {"special"})  # the device is named: a link to it is in the paths given
    elif special == "fifo":
        os.mkfifo(docs / "pipe.txt")
        server = socket.socket(socket.AF_UNIX)
        server.bind(str(docs / "sock.txt"))
        server.close()  # the socket file stays
        runs = [([], {"special"})]
    else:
        os.mkfifo(tmp_path / "outside" / "pipe.txt")
        (docs / "pipe.txt").symlink_to("../outside/pipe.txt")
    for options, kinds in runs:
        index = tmp_path / "idx"
        done = subprocess.run(
            [sys.executable, "-m", "covrag.cli", "index", "--out", str(index), *options]
            + ["--docs", *paths],
            capture_output=True,
            text=True,
            timeout=120,
            preexec_fn=_limited,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert done.returncode == 0, done.stderr
        assert TEA in _passages(index)
        assert set(_skips(index).values()) == kinds, _skips(index)
        assert "skipped" in done.stdout


def test_read_file_reads_at_most_one_byte_past_the_cap(tmp_path: Path) -> None:
    from covrag.ingest.walk import SkipError, read_file

    big = tmp_path / "big.txt"
    big.write_bytes(b"tea " * 1000)
    assert read_file(big, 4000) == b"tea " * 1000
    with pytest.raises(SkipError, match="4,000 bytes, over the 3,999-byte limit") as caught:
        read_file(big, 3999)
    assert caught.value.kind == "too-large"
    # /proc files say they are empty and are not: the cap holds while reading.
    with pytest.raises(SkipError, match="over the 10-byte limit"):
        read_file("/proc/self/status", 10)
    for special in ("/dev/zero", "/dev/null"):
        with pytest.raises(SkipError, match="a character device"):
            read_file(special)
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(SkipError, match="FIFO"):
        read_file(tmp_path / "pipe")  # opened without waiting for a writer


def test_files_over_the_size_cap_are_skipped_and_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _folder(tmp_path)
    (docs / "big.txt").write_text("Black tea is fully oxidised. " * 40_000)  # 1.16 MB
    index = tmp_path / "idx"
    assert _index(docs, index, "--max-file-mb", "1") == 0
    assert _skips(index) == {"big.txt": "too-large"}
    assert "over the 1,000,000-byte limit" in " ".join(capsys.readouterr().out.split())
    listing = read_documents(index)
    assert listing is not None and listing.limits["max_file_bytes"] == 1_000_000
    assert _index(docs, index) == 0  # the default cap (100 MB) takes it
    assert _skips(index) == {}
    for bad in ("0", "-1", "nan", "1e9"):
        assert _index(docs, index, "--max-file-mb", bad) == 2
        err = capsys.readouterr().err
        assert "--max-file-mb" in err and "Traceback" not in err


def test_symlink_loops_are_skipped_with_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = _folder(tmp_path)
    (docs / "self.txt").symlink_to("self.txt")
    (docs / "ping.txt").symlink_to("pong.txt")
    (docs / "pong.txt").symlink_to("ping.txt")
    (docs / "sub").mkdir()
    (docs / "sub" / "up").symlink_to("..", target_is_directory=True)
    index = tmp_path / "idx"
    assert _index(docs, index) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    assert _skips(index) == {
        "self.txt": "loop",
        "ping.txt": "loop",
        "pong.txt": "loop",
        "up": "loop",
    }
    assert TEA in _passages(index)
    # Named on its own, a loop is one skipped path too.
    files, missing = find_files([docs / "self.txt", str(docs / "**" / "*.txt")])
    assert list(files.values()) == ["tea.txt"]
    assert {m.kind for m in missing} == {"loop"}


def _nest(top: Path, depth: int) -> None:
    """``top/d/d/.../d/deep.txt``, ``depth`` folders down, made without long paths."""
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=fd)
            inner = os.open("d", os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
        out = os.open("deep.txt", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"Deep down there is tea too.")
        os.close(out)
    finally:
        os.close(fd)


def _unnest(top: Path) -> None:
    """Remove what :func:`_nest` made, a level at a time (pytest's own clean-up of old
    temporary folders recurses, and would fail on 1,100 levels)."""
    while (top / "d").is_dir():
        if (top / "d" / "d").is_dir():
            os.rename(top / "d" / "d", top / "next")
        shutil.rmtree(top / "d")
        if (top / "next").is_dir():
            os.rename(top / "next", top / "d")


@pytest.fixture
def nested(tmp_path: Path) -> Iterator[Path]:
    docs = tmp_path / "docs"
    _nest(docs, 1100)
    yield docs
    _unnest(docs)


def test_a_folder_nested_1100_deep_is_cut_with_a_note(
    tmp_path: Path, nested: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = nested
    (docs / "tea.txt").write_text(TEA)
    for spec in (str(docs), str(docs / "**" / "*.txt")):
        index = tmp_path / "idx"
        assert _index(spec, index) == 0, capsys.readouterr().err
        assert _skips(index) == {"d": "too-deep"}
        assert TEA in _passages(index)
    # Within the limit, the deepest file is read.
    from covrag.ingest.walk import MAX_DEPTH

    _nest(tmp_path / "shallow", MAX_DEPTH)
    files, missing = find_files([tmp_path / "shallow"])
    assert list(files.values()) == ["d/" * MAX_DEPTH + "deep.txt"] and missing == []


def test_globs_name_files_as_before(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    (docs / "guides").mkdir()
    (docs / "guides" / "coffee.md").write_text("# Coffee\n\nCoffee has caffeine.")
    (docs / ".drafts").mkdir()
    (docs / ".drafts" / "draft.md").write_text("# Draft\n\nNot yet.")
    (docs / "slides.pptx").write_bytes(b"PK")
    files, missing = find_files([str(docs / "**" / "*.md")])
    assert list(files.values()) == ["coffee.md"] and missing == []
    files, missing = find_files([str(docs / "*")])  # a matched folder is searched under it
    assert sorted(files.values()) == ["coffee.md", "tea.txt"]
    assert [(Path(m.path).name, m.kind) for m in missing] == [("slides.pptx", "unsupported")]
    files, _ = find_files([str(docs / ".drafts" / "*.md")])  # a hidden folder named: searched
    assert list(files.values()) == ["draft.md"]
    files, _ = find_files([str(docs / "**")])
    assert sorted(files.values()) == ["guides/coffee.md", "tea.txt"]
    files, missing = find_files([str(docs / "*.pdf")])
    assert files == {} and [(m.reason, m.kind) for m in missing] == [("no file matches", "missing")]


def test_documents_json_without_kinds_and_limits_still_reads(tmp_path: Path) -> None:
    docs = _folder(tmp_path)
    (docs / "empty.txt").write_text("")
    index = tmp_path / "idx"
    report = update_index([docs], index)
    assert [(Path(s.source).name, s.kind) for s in report.skipped] == [("empty.txt", "unreadable")]
    data = json.loads((resolve_index(index) / "documents.json").read_text())
    del data["limits"]
    for skip in data["skipped"]:
        del skip["kind"]
    (resolve_index(index) / "documents.json").write_text(json.dumps(data))
    again = update_index([docs], index)  # an index written before this change updates
    assert again.written and again.reused == report.parsed
