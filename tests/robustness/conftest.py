"""Shared checks of the robustness suite: one line, nothing half-written, nothing lost."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from contactlab.cli import main


class Outcome:
    """Exit status and captured output of one in-process ``contactlab`` call."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    @property
    def error_lines(self) -> list[str]:
        # the one-time notice of a kernel module's first compilation (an empty numba cache,
        # as on a fresh machine) is information, not part of the error report
        return [
            line
            for line in self.err.splitlines()
            if line.strip() and not line.startswith("contactlab: compiling kernels of ")
        ]


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty folder, the current one during the test."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def run_folder(workdir: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A finished run ``r`` of the pendulum (3 steps) in the working folder."""
    argv = ["run", "pendulum", "--steps", "3", "--quiet", "--no-plots", "--out", "r"]
    outcome = call(argv, capsys)
    assert outcome.code == 0, outcome.err
    return workdir / "r"


def call(argv: list[str], capsys: pytest.CaptureFixture[str]) -> Outcome:
    """``contactlab ARGV`` in this process (argparse errors exit through SystemExit)."""
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return Outcome(code, captured.out, captured.err)


def assert_one_line(outcome: Outcome, code: int, pattern: str) -> str:
    """Exit ``code``, exactly one stderr line, no traceback, matching ``pattern`` (a regex)."""
    import re

    lines = outcome.error_lines
    assert outcome.code == code, (outcome.code, outcome.err)
    assert len(lines) == 1, lines
    assert "Traceback" not in outcome.err
    assert re.search(pattern, lines[0]), (pattern, lines[0])
    return lines[0]


def leftovers(root: Path) -> list[str]:
    """Hidden temporary folders or files anywhere under ``root`` (half-written results)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            if ".tmp-" in name or ".old-" in name or name.startswith(".contactlab-probe-"):
                found.append(os.path.join(dirpath, name))
    return found
