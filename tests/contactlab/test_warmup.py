"""``contactlab warmup`` compiles every kernel ahead: afterwards every kernel is in the
cache and a new process runs a contact scene without compiling anything."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from contactlab import cli
from contactlab.warmup import kernels, uncompiled

ROOT = Path(cli.__file__).resolve().parent.parent


def test_warmup_leaves_no_kernel_to_compile(capsys, tmp_path):
    assert cli.main(["warmup"]) == 0
    total = sum(len(v) for v in kernels().values())
    assert total >= 90  # the ten kernel modules hold 95 kernels today
    assert uncompiled() == []
    printed = capsys.readouterr().out
    assert f"{total} of {total} kernels compiled or loaded from the cache" in printed
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "contactlab",
            "run",
            "box-stack",
            "--steps",
            "2",
            "--quiet",
            "--no-plots",
            "--out",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert "compiling kernels" not in done.stderr


def test_warmup_prints_no_first_use_line_of_its_own(monkeypatch, capsys):
    # a kernel module compiled by the warm-up would otherwise announce itself and advise
    # running the warm-up, in the middle of the warm-up's own report
    from types import SimpleNamespace

    import solvers.jit as J
    from contactlab.reduced import _general_kernels as K

    monkeypatch.setattr(J, "_announced", set())
    kernel = next(
        v for v in vars(K).values() if getattr(v, "py_func", None) and v.__module__ == K.__name__
    )
    event = SimpleNamespace(data={"dispatcher": kernel})
    J._FirstCompile().on_start(event)
    assert "compiling kernels of contactlab.reduced._general_kernels" in capsys.readouterr().err
    monkeypatch.setattr(J, "_announced", set())
    monkeypatch.setattr("contactlab.warmup.SCENARIO_CASES", [])
    from contactlab.warmup import warmup

    warmup(lambda line: None)
    J._FirstCompile().on_start(event)
    assert capsys.readouterr().err == ""
