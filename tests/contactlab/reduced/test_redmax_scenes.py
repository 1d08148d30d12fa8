"""Physical facts on the REDMAX reference scenes (scenarios/redmax.py) in reduced coordinates."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.reduced import Tree, energies, forward_kinematics, simulate_adaptive
from contactlab.reduced.constrained_dynamics import simulate_constrained
from contactlab.reduced.constraints import scene_constraints
from contactlab.simulator import Simulator
from scenarios import SCENARIOS

#: conservative scenes (no damping, no driving); the constrained ones integrate the
#: acceleration-level KKT system (eq. 2.94/2.96) without Baumgarte terms
CONSERVATIVE = [
    "redmax-spherical",
    "redmax-planar",
    "redmax-cylindrical",
    "redmax-spline-surface",
    "redmax-mesh-body",
    "redmax-free",
    "redmax-free2d",
    "redmax-translational",
    "redmax-coupled",
    "redmax-loop",
]


def _relative_energy_drift(name: str, t_end: float) -> float:
    """Largest |E(t) - E(0)| over max(|E0|, max kinetic energy), DOP853 at rtol 1e-8."""
    scene = SCENARIOS[name].build()
    tree = Tree.from_scene(scene)
    q0, qdot0 = tree.initial_coordinates()
    cons = scene_constraints(scene, tree)
    if cons:
        traj = simulate_constrained(tree, cons, q0, qdot0, t_end, rtol=1e-8, atol=1e-10)
    else:
        traj = simulate_adaptive(tree, q0, qdot0, t_end, rtol=1e-8, atol=1e-10)  # type: ignore[assignment]
    e = [energies(forward_kinematics(tree, q, qd)) for q, qd in zip(traj.q, traj.qdot)]
    total = np.array([x["total_energy"] for x in e])
    kinetic = np.array([x["kinetic_energy"] for x in e])
    assert kinetic.max() > 0  # the scene moves
    return float(np.abs(total - total[0]).max() / max(abs(total[0]), kinetic.max()))


@pytest.mark.parametrize("name", CONSERVATIVE)
def test_conservative_scenes_keep_energy_with_the_adaptive_integrator(name: str) -> None:
    """Over 2 s the total energy stays within 1e-6 of the energy scale; measured
    drifts are 1e-11..6e-9 (the constrained scenes integrate the KKT
    accelerations of eq. 2.94/2.96 without Baumgarte terms)."""
    assert _relative_energy_drift(name, 2.0) < 1e-6


def test_mass_spring_strands_keep_energy() -> None:
    """redmax-mass-springs over 0.5 s (about five periods of the strands' 63 rad/s
    stretching mode; 2 s would take 10 s of test time): within 1e-6."""
    assert _relative_energy_drift("redmax-mass-springs", 0.5) < 1e-6


def test_maximal_and_reduced_converge_to_the_same_trajectory() -> None:
    """redmax-universal (a 3-D chain of universal joints), both formulations with the
    linearly implicit / semi-implicit Euler step, h = 4e-3, 2e-3, 1e-3 over 0.1 s:
    the body positions at the end differ by O(h), the gap halving with h
    (ratios within 1.6..2.4)."""
    scene = SCENARIOS["redmax-universal"].build()
    T = 0.1
    gaps = []
    for h in (4e-3, 2e-3, 1e-3):
        end = {}
        for form in ("maximal", "reduced"):
            run = Simulator(scene, form, "frictionless", "kkt", dt=h).run(steps=round(T / h))
            end[form] = run.trajectory["position"][-1]
        gaps.append(np.abs(end["maximal"] - end["reduced"]).max())
    assert gaps[0] > 1e-6  # a real difference to shrink
    assert 1.6 < gaps[0] / gaps[1] < 2.4, gaps
    assert 1.6 < gaps[1] / gaps[2] < 2.4, gaps


def test_translational_plate_keeps_its_momentum() -> None:
    """redmax-translational: no gravity and no external force, so the total linear
    momentum keeps its initial value while the swinging links push the plate around
    (adaptive integration over 2 s, to 1e-8 of the largest body momentum)."""
    scene = SCENARIOS["redmax-translational"].build()
    tree = Tree.from_scene(scene)
    q0, qdot0 = tree.initial_coordinates()
    traj = simulate_adaptive(tree, q0, qdot0, 2.0, rtol=1e-10, atol=1e-12)
    m = scene.masses
    p, scale, plate = [], 0.0, []
    for q, qd in zip(traj.q, traj.qdot):
        kin = forward_kinematics(tree, q, qd)
        body = m[:, None] * np.einsum("nab,nb->na", kin.E[:, :3, :3], kin.phi[:, 3:])
        p.append(body.sum(axis=0))
        scale = max(scale, np.abs(body).max())
        plate.append(kin.E[0, :3, 3])
    assert np.abs(np.array(p) - p[0]).max() < 1e-8 * scale
    assert np.abs(np.array(plate) - plate[0]).max() > 1e-3  # the plate moved


def test_free_cube_centre_follows_the_parabola() -> None:
    """redmax-free with the adaptive integrator: the centre of mass falls as
    z = -g t^2 / 2 (g = 0.01 m/s^2) while the cube spins (to 1e-9 m)."""
    scene = SCENARIOS["redmax-free"].build()
    tree = Tree.from_scene(scene)
    q0, qdot0 = tree.initial_coordinates()
    t = np.linspace(0.0, 7.0, 8)
    traj = simulate_adaptive(tree, q0, qdot0, 7.0, rtol=1e-10, atol=1e-12, t_eval=t)
    z = np.array([forward_kinematics(tree, q, qd).E[0, 2, 3] for q, qd in zip(traj.q, traj.qdot)])
    np.testing.assert_allclose(z, -0.5 * 0.01 * t**2, atol=1e-9)


def test_world_force_turns_the_damped_chain_to_point_along_it() -> None:
    """redmax-world-force: the +z tip force with body damping brings the chain to rest
    pointing straight up, the root hinge at -90 deg (rotating x to +z about y) and the
    others at 0 (within 1e-3 rad after 20 s), in reduced coordinates."""
    scene = SCENARIOS["redmax-world-force"].build()
    run = Simulator(scene, "reduced", "frictionless", "kkt", dt=5e-2).run(steps=400)
    q = run.trajectory["q"][-1]
    np.testing.assert_allclose(q, [-np.pi / 2, 0.0, 0.0], atol=1e-3)


def test_joint_springs_and_dampers_only_remove_energy() -> None:
    """redmax-joint-spring: kinetic plus spring energy never increases from step to
    step (linearly implicit Euler with implicit dampers), and a good part is gone after 5 s."""
    scene = SCENARIOS["redmax-joint-spring"].build()
    run = Simulator(scene, "reduced", "frictionless", "kkt").run(steps=250)
    e = np.r_[run.initial_metrics["total_energy"], run.steps["total_energy"].to_numpy()]
    assert np.all(np.diff(e) <= 1e-15 * e[0])
    assert e[-1] < 0.75 * e[0]  # measured 0.59
