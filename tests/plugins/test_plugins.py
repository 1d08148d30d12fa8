"""Plug-ins from a package outside the repository, found through entry points only.

``contactlab_demo_plugin`` (next to this file, one module per plug-in) is made
an installed distribution by writing its ``.dist-info`` folder (``METADATA``
and ``entry_points.txt``) into a temporary directory on ``sys.path``; nothing
in contactlab or solvers names it.  Facts:

- ``contactlab list`` (a separate process) lists the friction model, the
  backend, the constraint type, the joint kind, the formulation and the
  scenarios, each with the entry point it came from;
- each plug-in runs from the command line and its run is physically right:
  the backend reproduces ``kkt`` on the pendulum (1e-9); the friction model
  decelerates a sliding cube at ``mu g`` and agrees with the built-in
  ``box-friction``; the constraint holds a cube at its height while it glides
  at constant speed; the helical joint descends with the analytic constant
  acceleration; the pin-slot joint kind, which declares its maximal rows, runs
  in both formulations and they converge to each other at first order in h;
  the particle formulation follows the exact semi-implicit Euler parabola and
  agrees with the maximal formulation.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import solvers
from contactlab import cli
from contactlab.formulation import FORMULATIONS
from contactlab.joints.body_constraints import CONSTRAINTS
from contactlab.joints.kinds import JOINTS
from contactlab.models.base import MODELS
from contactlab.scenario import SCENARIOS
from solvers.backend_registry import BACKENDS

HERE = Path(__file__).parent
REGISTRIES = (FORMULATIONS, MODELS, CONSTRAINTS, JOINTS, SCENARIOS, BACKENDS)
G = 9.81


def _write_dist_info(root: Path) -> None:
    sys.path.insert(0, str(HERE))
    try:
        from contactlab_demo_plugin import ENTRY_POINTS
    finally:
        sys.path.remove(str(HERE))
    info = root / "contactlab_demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: contactlab-demo-plugin\nVersion: 0.1\n"
    )
    lines = []
    for group, entries in ENTRY_POINTS.items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in entries.items()]
        lines.append("")
    (info / "entry_points.txt").write_text("\n".join(lines))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory holding the plug-in's metadata, on ``sys.path`` with the package."""
    root = tmp_path_factory.mktemp("site")
    _write_dist_info(root)
    sys.path[:0] = [str(root), str(HERE)]
    for registry in REGISTRIES:
        registry.reload()
    yield root
    for path in (str(root), str(HERE)):
        sys.path.remove(path)
    for registry in REGISTRIES:
        registry.reload()


def _run(tmp_path: Path, name: str, *argv: str) -> dict[str, np.ndarray]:
    out = tmp_path / name
    code = cli.main(["run", *argv, "--out", str(out), "--no-plots", "--quiet"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "ok"
    with np.load(out / "trajectory.npz") as data:
        return dict(data)


def test_contactlab_list_shows_every_plug_in(site: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(HERE)]))
    proc = subprocess.run(
        [sys.executable, "-m", "contactlab", "list", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=600,
    )
    cat = json.loads(proc.stdout)
    assert not cat["errors"]
    expected = {
        "models": "plugin-box-lcp",
        "solvers": "plugin-dense-kkt",
        "constraints": "plugin-fixed-height",
        "joints": "plugin-pin-slot",
        "formulations": "plugin-particle",
    }
    for section, name in expected.items():
        row = next(r for r in cat[section] if r["name"] == name)
        assert row["origin"].startswith(f"entry point {name!r}"), row
    scenarios = {r["name"] for r in cat["scenarios"]}
    assert {"plugin-glide", "plugin-screw", "plugin-slot", "plugin-throw"} <= scenarios
    assert "plugin-helical" in {r["name"] for r in cat["joints"]}
    backend = next(r for r in cat["solvers"] if r["name"] == "plugin-dense-kkt")
    assert backend["available"]


def test_the_backend_reproduces_kkt_and_fits_by_its_flags(site: Path, tmp_path: Path) -> None:
    assert solvers.fit("plugin-dense-kkt", "eq_qp").ok
    assert not solvers.fit("plugin-dense-kkt", "qp").ok  # declared equality_only
    argv = ("pendulum", "--model", "frictionless", "--steps", "200")
    ours = _run(tmp_path, "dense", *argv, "--solver", "plugin-dense-kkt")
    ref = _run(tmp_path, "kkt", *argv, "--solver", "kkt")
    # two exact solves of the same 5-row KKT system: equal to rounding
    np.testing.assert_allclose(ours["twist"], ref["twist"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(ours["position"], ref["position"], rtol=0, atol=1e-9)


def test_the_friction_model_decelerates_at_mu_g(site: Path, tmp_path: Path) -> None:
    argv = ("box-slide", "--set", "v0=2.0", "--set", "mu=0.3", "--steps", "60")
    ours = _run(tmp_path, "plugin", *argv, "--model", "plugin-box-lcp", "--solver", "pgs")
    ref = _run(tmp_path, "box", *argv, "--model", "box-friction", "--solver", "pgs")
    t = ours["t"]
    v = np.einsum("tij,tj->ti", ours["rotation"][:, 0], ours["twist"][:, 0, 3:])
    # sliding for 2 / (0.3 g) = 0.68 s > 0.3 s: each step removes mu g h of speed; PGS stops at
    # residual 1e-6 per step, so 60 steps stay within 1e-4 m/s of v0 - mu g t
    settled = t > 0.02  # the first steps settle the cube onto the ground
    np.testing.assert_allclose(v[settled, 0], 2.0 - 0.3 * G * t[settled], atol=1e-4)
    np.testing.assert_allclose(ours["position"], ref["position"], atol=1e-5)


def test_the_constraint_holds_the_height(site: Path, tmp_path: Path) -> None:
    run = _run(tmp_path, "glide", "plugin-glide", "--model", "frictionless", "--solver", "kkt")
    t, p = run["t"], run["position"][:, 0]
    # the one row cancels gravity exactly (it is linear in the velocity): no drift, no fall
    np.testing.assert_allclose(p[:, 2], 1.0, atol=1e-9)
    np.testing.assert_allclose(p[:, 0], 0.7 * t, atol=1e-9)


def test_the_joint_kind_descends_with_the_analytic_acceleration(site: Path, tmp_path: Path) -> None:
    argv = ("plugin-screw", "--formulation", "reduced", "--model", "frictionless")
    run = _run(tmp_path, "screw", *argv, "--solver", "kkt")
    pitch, mass, side, h = 0.05, 1.5, 0.2, 1e-2
    inertia = mass * side**2 / 6.0
    # theta'' = -m g p / (I_zz + m p^2): gravity's generalized force over the screw's inertia
    accel = -mass * G * pitch / (inertia + mass * pitch**2)
    k = np.arange(run["t"].size)
    theta = accel * h**2 * k * (k + 1) / 2  # semi-implicit Euler, exact for constant accel
    np.testing.assert_allclose(run["q"][:, 0], theta, atol=1e-9)
    np.testing.assert_allclose(run["position"][:, 0, 2], pitch * theta, atol=1e-9)


def test_a_joint_kind_with_maximal_rows_runs_in_both_formulations(
    site: Path, tmp_path: Path
) -> None:
    """The rod on the pin-slot joint, 0.1 s in reduced and maximal coordinates at h and h/2.

    Both are first-order integrators of the same motion, so their gap is O(h): measured
    2.2e-5 m at h = 1 ms and 1.1e-5 m at 0.5 ms.  Halving h must halve it (ratio
    0.5 +- 0.1) and at h = 1 ms it stays under 5e-5 m (the rod tip moves ~4 cm).
    """
    gaps = []
    for dt, steps in (("1e-3", "100"), ("5e-4", "200")):
        argv = ("plugin-slot", "--model", "frictionless", "--solver", "kkt", "--dt", dt)
        runs = [
            _run(tmp_path, f"slot-{form}-{dt}", *argv, "--steps", steps, "--formulation", form)
            for form in ("reduced", "maximal")
        ]
        gaps.append(np.abs(runs[0]["position"] - runs[1]["position"]).max())
    assert gaps[0] < 5e-5
    assert 0.4 < gaps[1] / gaps[0] < 0.6


def test_the_formulation_follows_the_exact_parabola(site: Path, tmp_path: Path) -> None:
    argv = ("plugin-throw", "--model", "frictionless", "--solver", "kkt")
    ours = _run(tmp_path, "particle", *argv, "--formulation", "plugin-particle")
    ref = _run(tmp_path, "maximal", *argv, "--formulation", "maximal")
    h = 1e-2
    k = np.arange(ours["t"].size)[:, None]
    exact = np.array([0.0, 0.0, 1.0]) + k * h * np.array([0.5, 0.0, 2.0])
    exact = exact + h**2 * np.array([0.0, 0.0, -G]) * k * (k + 1) / 2
    np.testing.assert_allclose(ours["position"][:, 0], exact, atol=1e-12)
    np.testing.assert_allclose(ref["position"][:, 0], exact, atol=1e-9)
