"""What the commands do with files (issue 14): never write over an input, leave nothing that
looks complete after a failure, one clear line for every OS-level error, absurd sizes and
duplicate keys refused up front, permission bits kept."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from covrag import files
from covrag.cli import main
from covrag.data import resolve_dataset
from covrag_lab.cli import main as lab_main

DEV = "argkp2021:dev"
#: Relevance by pool order: no encoder to load, so the commands take a fraction of a second.
FAST = ("--relevance", "order")


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    """A copy of the bundled ArgKP dev split, as the user's own file."""
    path = tmp_path / "d.jsonl"
    shutil.copyfile(resolve_dataset(DEV), path)
    return path


def select(dataset: Path | str, *extra: str) -> list[str]:
    return ["select", "--dataset", str(dataset), "--selector", "topk", *FAST, *extra]


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a failed command printed on stderr."""
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- 2: never write over an input ---------------------------------------------------------------


@pytest.mark.parametrize("option", ["--out", "--run-json"])
def test_select_refuses_to_write_over_its_dataset(
    dataset: Path, tmp_path: Path, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dataset.read_bytes()
    outputs = {"--out": str(tmp_path / "run.trec"), option: str(dataset)}
    args = select(dataset, *(x for pair in outputs.items() for x in pair))
    assert main(args) == 2
    line = error_line(capsys)
    assert option in line and "--dataset" in line and "overwritten" in line
    assert dataset.read_bytes() == before
    assert not (tmp_path / "run.trec").exists()


def test_an_output_through_a_symlink_or_another_spelling_is_the_input(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dataset.read_bytes()
    link = tmp_path / "link.trec"
    link.symlink_to(dataset)
    assert main(select(dataset, "--out", str(link))) == 2
    other = tmp_path / "sub" / ".." / "d.jsonl"
    (tmp_path / "sub").mkdir()
    assert main(select(dataset, "--out", str(other))) == 2
    # A bundled dataset is an input too.
    bundled = resolve_dataset(DEV)
    assert main(select(DEV, "--out", str(bundled))) == 2
    assert dataset.read_bytes() == before
    capsys.readouterr()


def test_two_outputs_on_one_file_are_refused(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "run.trec")
    assert main(select(dataset, "--out", out, "--run-json", out)) == 2
    assert "both write" in error_line(capsys)


def test_every_writing_command_checks_its_inputs(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = dataset.read_bytes()
    run = tmp_path / "run.trec"
    assert main(select(dataset, "--out", str(run))) == 0
    run_text = run.read_text()
    runjson = tmp_path / "run.json"
    assert main(select(dataset, "--out", str(run), "--run-json", str(runjson))) == 0
    capsys.readouterr()
    d = str(dataset)
    commands = [
        (lab_main, ["qrels", "--dataset", d, "--out", d]),
        (main, ["report", str(runjson), "-o", str(runjson)]),
        (main, ["eval-answers", str(runjson), "--no-llm", "--out", str(runjson)]),
        (main, ["index", "--corpus", d, "--out", str(tmp_path)]),
        (main, ["bench", "--dataset", d, "--selectors", "topk", *FAST, "--out", str(tmp_path)]),
        (main, ["ask", "question?", "--corpus", d, "--out", d]),
        (lab_main, ["fit", "lmvu", "--dataset", d, "--out", d]),
        (lab_main, ["train", "coverage", "--datasets", d, "--dev", d, "--out", str(tmp_path)]),
    ]
    for run_main, args in commands:
        assert run_main(args) == 2, args
        line = error_line(capsys)
        assert "overwritten" in line or "replaced" in line, (args, line)
    assert dataset.read_bytes() == before and run.read_text() == run_text
    assert json.loads(runjson.read_text())["topics"]


# --- 5: outputs that look complete are complete -------------------------------------------------


def bench(out: Path, *extra: str) -> list[str]:
    selectors = ("--selectors", "random", "topk")
    return ["bench", "--dataset", DEV, *selectors, *FAST, "--out", str(out), *extra]


_MAIN = "import sys; from covrag.cli import main; sys.exit(main(sys.argv[1:]))"
READY = b"bench computed in its staged folder\n"
# The real CLI, with the bench paused inside its staged folder once its work is done: it prints
# READY and waits on stdin (never answered) for the test's signal.
_PAUSED_BENCH = f"""
import sys
import covrag.cli.bench as bench
from covrag.cli import main

real = bench._bench

def paused(*args):
    result = real(*args)
    sys.stdout.write({READY.decode()!r})
    sys.stdout.flush()
    sys.stdin.readline()
    return result

bench._bench = paused
sys.exit(main(sys.argv[1:]))
"""


def test_a_reused_bench_folder_keeps_no_older_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench"
    assert main(bench(out, "--budgets", "k=5", "k=10")) == 0
    old = sorted(p.name for p in (out / "runs").iterdir())
    assert len(old) == 4 + 2  # random and topk at two budgets, the exact optimum at both
    assert main(bench(out, "--budgets", "k=3", "--no-exact")) == 0
    runs = sorted(p.name for p in (out / "runs").iterdir())
    assert runs == ["random__k=3.trec", "topk__k=3.trec"]
    summary = json.loads((out / "summary.json").read_text())
    assert sorted(summary["run_files"]) == [f"runs/{name}" for name in runs]
    assert [p.name for p in tmp_path.iterdir()] == ["bench"]  # no temporary folder left
    capsys.readouterr()


def test_bench_never_replaces_a_folder_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    assert main(bench(tmp_path)) == 2
    assert "did not write" in error_line(capsys)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_bench_never_replaces_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    for out in (".", str(tmp_path / ".." / tmp_path.name)):
        assert main(bench(Path(out))) == 2
        assert "current folder" in error_line(capsys)
    assert list(tmp_path.iterdir()) == []


def test_report_refuses_a_bench_folder_with_missing_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench"
    assert main(bench(out, "--no-exact")) == 0
    assert main(["report", str(out), "-o", str(tmp_path / "ok.html")]) == 0
    capsys.readouterr()
    next((out / "runs").iterdir()).unlink()
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 2
    assert "incomplete" in error_line(capsys)
    assert not (tmp_path / "r.html").exists()


def _covrag(
    *args: str, limit: Callable[[], None] | None = None, code: str = _MAIN
) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["COLUMNS"] = "1000"

    def prepare() -> None:
        # Ctrl-C as a shell in the foreground gives it: a run started in the background of a
        # non-interactive shell inherits SIGINT ignored, and the child would never see it
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if limit is not None:
            limit()

    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if code != _MAIN else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=prepare,
    )


def _kill_after(process: subprocess.Popen[bytes], seconds: float) -> threading.Timer:
    """A safety net, not a timing window: a hung child is killed, so a read from it ends."""
    timer = threading.Timer(seconds, process.kill)
    timer.daemon = True
    timer.start()
    return timer


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_a_killed_bench_leaves_the_older_bench_as_it_was(
    tmp_path: Path, sig: signal.Signals, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "bench"
    assert main(bench(out, "--no-exact")) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    # The child runs the real bench inside its staged folder, says so on stdout, and waits:
    # the signal lands mid-run, after the work and before the folder is written and renamed.
    process = _covrag(*bench(out, "--selectors", "greedy-coverage"), code=_PAUSED_BENCH)
    timer = _kill_after(process, 120)
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert ready == READY, (ready, process.stderr.read() if process.stderr else b"")
        staged = [p.name for p in tmp_path.iterdir() if p.name != "bench"]
        assert len(staged) == 1 and staged[0].startswith(".bench.") and staged[0].endswith(".tmp")
        process.send_signal(sig)
        code = process.wait(timeout=60)
    finally:
        timer.cancel()
        process.kill()
        process.communicate()
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    leftovers = [p.name for p in tmp_path.iterdir() if p.name != "bench"]
    if sig == signal.SIGINT:
        assert code == 130
        assert leftovers == []
    else:
        assert code == -signal.SIGKILL
        assert leftovers == staged
    assert main(["report", str(out), "-o", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()


def _file_size_limit(limit: int) -> Callable[[], None]:
    def apply() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_bench_that_cannot_write_everything_leaves_the_older_bench(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A disk that fills up while the bench writes (a file-size limit stands in for it)."""
    out = tmp_path / "bench"
    assert main(bench(out, "--no-exact")) == 0
    before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    process = _covrag(*bench(out, "--budgets", "k=5", "k=10"), limit=_file_size_limit(4096))
    _, err = process.communicate(timeout=120)
    assert process.returncode == 2
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and str(out / "summary.json") in lines[0] and ".tmp" not in lines[0]
    after = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before
    assert [p.name for p in tmp_path.iterdir()] == ["bench"]
    capsys.readouterr()


def test_a_failing_run_json_leaves_no_out(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    out = tmp_path / "run.trec"
    assert main(select(dataset, "--out", str(out), "--run-json", str(blocker / "t.json"))) == 2
    assert str(blocker / "t.json") in error_line(capsys)
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl", "file"]


def test_write_all_leaves_every_target_as_it_was_when_one_fails(tmp_path: Path) -> None:
    first = tmp_path / "a.txt"
    first.write_text("old")
    blocked = tmp_path / "f" / "b.txt"
    (tmp_path / "f").write_text("")
    with pytest.raises(OSError) as caught:
        files.write_all({first: "new", blocked: "new"})
    assert caught.value.filename == str(blocked)
    assert first.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "f"]


# --- 6: one clear line with exit 2 for OS-level failures ----------------------------------------


def test_os_failures_are_one_line_naming_the_users_path(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    blocker = tmp_path / "file"
    blocker.write_text("")
    cases = [
        (select(folder, "--out", str(tmp_path / "r.trec")), str(folder)),  # a folder as a file
        (select(dataset, "--out", str(folder)), str(folder)),  # an existing folder as --out
        (select(dataset, "--out", "/proc/covrag.trec"), "/proc/covrag.trec"),
        (select(dataset, "--out", "/proc/x/y/r.trec"), "/proc/x/y/r.trec"),  # parent unmakeable
        (select(dataset, "--out", str(blocker / "sub" / "r.trec")), str(blocker / "sub")),
        (["eval", "--dataset", str(dataset), "--run", str(folder)], str(folder)),
        (bench(Path("/proc/covrag-bench")), "/proc/covrag-bench"),
    ]
    for args, path in cases:
        assert main(args) == 2, args
        line = error_line(capsys)
        assert path in line and ".tmp" not in line, (args, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl", "file", "folder"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only folders")
def test_a_read_only_folder_is_one_line(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        assert main(select(dataset, "--out", str(locked / "r.trec"))) == 2
        assert str(locked / "r.trec") in error_line(capsys)
        assert main(bench(locked / "bench")) == 2
        assert str(locked / "bench") in error_line(capsys)
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o755)


# --- 7 and 9: absurd sizes and duplicate keys ---------------------------------------------------


def test_absurd_sizes_are_refused_up_front(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run.trec"
    assert main(select(dataset, "--out", str(run))) == 0
    capsys.readouterr()
    cases = [
        ["eval", "--dataset", str(dataset), "--run", str(run), "--measures", "P@1000000000000"],
        ["eval", "--dataset", str(dataset), "--run", str(run), "--measures", "RVC@10000000000"],
        [*bench(tmp_path / "b"), "--budgets", "k=99999999999999999999"],
        [*bench(tmp_path / "b"), "--measures", "P@1000000000000"],
        select(dataset, "--out", str(run), "--k", "99999999999999999999"),
        select(dataset, "--out", str(run), "--budget-tokens", "99999999999999999999"),
    ]
    for args in cases:  # refused by the size check, before anything of that size is built
        assert main(args) == 2, args
        assert "too large" in error_line(capsys)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--selectors", "mmr(lam=0.5, lam=0.6)"], "given twice"),
        (["--selectors", "topk", "--budgets", "k=10,k=5"], "given twice"),
    ],
)
def test_duplicate_keys_are_errors(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--dataset", DEV, *FAST, *args]) == 2
    assert message in error_line(capsys)


def test_overwritten_files_keep_their_permission_bits(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.trec"
    out.write_text("")
    out.chmod(0o640)
    assert main(select(dataset, "--out", str(out))) == 0
    assert stat.S_IMODE(out.stat().st_mode) == 0o640 and out.read_text()
    out.chmod(0o604)
    files.atomic_write_text(out, "x")
    assert stat.S_IMODE(out.stat().st_mode) == 0o604
    # A new file gets 0o666 less the umask, as open() would give it (not mkstemp's 0o600).
    umask = os.umask(0o022)
    try:
        files.atomic_write_text(tmp_path / "new.txt", "x")
    finally:
        os.umask(umask)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o644
    capsys.readouterr()
