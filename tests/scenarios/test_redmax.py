"""The REDMAX reference scenes as registered scenarios (scenarios/redmax.py)."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.formulation import make_formulation
from contactlab.reduced import Tree
from contactlab.reduced.constraints import constraint_errors, scene_constraints
from contactlab.results import load_run, write_run
from contactlab.simulator import Simulator
from scenarios import SCENARIOS

REDMAX = sorted(n for n in SCENARIOS if n.startswith("redmax-"))


def test_every_catalogue_scene_beyond_the_basic_chains_is_registered() -> None:
    expected = {
        "redmax-spherical",
        "redmax-loop",
        "redmax-joint-torque",
        "redmax-joint-limits",
        "redmax-coupled",
        "redmax-coupled-loop",
        "redmax-hybrid",
        "redmax-world-force",
        "redmax-joint-spring",
        "redmax-maximal-hybrid",
        "redmax-universal",
        "redmax-prismatic",
        "redmax-planar",
        "redmax-translational",
        "redmax-free",
        "redmax-cylindrical",
        "redmax-reduced-maximal-hybrid",
        "redmax-spline-curve",
        "redmax-spline-surface",
        "redmax-composite-body",
        "redmax-mesh-body",
        "redmax-gears",
        "redmax-free2d",
        "redmax-mass-springs",
    }
    assert expected <= set(REDMAX)


@pytest.mark.parametrize("name", REDMAX)
def test_scene_starts_on_its_constraints_and_runs_in_its_formulations(name: str) -> None:
    """Loops, couplings and prescribed joints hold at t = 0 (to 1e-12), and one step
    of every declared formulation gives finite states with energy reported."""
    spec = SCENARIOS[name]
    scene = spec.build()
    assert "reduced" in spec.formulations
    tree = Tree.from_scene(scene)
    q0, _ = tree.initial_coordinates()
    err = constraint_errors(tree, scene_constraints(scene, tree), q0)
    assert np.abs(err).max(initial=0.0) < 1e-12
    for form in spec.formulations:
        make_formulation(form, scene)
        solver = "osqp" if name == "redmax-joint-limits" else "kkt"
        run = Simulator(scene, form, "frictionless", solver).run(steps=2)
        assert run.status in ("ok", "inaccurate")
        assert np.isfinite(run.steps["total_energy"]).all()


def test_scene_mass_properties_are_the_references_in_si() -> None:
    """A 10 x 1 x 1 cm link of density 1 g/cm^3 weighs 10 g; the composite body adds a
    cylinder of r = 1 cm, h = 10 cm (pi * 10 g); the mesh link equals the box link."""
    link = SCENARIOS["redmax-joint-torque"].build().bodies[0]
    assert link.mass == pytest.approx(0.01)
    np.testing.assert_allclose(
        np.sort(link.inertia), np.sort([0.01 * 2e-4 / 12, 0.01 * 101e-4 / 12, 0.01 * 101e-4 / 12])
    )
    body = SCENARIOS["redmax-composite-body"].build().bodies[0]
    assert body.mass == pytest.approx(0.01 + np.pi * 0.01)
    mesh = SCENARIOS["redmax-mesh-body"].build().bodies[0]
    np.testing.assert_allclose(np.sort(mesh.inertia), np.sort(link.inertia), rtol=1e-9)


def test_reduced_results_folder_holds_joint_coordinates(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """trajectory.npz of a reduced run carries q and qdot (T+1, nq)."""
    scene = SCENARIOS["redmax-gears"].build()
    run = Simulator(scene, "reduced", "frictionless", "kkt").run(steps=5)
    folder = write_run(run, tmp_path / "gears", plots=False)
    data = load_run(folder).trajectory
    assert data["q"].shape == (6, 2) and data["qdot"].shape == (6, 2)
    np.testing.assert_allclose(data["q"][:, 1], -data["q"][:, 0], atol=1e-12)
