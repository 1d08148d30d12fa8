"""A new user's first commands on every registered scenario.

Facts:

* ``contactlab run S`` with no options (3 steps) succeeds for every scenario,
  with a formulation, model and solver that fit what the scene contains, and
  the summary records which choices were defaulted and why;
* every scenario's parameters survive ``summary.json`` (JSON has no tuples)
  and rebuild the same scene;
* ``contactlab render`` animates a run of every scenario.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from contactlab import cli
from contactlab.experiments.render import frame_indices
from contactlab.models.base import model_class
from contactlab.scenario import can_collide, default_setup, load_scenarios

SCENARIOS = load_scenarios()
NAMES = sorted(SCENARIOS)
STEPS = 3


def run(folder: Path, *args: str) -> int:
    """``contactlab run ARGS`` into ``folder``, quietly and without plots: its exit code."""
    return cli.main(["run", *args, "--out", str(folder), "--quiet", "--no-plots"])


def summary_of(folder: Path) -> dict[str, Any]:
    """The ``summary.json`` of a run folder."""
    return json.loads((folder / "summary.json").read_text())


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[int, Path]]:
    """Every scenario run as a new user would: ``contactlab run S --steps 3``."""
    root = tmp_path_factory.mktemp("first-use")
    out: dict[str, tuple[int, Path]] = {}
    for name in NAMES:
        folder = root / name
        out[name] = (run(folder, name, "--steps", str(STEPS)), folder)
    return out


def _expected_model(name: str) -> tuple[str, ...]:
    """The models that fit the scene by what it contains."""
    scene = SCENARIOS[name].build()
    if any(j.friction is not None for j in scene.joints):
        return ("bisp", "joint-friction-sp")
    if can_collide(scene):
        return ("box-friction",)
    return ("frictionless",)


@pytest.mark.parametrize("name", NAMES)
def test_run_without_options_succeeds_with_fitting_defaults(runs, name):
    code, folder = runs[name]
    assert code == 0
    summary = summary_of(folder)
    assert summary["status"] == "ok", summary["message"]
    assert summary["steps"] == STEPS
    assert summary["formulation"] == SCENARIOS[name].formulations[0]
    assert summary["model"] in _expected_model(name)
    # a direct KKT solve only where the scene has no inequality rows (contact,
    # joint limits, joint friction's bounded impulses)
    scene = SCENARIOS[name].build()
    unilateral = (
        can_collide(scene)
        or any(getattr(c, "unilateral", False) for c in scene.constraints)
        or any(j.friction is not None for j in scene.joints)
    )
    assert (summary["solver"] == "kkt") == (not unilateral)
    assert summary["defaults"]["defaulted"] == ["formulation", "model", "solver"]
    assert (
        summary["defaults"]["reason"] == default_setup(scene, SCENARIOS[name].formulations).reason
    )


def test_given_choices_are_kept_and_not_recorded_as_defaults(tmp_path):
    folder = tmp_path / "run"
    assert run(folder, "box-incline", "--model", "anitescu-hart", "--steps", "2") == 0
    summary = summary_of(folder)
    # anitescu-hart poses a QP with inequality rows: the first backend that fits, not kkt
    assert (summary["model"], summary["solver"]) == ("anitescu-hart", "osqp")
    assert summary["defaults"]["defaulted"] == ["formulation", "solver"]


def test_defaulted_solver_fits_the_model_options(tmp_path):
    """A model given with options and no solver gets a backend that takes the problems
    those options pose: Anitescu--Hart with the exact cone poses cone problems, which the
    polyhedral default (OSQP) cannot take; of the backends that fit the cone it gets the
    exact-cone default, accelerated projected gradient (contactlab.scenario.EXACT_CONE_SOLVER)."""
    folder = tmp_path / "run"
    code = run(
        folder,
        "box-incline",
        "--model",
        "anitescu-hart",
        "--model-option",
        "cone=soc",
        "--steps",
        "2",
    )
    assert code == 0
    summary = summary_of(folder)
    fits = model_class("anitescu-hart").compatible_solvers(cone="soc")
    assert "osqp" not in fits
    assert summary["solver"] == "apgd"
    assert "apgd" in fits
    assert summary["defaults"]["defaulted"] == ["formulation", "solver"]


@pytest.mark.parametrize("name", NAMES)
def test_parameters_survive_summary_json_and_rebuild_the_same_scene(runs, name):
    _, folder = runs[name]
    summary = summary_of(folder)
    spec = SCENARIOS[name]
    assert spec.resolve(summary["parameters"]) == spec.defaults()
    original, rebuilt = spec.build(), spec.build(**summary["parameters"])
    assert rebuilt.params == original.params
    assert [b.name for b in rebuilt.bodies] == [b.name for b in original.bodies]
    np.testing.assert_array_equal(
        [b.mass for b in rebuilt.bodies], [b.mass for b in original.bodies]
    )
    np.testing.assert_array_equal(
        np.array([b.inertia for b in rebuilt.bodies]),
        np.array([b.inertia for b in original.bodies]),
    )
    assert [j.kind for j in rebuilt.joints] == [j.kind for j in original.joints]
    for attr in ("initial_E", "initial_phi", "gravity"):
        a, b = getattr(original, attr), getattr(rebuilt, attr)
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_array_equal(a, b)
    assert (rebuilt.dt, rebuilt.duration) == (original.dt, original.duration)


@pytest.mark.parametrize("name", NAMES)
def test_render_animates_a_run_of_every_scenario(runs, name, tmp_path):
    _, folder = runs[name]
    gif = tmp_path / f"{name}.gif"
    fps = 2.0 / (STEPS * SCENARIOS[name].build().dt)  # two frames over the run
    code = cli.main(
        [
            "render",
            str(folder),
            "--out",
            str(gif),
            "--fps",
            str(fps),
            "--max-frames",
            "2",
            "--size",
            "64",
        ]
    )
    assert code == 0
    t = np.load(folder / "trajectory.npz")["t"]
    with Image.open(gif) as im:
        # Pillow merges consecutive frames that look the same (a resting box)
        assert 1 <= im.n_frames <= len(frame_indices(t, fps, 2)) == 2
        pixels = np.asarray(im.convert("L"))
    # something was drawn: the frame is not one uniform colour
    assert pixels.min() < pixels.max()


def test_a_given_step_size_is_the_scene_step_size_parameter_recorded(tmp_path):
    # ball-drop's set-up depends on its `dt` parameter: --dt sets it, so that the
    # summary's parameters do not contradict the step size used
    folder = tmp_path / "run"
    assert run(folder, "ball-drop", "--dt", "0.002", "--steps", "2") == 0
    summary = summary_of(folder)
    assert summary["dt"] == summary["parameters"]["dt"] == 0.002
