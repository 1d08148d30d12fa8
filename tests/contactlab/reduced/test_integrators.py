"""Integrators: energy conservation (adaptive), first-order convergence (implicit Euler)."""

from __future__ import annotations

import numpy as np
import pytest

from contactlab.reduced.dynamics import energies
from contactlab.reduced.integrators import simulate_adaptive, step_linearly_implicit
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.tree import Tree

from .scenes import chain, spherical_double_pendulum


def _energy(tree: Tree, q: np.ndarray, qdot: np.ndarray) -> tuple[float, float]:
    e = energies(forward_kinematics(tree, q, qdot))
    return e["total_energy"], e["kinetic_energy"]


@pytest.mark.parametrize(
    "scene",
    [chain(3, q0=[np.pi / 4, np.pi / 2, -np.pi / 3]), spherical_double_pendulum()],
    ids=["chain3", "spherical_double"],
)
def test_adaptive_integration_conserves_energy(scene) -> None:  # noqa: ANN001
    tree = Tree.from_scene(scene)
    q0, qdot0 = tree.initial_coordinates()
    t = np.linspace(0, 2.0, 201)
    traj = simulate_adaptive(tree, q0, qdot0, 2.0, rtol=1e-10, atol=1e-10, t_eval=t)
    E = np.array([_energy(tree, q, qd) for q, qd in zip(traj.q, traj.qdot)])
    # scale: the larger of |E0| and the largest kinetic energy reached (E0 may be near 0)
    scale = max(abs(E[0, 0]), E[:, 1].max())
    assert E[:, 1].max() > 0.1  # the motion is not trivial
    assert np.abs(E[:, 0] - E[0, 0]).max() / scale < 1e-6
    assert np.allclose(traj.t, t)
    if scene.name.startswith("spherical"):
        assert traj.chart_switches > 0  # exponential coordinates passed |q| = pi


def test_dense_and_recursive_trajectories_agree() -> None:
    tree = Tree.from_scene(spherical_double_pendulum())
    q0, qdot0 = tree.initial_coordinates()
    t = np.linspace(0, 0.5, 11)
    a = simulate_adaptive(
        tree, q0, qdot0, 0.5, method="recursive", rtol=1e-10, atol=1e-12, t_eval=t
    )
    b = simulate_adaptive(tree, q0, qdot0, 0.5, method="dense", rtol=1e-10, atol=1e-12, t_eval=t)
    Ea = np.array([forward_kinematics(tree, q).E for q in a.q])
    Eb = np.array([forward_kinematics(tree, q).E for q in b.q])
    np.testing.assert_allclose(Ea, Eb, atol=1e-8)


def test_linearly_implicit_euler_converges_at_first_order() -> None:
    tree = Tree.from_scene(chain(2, q0=[np.pi / 4, 0.3], stiffness=0.5, damping=0.01))
    q0, qdot0 = tree.initial_coordinates()
    T = 0.4
    ref = simulate_adaptive(tree, q0, qdot0, T, rtol=1e-11, atol=1e-12, t_eval=[T])
    errors = []
    for h in (4e-3, 2e-3, 1e-3):
        q, qd = q0.copy(), qdot0.copy()
        for _ in range(round(T / h)):
            q, qd = step_linearly_implicit(tree, q, qd, h)
        errors.append(np.linalg.norm(q - ref.q[-1]))
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all((ratios > 1.7) & (ratios < 2.3)), ratios


def test_implicit_euler_is_stable_for_stiff_joint_springs() -> None:
    """Seed scene 11: k = 1e4, d = 1e3 at h = 2e-2 (far beyond explicit stability)."""
    tree = Tree.from_scene(chain(3, gravity=False, stiffness=1e4, damping=1e3))
    q, qd = np.zeros(3), np.array([1.0, 0.0, 0.0])
    E0 = _energy(tree, q, qd)[0]
    for _ in range(50):
        q, qd = step_linearly_implicit(tree, q, qd, 2e-2)
    assert np.all(np.isfinite(q)) and _energy(tree, q, qd)[0] < 1e-6 * E0


def test_implicit_step_switches_spherical_charts() -> None:
    """The linearly implicit step across a chart switch of the spherical joints follows
    the adaptive reference to 0.3 s.  The error is first order (measured 1.5e-3, 3.0e-3,
    4.5e-3 at h = 1e-4, 2e-4, 3e-4; one switch in each run); 2e-2 allows h = 3e-4."""
    tree = Tree.from_scene(spherical_double_pendulum())
    q, qd = tree.initial_coordinates()
    ref = simulate_adaptive(tree, q, qd, 0.3, rtol=1e-10, atol=1e-12, t_eval=[0.3])
    for _ in range(1000):
        q, qd = step_linearly_implicit(tree, q, qd, 3e-4)
    assert np.linalg.norm(q[:3]) <= np.pi and np.linalg.norm(q[3:]) <= np.pi
    E = forward_kinematics(tree, q).E
    Eref = forward_kinematics(tree, ref.q[-1]).E
    np.testing.assert_allclose(E, Eref, atol=2e-2)
