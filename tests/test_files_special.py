"""Outputs that are not regular files, and long output names (issue 35: items 4 and 6).

An existing output that is a device, FIFO or socket (or a symlink to one) is refused with one
line naming the option, exit 2, and left as it was: never replaced by a regular file. A legal
file name near the 255-byte limit can be written: the temporary name beside it fits too.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from covrag import files
from covrag.cli import main
from covrag.data import resolve_dataset
from covrag.errors import ConfigError
from covrag.retrieve.versions import resolve_index

FAST = ("--relevance", "order")  # no encoder to load


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    path = tmp_path / "d.jsonl"
    shutil.copyfile(resolve_dataset("argkp2021:dev"), path)
    return path


def select(dataset: Path, *extra: str) -> list[str]:
    return ["select", "--dataset", str(dataset), "--selector", "topk", *FAST, *extra]


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _device(path: Path) -> Path:
    """A character device like ``/dev/null`` (major 1, minor 3), made in ``tmp_path``."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("making a device node needs root")
    return path


def _socket(path: Path) -> Path:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.close()  # the socket file stays
    return path


def _link_to(make: Callable[[Path], Path]) -> Callable[[Path], Path]:
    def link(path: Path) -> Path:
        target = make(path.with_name(path.name + ".target"))
        path.symlink_to(target)
        return path

    return link


SPECIALS = {
    "fifo": (_fifo, "FIFO"),
    "device": (_device, "character device"),
    "socket": (_socket, "socket"),
    "link-to-fifo": (_link_to(_fifo), "FIFO"),
    "link-to-device": (_link_to(_device), "character device"),
}


def _node(path: Path) -> tuple[int, int, int]:
    """What a path is, to see it was not replaced: its type, inode and device numbers."""
    info = os.stat(path)
    return stat.S_IFMT(info.st_mode), info.st_ino, info.st_rdev


def _error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("special", sorted(SPECIALS))
@pytest.mark.parametrize("option", ["--out", "--run-json"])
def test_select_refuses_a_special_output_and_leaves_it(
    dataset: Path,
    tmp_path: Path,
    special: str,
    option: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    make, kind = SPECIALS[special]
    target = make(tmp_path / "out.trec")
    before = _node(target)
    outputs = {"--out": str(tmp_path / "run.trec"), option: str(target)}
    args = select(dataset, *(x for pair in outputs.items() for x in pair))
    assert main(args) == 2
    line = _error_line(capsys)
    assert f"{option} {target}: is a {kind}" in line and "regular file" in line
    assert _node(target) == before
    assert target.is_symlink() == special.startswith("link")
    assert not (tmp_path / "run.trec").exists()


@pytest.mark.parametrize("special", ["fifo", "device", "link-to-fifo"])
def test_report_and_index_refuse_a_special_output(
    dataset: Path, tmp_path: Path, special: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make, kind = SPECIALS[special]
    run = tmp_path / "run.json"
    assert main(select(dataset, "--run-json", str(run), "--out", str(tmp_path / "r"))) == 0
    target = make(tmp_path / "target")
    before = _node(target)
    assert main(["report", str(run), "-o", str(target)]) == 2
    assert f"--out {target}: is a {kind}" in _error_line(capsys)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.txt").write_text("Green tea is brewed at 80 degrees.")
    assert main(["index", "--docs", str(docs), "--out", str(target)]) == 2
    assert f"--out {target}: is a {kind}" in _error_line(capsys)
    assert _node(target) == before


def test_report_writes_to_standard_output_with_a_dash(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run.json"
    assert main(select(dataset, "--run-json", str(run), "--out", str(tmp_path / "r"))) == 0
    capsys.readouterr()
    assert main(["report", str(run), "-o", "-"]) == 0
    page = capsys.readouterr().out
    assert page.lstrip().lower().startswith("<!doctype html") and page.rstrip().endswith("</html>")
    assert not (tmp_path / "-").exists() and not Path("-").exists()


@pytest.mark.parametrize("special", ["fifo", "device", "link-to-fifo"])
def test_atomic_writes_never_replace_a_special_file(tmp_path: Path, special: str) -> None:
    make, kind = SPECIALS[special]
    target = make(tmp_path / "target")
    before = _node(target)
    with pytest.raises(ConfigError, match=f"is a {kind}.*not a regular file"):
        files.atomic_write_text(target, "text")
    with pytest.raises(ConfigError, match=f"is a {kind}"):
        files.write_all({tmp_path / "ok.txt": "text", target: "text"})
    assert _node(target) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in [target, *tmp_path.glob("target.target")]
    )


def test_dev_null_is_refused_and_stays_a_device(
    dataset: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Only once the refusal is known to come before any write is the real /dev/null named
    # (as root, a covrag without it would put a regular file in its place).
    with pytest.raises(ConfigError):
        files.check_outputs([], [("--out", "/dev/null")])
    before = _node(Path("/dev/null"))
    assert main(select(dataset, "--out", "/dev/null")) == 2
    assert "--out /dev/null: is a character device" in _error_line(capsys)
    assert _node(Path("/dev/null")) == before
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


@pytest.mark.parametrize("name", ["r" * 245 + ".trec", "é" * 122 + ".trec"])
def test_an_output_name_near_the_limit_is_written(dataset: Path, tmp_path: Path, name: str) -> None:
    assert len(os.fsencode(name)) >= 249  # legal: at most 255 bytes
    out = tmp_path / name
    assert main(select(dataset, "--out", str(out))) == 0
    assert " Q0 " in out.read_text()  # a TREC run
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["d.jsonl", name])
    assert main(select(dataset, "--out", str(out))) == 0  # and overwritten
    assert len(os.fsencode(files.temporary_path(out, "tmp").name)) <= files.NAME_MAX


def test_an_index_and_a_bench_folder_named_near_the_limit(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("semchunk")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tea.txt").write_text("Green tea is brewed at 80 degrees.")
    index = tmp_path / ("i" * 250)
    for _ in range(2):  # built, then updated in place (a new and an old temporary folder)
        assert main(["index", "--docs", str(docs), "--out", str(index), "--kind", "bm25"]) == 0
        (docs / "tea.txt").write_text((docs / "tea.txt").read_text() + " Again.")
    assert (resolve_index(index) / "passages.jsonl").is_file()
    bench = tmp_path / ("b" * 250)
    args = ["bench", "--dataset", str(dataset), "--selectors", "topk", *FAST]
    assert main([*args, "--out", str(bench)]) == 0, capsys.readouterr().err
    assert (bench / "summary.json").is_file()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
