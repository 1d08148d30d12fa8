"""Signals and concurrency, with real processes: Ctrl-C and SIGKILL at several moments,
two sweeps into one folder, two runs into one folder.

After each: what finished is complete and loads, nothing half-written is
left, and the message says truthfully what was kept.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contactlab.results import load_run

from .conftest import assert_one_line, call, leftovers

CLI = [sys.executable, "-m", "contactlab"]
#: generous waits: the machine running the suite may be loaded
START_TIMEOUT_S = 60.0


def _start(argv: list[str], cwd: Path, log: Path | None = None) -> subprocess.Popen[str]:
    """Start ``contactlab ARGV``; with ``log``, its stderr goes to that file (read as it runs)."""
    return subprocess.Popen(
        [*CLI, *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE if log is None else log.open("w"),
        text=True,
        start_new_session=True,  # its own process group, as a shell job
        # Ctrl-C reaches it as at a terminal even when the suite itself was started in the
        # background, where the shell leaves SIGINT ignored (and a child inherits that)
        preexec_fn=_default_sigint,
    )


def _cli(argv: list[str], cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    """``contactlab ARGV`` run to its end in ``cwd`` (its output captured)."""
    return subprocess.run([*CLI, *argv], cwd=cwd, capture_output=True, text=True, timeout=timeout)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(predicate, what: str, timeout: float = START_TIMEOUT_S) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _children(pid: int) -> list[int]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            out.append(int(entry.name))
    return out


def _alive(pid: int) -> bool:
    try:
        state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


SWEEP = """[sweep]
duration = 0.1
formulations = ["maximal"]
models = ["frictionless"]
solvers = ["kkt"]
dt = [0.004, 0.003, 0.002, 0.001]

[[scenarios]]
name = "pendulum"
"""


def _finished_runs(out: Path) -> list[Path]:
    runs = out / "runs"
    if not runs.is_dir():
        return []
    return [p for p in runs.iterdir() if not p.name.startswith(".")]


def _assert_complete(folders: list[Path]) -> None:
    for folder in folders:
        data = load_run(folder)
        assert len(data.steps) == len(data.t) - 1 > 0


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to follow processes")
class TestSignals:
    @pytest.mark.parametrize("delay", [0.0, 1.0])
    def test_ctrl_c_during_a_run_writes_nothing_and_says_so(self, tmp_path, delay):
        log = tmp_path.parent / f"{tmp_path.name}.err"
        proc = _start(["run", "pendulum", "--steps", "1000000", "--out", "r"], tmp_path, log)
        # the progress bar appears once stepping has gone on for a second
        _wait_for(lambda: "step" in log.read_text(), "the progress bar")
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=START_TIMEOUT_S)
        err = log.read_text()
        assert proc.returncode == 130
        last = [line for line in err.replace("\r", "\n").splitlines() if line.strip()][-1]
        assert last == "contactlab: interrupted; no results folder was written"
        assert "Traceback" not in err
        assert sorted(p.name for p in tmp_path.iterdir()) == []

    def test_sigkill_during_a_run_leaves_nothing_and_the_next_run_succeeds(self, tmp_path):
        log = tmp_path.parent / f"{tmp_path.name}.err"
        proc = _start(["run", "pendulum", "--steps", "1000000", "--out", "r"], tmp_path, log)
        _wait_for(lambda: "step" in log.read_text(), "the progress bar")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=START_TIMEOUT_S)
        assert sorted(p.name for p in tmp_path.iterdir()) == []
        argv = ["run", "pendulum", "--steps", "5", "--quiet", "--no-plots", "--out", "r"]
        done = _cli(argv, tmp_path, 120)
        assert done.returncode == 0, done.stderr
        _assert_complete([tmp_path / "r"])
        assert leftovers(tmp_path) == []

    def test_ctrl_c_during_a_sweep_keeps_finished_runs_and_says_how_many(self, tmp_path):
        (tmp_path / "s.toml").write_text(SWEEP)
        proc = _start(["sweep", "s.toml", "--quiet", "--workers", "2"], tmp_path)
        out = tmp_path / "s"
        _wait_for(lambda: len(_finished_runs(out)) >= 1, "a finished run")
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=START_TIMEOUT_S)
        assert proc.returncode == 130, err
        last = [line for line in err.splitlines() if line.strip()][-1]
        kept = _finished_runs(out)
        assert f"interrupted; {len(kept)} of 4 runs are finished and kept" in last
        _assert_complete(kept)
        assert leftovers(out) == []
        # the same command finishes the others and reuses what was kept
        again = _cli(["sweep", "s.toml", "--quiet", "--workers", "1"], tmp_path, 300)
        assert again.returncode == 0, again.stderr
        assert f"{4 - len(kept)} runs made, {len(kept)} reused" in again.stdout

    def test_sigkill_of_a_sweep_ends_its_workers(self, tmp_path):
        (tmp_path / "s.toml").write_text(SWEEP)
        proc = _start(["sweep", "s.toml", "--quiet", "--workers", "2"], tmp_path)
        _wait_for(lambda: len(_children(proc.pid)) >= 2, "two workers")
        workers = _children(proc.pid)
        os.kill(proc.pid, signal.SIGKILL)  # the main process only: no signal reaches the workers
        proc.wait(timeout=START_TIMEOUT_S)
        _wait_for(lambda: not any(_alive(w) for w in workers), "the workers to end", 10.0)
        _assert_complete(_finished_runs(tmp_path / "s"))
        # a new sweep removes what the killed workers left half-written and completes
        again = _cli(["sweep", "s.toml", "--quiet", "--workers", "1"], tmp_path, 300)
        assert again.returncode == 0, again.stderr
        assert len(_finished_runs(tmp_path / "s")) == 4 and leftovers(tmp_path / "s") == []


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to follow processes")
class TestConcurrency:
    def test_a_second_sweep_into_the_same_folder_refuses_and_touches_nothing(
        self, tmp_path, monkeypatch, capsys
    ):
        (tmp_path / "s.toml").write_text(SWEEP.replace("duration = 0.1", "duration = 0.4"))
        first = _start(["sweep", "s.toml", "--quiet", "--workers", "1"], tmp_path)
        out = tmp_path / "s"
        _wait_for(lambda: (out / ".lock").exists() and (out / "runs").is_dir(), "the first sweep")
        # the second sweep runs in this process (no start-up delay while the first one works)
        monkeypatch.chdir(tmp_path)
        second = call(["sweep", "s.toml", "--quiet", "--workers", "1"], capsys)
        assert_one_line(second, 2, rf"'s' is in use by process {first.pid} on ")
        stdout, err = first.communicate(timeout=300)
        assert first.returncode == 0, err
        assert "4 runs made, 0 reused" in stdout  # none of the first sweep's runs was lost
        _assert_complete(_finished_runs(out))

    def test_two_runs_into_one_folder_one_wins_whole(self, tmp_path):
        argv = ["run", "pendulum", "--steps", "300", "--quiet", "--no-plots", "--out", "r"]
        procs = [_start(argv, tmp_path) for _ in range(2)]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
        codes = sorted(code for code, _ in results)
        assert codes == [0, 2], results
        loser = next(err for code, err in results if code == 2)
        lines = [line for line in loser.splitlines() if line.strip()]
        assert len(lines) == 1 and "'r'" in lines[0], lines
        _assert_complete([tmp_path / "r"])
        assert leftovers(tmp_path) == []
