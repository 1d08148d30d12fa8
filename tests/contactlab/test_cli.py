"""The command line: `run` checked against the closed form; bad input: one line, exit 2.

Scenario discovery is pointed at the ``test-fall`` scenario of
``particle_fakes.py`` (free spinning spheres, semi-implicit Euler) so that the
facts hold independently of the built-in scenario library; the last tests
run the built-in ``pendulum`` through a subprocess, as a user would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from contactlab import cli
from contactlab import scenario as scenario_registry

try:
    import particle_fakes as pf
except ImportError:  # tests/contactlab imported as a package
    from . import particle_fakes as pf

G = np.array([0.0, 0.0, -9.81])
FAKE = ["--formulation", "test-particle", "--model", "test-free", "--solver", "kkt"]


@pytest.fixture(autouse=True)
def fake_scenarios(monkeypatch):
    monkeypatch.setattr(scenario_registry, "load_scenarios", lambda: dict(pf.SCENARIOS))
    with pf.registered():
        yield


def _fails(capsys, argv, *patterns):
    """Run ``argv``; check exit 2, a single stderr line matching ``patterns``."""
    code = cli.main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert len(err.splitlines()) == 1 and err.startswith("contactlab: error: "), err
    assert "Traceback" not in err
    for pattern in patterns:
        assert pattern in err, (pattern, err)
    return err


def test_run_writes_a_folder_whose_physics_is_right(tmp_path, capsys):
    out = tmp_path / "run"
    code = cli.main(["run", "test-fall", *FAKE, "--duration", "0.5", "--out", str(out)])
    assert code == 0
    assert str(out) in capsys.readouterr().out
    steps = pd.read_csv(out / "steps.csv")
    summary = json.loads((out / "summary.json").read_text())
    traj = np.load(out / "trajectory.npz")
    assert len(steps) == 500 and traj["position"].shape == (501, 1, 3)
    # Total energy: semi-implicit Euler loses exactly m |g|^2 h t / 2 (0.048 J of 23.9 J at
    # t = 0.5 s); the tolerance is that bound plus round-off.
    e0 = summary["initial_metrics"]["total_energy"]
    bound = pf.MASS * 9.81**2 * 1e-3 * steps["t"] / 2
    assert np.all(np.abs(steps["total_energy"] - e0) <= bound + 1e-9)
    assert abs(steps["total_energy"].iloc[-1] - e0) / e0 < 2.1e-3
    # Positions: p0 + v0 t + g t^2 / 2 within the scheme's error h |g| t / 2 (<= 2.5 mm).
    t = traj["t"][:, None]
    exact = np.array([0.0, 0.0, 1.0]) + np.array([0.5, 0.0, 2.0]) * t + 0.5 * G * t**2
    err = np.linalg.norm(traj["position"][:, 0] - exact, axis=1)
    assert np.all(err <= 1e-3 * 9.81 * traj["t"] / 2 + 1e-12)
    assert summary["steps"] == 500 and summary["status"] == "ok"
    assert summary["command"][:3] == ["contactlab", "run", "test-fall"]
    assert (out / "plots" / "energy.png").is_file()


def test_set_changes_the_scene_and_default_out_is_under_scratch(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    argv = ["run", "test-fall", *FAKE, "--steps", "20", "--set", "n=3", "--set", "vx0=-1.5"]
    assert cli.main([*argv, "--quiet", "--no-plots"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert folder.parent == Path("results/scratch")
    assert folder.name.startswith("test-fall-test-particle-test-free-kkt-")
    traj = np.load(folder / "trajectory.npz")
    assert list(traj["body_names"]) == ["ball0", "ball1", "ball2"]
    np.testing.assert_allclose(traj["position"][-1, :, 0], -1.5 * 0.02, atol=1e-12)


@pytest.mark.parametrize(
    ("option", "value", "kind", "known"),
    [
        ("scenario", "no-such-scene", "unknown scenario 'no-such-scene'", "test-fall"),
        ("--model", "no-such-model", "unknown model 'no-such-model'", "test-free"),
        ("--solver", "no-such-solver", "unknown solver 'no-such-solver'", "kkt"),
        ("--formulation", "nope", "unknown formulation 'nope'", "test-particle"),
    ],
)
def test_unknown_names_are_one_line_errors_listing_the_known(
    tmp_path, capsys, option, value, kind, known
):
    argv = ["run", "test-fall", *FAKE, "--steps", "5", "--out", str(tmp_path / "r")]
    if option == "scenario":
        argv[1] = value
    else:
        argv[argv.index(option) + 1] = value
    _fails(capsys, argv, kind, known)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("assignment", "message"),
    [
        ("n=two", "parameter 'n' expects int"),
        ("z0=high", "parameter 'z0' expects float"),
        ("ground=maybe", "parameter 'ground' expects bool"),
        ("mass=3", "has no parameter 'mass'; its parameters are n, z0"),
        ("novalue", "--set expects KEY=VALUE"),
    ],
)
def test_bad_parameters_are_rejected_before_running(tmp_path, capsys, assignment, message):
    argv = ["run", "test-fall", *FAKE, "--steps", "5", "--out", str(tmp_path / "r")]
    _fails(capsys, [*argv, "--set", assignment], message)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
def test_non_finite_state_leaves_no_folder_and_keeps_an_existing_one(tmp_path, capsys):
    out = tmp_path / "r"
    argv = ["run", "test-fall", *FAKE, "--steps", "5", "--out", str(out), "--no-plots"]
    # the divergence guard refuses a scene beyond floating-point range before the first step
    _fails(capsys, [*argv, "--set", "z0=1.797e308", "--set", "vz0=8e307"], "too large to bound")
    assert list(tmp_path.iterdir()) == []
    # unguarded, the state overflows at the first step: reported, nothing written
    argv.append("--no-divergence-guard")
    _fails(capsys, [*argv, "--set", "z0=1.797e308", "--set", "vz0=8e307"], "non-finite E")
    assert list(tmp_path.iterdir()) == []
    out.mkdir()
    (out / "old.txt").write_text("old")
    bad = [*argv, "--force", "--set", "z0=1.797e308", "--set", "vz0=8e307"]
    _fails(capsys, bad, "non-finite")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r"]
    assert [p.name for p in out.iterdir()] == ["old.txt"]


def test_failed_step_names_step_solver_and_fix(tmp_path, capsys):
    argv = ["run", "test-fall", *FAKE, "--steps", "9", "--out", str(tmp_path / "r"), "--no-plots"]
    _fails(
        capsys,
        [*argv, "--model-option", "fail_at=4"],
        "step 4 (t = 0.004 s)",
        "numerical_error",
        "solver 'kkt'",
        "try a smaller --dt",
    )
    assert list(tmp_path.iterdir()) == []


def test_singular_kkt_system_is_a_clear_error(tmp_path, capsys):
    argv = ["run", "test-fall", *FAKE, "--steps", "3", "--out", str(tmp_path / "r"), "--no-plots"]
    _fails(capsys, [*argv, "--set", "pin_twice=true"], "singular", "redundant")
    assert list(tmp_path.iterdir()) == []


def test_existing_out_needs_force(tmp_path, capsys):
    out = tmp_path / "r"
    out.mkdir()
    argv = ["run", "test-fall", *FAKE, "--steps", "3", "--out", str(out), "--no-plots"]
    _fails(capsys, argv, "already exists", "--force")
    assert list(out.iterdir()) == []
    assert cli.main([*argv, "--force", "--quiet"]) == 0
    assert (out / "summary.json").is_file()


def test_bad_dt_and_step_counts(tmp_path, capsys):
    argv = ["run", "test-fall", *FAKE, "--out", str(tmp_path / "r")]
    _fails(capsys, [*argv, "--dt", "-0.001", "--steps", "2"], "--dt must be a positive")
    _fails(capsys, [*argv, "--steps", "0"], "steps must be a positive integer")
    _fails(capsys, [*argv, "--duration", "nan"], "duration must be a positive")
    assert list(tmp_path.iterdir()) == []


def test_argument_errors_are_one_line_too(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["run", "test-fall", "--steps", "3", "--duration", "1"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not allowed with argument" in err[0] and "--help" in err[0]


def test_list_shows_parameters_and_solver_availability(capsys):
    assert cli.main(["list"]) == 0
    text = capsys.readouterr().out
    assert "test-fall" in text and "z0 = 1.0 (float)  initial height [m]." in text
    assert "test-particle" in text and "test-free" in text
    assert "kkt" in text and "available" in text
    assert cli.main(["list", "--json"]) == 0
    cat = json.loads(capsys.readouterr().out)
    assert cat["errors"] == {}
    (fall,) = cat["scenarios"]
    assert {p["name"]: p["default"] for p in fall["parameters"]}["n"] == 1
    for row in cat["solvers"]:  # an unavailable backend always says why
        assert row["available"] or row["reason"]


def test_list_survives_a_missing_solver_layer(monkeypatch, capsys):
    from contactlab import registry

    def missing():
        raise ModuleNotFoundError("No module named 'solvers'", name="solvers")

    monkeypatch.setitem(registry.SECTIONS, "solvers", missing)
    assert cli.main(["list"]) == 0
    captured = capsys.readouterr()
    assert "test-fall" in captured.out and "test-free" in captured.out
    assert "solvers: could not be loaded: ModuleNotFoundError" in captured.err


def test_an_unavailable_solver_says_why(tmp_path, capsys):
    import solvers

    missing = [row for row in solvers.backend_table() if not row["available"]]
    if not missing:
        pytest.skip("every registered solver backend is installed here")
    row = missing[0]
    argv = ["run", "test-fall", *FAKE, "--steps", "2", "--out", str(tmp_path / "r")]
    argv[argv.index("kkt")] = row["name"]
    _fails(capsys, argv, f"solver {row['name']!r} is unavailable", str(row["reason"]))


def test_plot_regenerates_the_figures(tmp_path, capsys):
    out = tmp_path / "r"
    assert cli.main(["run", "test-fall", *FAKE, "--steps", "10", "--out", str(out), "--quiet"]) == 0
    (out / "plots" / "energy.png").unlink()
    assert cli.main(["plot", str(out)]) == 0
    assert (out / "plots" / "energy.png").stat().st_size > 0
    _fails(capsys, ["plot", str(tmp_path / "missing")], "missing' does not exist")
    (out / "summary.json").unlink()
    _fails(capsys, ["plot", str(out)], "summary.json")


# -- the installed command, as a user runs it -----------------------------------------


def _contactlab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    return subprocess.run(
        [sys.executable, "-m", "contactlab", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )


def test_module_entry_point_reports_unknown_scenario(tmp_path):
    proc = _contactlab("run", "no-such-scene", "--steps", "2", cwd=tmp_path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "unknown scenario 'no-such-scene'; known scenarios:" in lines[0]
    assert not (tmp_path / "results").exists()


def test_demo_writes_one_folder_per_demo_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "DEMO_RUNS", (("test-fall", 0.05),))
    monkeypatch.setattr(cli, "run_to_folder", _with_fake_stack(cli.run_to_folder))
    assert cli.main(["demo", "--out", str(tmp_path / "demo"), "--quiet"]) == 0
    data = np.load(tmp_path / "demo" / "test-fall" / "trajectory.npz")
    assert data["t"][-1] == pytest.approx(0.05)
    # Running the demo again replaces its folders instead of failing.
    assert cli.main(["demo", "--out", str(tmp_path / "demo"), "--quiet"]) == 0
    assert str(tmp_path / "demo") in capsys.readouterr().out


def _with_fake_stack(run_to_folder):
    def wrapped(spec, out, **kwargs):
        spec = replace(spec, formulation="test-particle", model="test-free")
        return run_to_folder(spec, out, **{**kwargs, "plots": False})

    return wrapped


def test_pendulum_run_conserves_energy_and_follows_the_pendulum_equation(tmp_path):
    """`contactlab run pendulum --duration 0.5` against the nonlinear pendulum ODE."""
    from scipy.integrate import solve_ivp

    proc = _contactlab(
        "run", "pendulum", "--duration", "0.5", "--out", "p", "--quiet", "--no-plots", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    folder = tmp_path / "p"
    steps = pd.read_csv(folder / "steps.csv")
    summary = json.loads((folder / "summary.json").read_text())
    traj = np.load(folder / "trajectory.npz")
    length, mass, width = (summary["parameters"][k] for k in ("length", "mass", "width"))
    theta0 = np.deg2rad(summary["parameters"]["angle_deg"])
    d = length / 2
    inertia_pivot = mass * (length**2 + width**2) / 12 + mass * d**2
    k = mass * 9.81 * d / inertia_pivot
    t = traj["t"]
    ode = solve_ivp(
        lambda _, y: [y[1], -k * np.sin(y[0])],
        (0, t[-1]),
        [theta0, 0.0],
        t_eval=t,
        rtol=1e-11,
        atol=1e-12,
    )
    theta = ode.y[0]
    exact = np.stack([-d * np.sin(theta), 0 * theta, -d * np.cos(theta)], axis=1)
    # First-order time stepping at h = 1e-3 s: measured 1.7e-4 m after 0.5 s; allow 5e-4 m
    # (0.1 % of the 0.5 m arm).
    assert np.max(np.abs(traj["position"][:, 0] - exact)) < 5e-4
    # Energy: the swing exchanges m g d (1 - cos theta0) = 0.0745 J between kinetic and
    # potential; the total stays within 0.5 % of that (measured 0.19 %).
    exchanged = mass * 9.81 * d * (1 - np.cos(theta0))
    drift = np.abs(steps["total_energy"] - summary["initial_metrics"]["total_energy"])
    assert drift.max() < 5e-3 * exchanged
    assert steps["kinetic_energy"].max() == pytest.approx(exchanged, rel=2e-3)
    assert steps["constraint_error"].max() < 1e-9 and set(steps["status"]) == {"optimal"}
