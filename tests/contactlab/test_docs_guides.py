"""The guide pages that hold whole programs: their code runs as a user would run it.

- ``docs/guide/writing-a-model.md``: the model file of the page, written into a
  folder outside the repository, runs from the command line (a separate
  ``python -m contactlab`` process started in that folder, with the page's own
  command) and is physically right: the sliding cube loses ``mu g`` of speed per
  second, and its run equals the built-in ``box-friction`` model's.
- ``docs/guide/contact-scene.md``: the scene file and the script of the page run
  in a folder outside the repository; the cube stops where the discrete
  Coulomb law puts it, the ball rests on the ground, and ``compare`` runs the
  combinations that fit and skips (with the reason) those that do not.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from contactlab import cli

ROOT = Path(cli.__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "guide"
G = 9.81


def blocks(page: Path, language: str) -> list[str]:
    """The code blocks of ``page`` fenced as ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```", page.read_text(), re.S | re.M)


def _run_from_command_line(folder: Path, command: str) -> None:
    argv = shlex.split(command)
    assert argv[0] == "contactlab"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-m", "contactlab", *argv[1:]],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr


def test_a_model_written_from_the_page_runs_from_the_command_line(tmp_path: Path) -> None:
    from contactlab.results import load_run
    from contactlab.runspec import simulate

    page = GUIDE / "writing-a-model.md"
    (code,) = blocks(page, "python")
    (command,) = [c.strip() for c in blocks(page, "console")]
    assert "my_friction.py:MyBoxFriction" in command
    (tmp_path / "my_friction.py").write_text(code)
    assert not (tmp_path / "my_friction.py").resolve().is_relative_to(ROOT)
    _run_from_command_line(tmp_path, command)
    ours = load_run(tmp_path / "slide-run")
    assert ours.summary["model"] == "my-box-friction"
    t = ours.trajectory["t"]
    assert t.size == 61
    rotation, twist = ours.trajectory["rotation"][:, 0], ours.trajectory["twist"][:, 0]
    v = np.einsum("tij,tj->ti", rotation, twist[:, 3:])  # world-frame velocity
    # sliding for 2 / (0.3 g) = 0.68 s > 0.3 s: each step removes mu g h of speed; PGS stops at
    # residual 1e-6 per step, so 60 steps stay within 1e-4 m/s of v0 - mu g t
    settled = t > 0.02  # the first steps settle the cube onto the ground
    np.testing.assert_allclose(v[settled, 0], 2.0 - 0.3 * G * t[settled], atol=1e-4)
    # the built-in model poses the same LCP: the same motion to the solver's tolerance
    ref = simulate(
        "box-slide", {"v0": 2.0, "mu": 0.3}, model="box-friction", solver="pgs", steps=60
    )
    np.testing.assert_allclose(
        ours.trajectory["position"], ref.trajectory["position"], rtol=0, atol=1e-5
    )


def test_a_model_file_with_a_solver_that_does_not_fit_is_refused(tmp_path: Path) -> None:
    from contactlab.errors import IncompatibleError
    from contactlab.runspec import build_simulator

    (code,) = blocks(GUIDE / "writing-a-model.md", "python")
    path = tmp_path / "my_friction.py"
    path.write_text(code)
    # an LCP with friction blocks: osqp (a QP solver) takes no friction blocks
    with pytest.raises(IncompatibleError, match="backends that fit: .*pgs"):
        build_simulator("box-slide", model=f"{path}:MyBoxFriction", solver="osqp")
    with pytest.raises(Exception, match="defines no 'Missing'"):
        build_simulator("box-slide", model=f"{path}:Missing", solver="pgs")


def test_the_python_scene_page_runs_and_its_numbers_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contactlab.results import load_run

    scene_code, script = blocks(GUIDE / "contact-scene.md", "python")
    (tmp_path / "sliding.py").write_text(scene_code)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "sliding", raising=False)
    namespace: dict[str, object] = {}
    exec(compile(script, str(tmp_path / "script.py"), "exec"), namespace)

    run, scene, comparison = namespace["run"], namespace["scene"], namespace["comparison"]
    assert run.status == "ok"  # type: ignore[attr-defined]
    # discrete Coulomb: the step removes a = mu g h of speed, the cube stops after
    # K = floor(v0 / a) steps at x = h sum_{k=1..K} (v0 - k a)
    v0, mu, h = 2.0, 0.3, 5e-3
    a = mu * G * h
    K = int(np.floor(v0 / a))
    x_discrete = h * (K * v0 - a * K * (K + 1) / 2)
    x_stop = namespace["x_stop"]
    # the first steps settle the cube on the ground (stabilization within the 5 mm margin)
    assert abs(x_stop - x_discrete) < 1e-3  # type: ignore[operator]
    assert abs(x_stop - scene.extras["stopping_distance"]) < v0 * h  # type: ignore[attr-defined,operator]
    # the ball lands and rests with its centre at its radius (penetration corrected)
    assert abs(namespace["z_ball"] - 0.08) < 1e-3  # type: ignore[operator]
    assert (tmp_path / "sliding-run" / "summary.json").is_file()

    table = comparison.table  # type: ignore[attr-defined]
    ran = set(zip(table["model"], table["solver"]))
    assert ran == {("box-friction", "pgs"), ("box-friction", "osqp"), ("anitescu-hart", "osqp")}
    assert set(table["status"]) == {"ok"}
    skipped = comparison.skipped  # type: ignore[attr-defined]
    assert ("anitescu-hart", "pgs") in set(zip(skipped["model"], skipped["solver"]))
    runs = tmp_path / "sliding-compare" / "runs"
    pgs = load_run(runs / "maximal-box-friction-pgs").trajectory["position"]
    osqp = load_run(runs / "maximal-box-friction-osqp").trajectory["position"]
    # one box-friction problem per step, two backends at tolerance 1e-6 or better
    np.testing.assert_allclose(pgs, osqp, rtol=0, atol=1e-6)
    assert abs(pgs[-1, 0, 0] - x_stop) < 1e-6  # type: ignore[operator]
