"""Hyper-reduced coordinates (Sueda's notes §2.6) against the same motion enforced by couplings."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from contactlab.errors import ConfigurationError
from contactlab.reduced import ReducedFormulation, Tree, forward_kinematics
from contactlab.reduced.constrained_dynamics import simulate_constrained
from contactlab.reduced.constraints import Coupling
from contactlab.reduced.hyper import HyperReduced, HyperReducedFormulation, uniform_angles
from contactlab.scene import Scene
from contactlab.simulator import Simulator
from scenarios.basic import _chain


def _chain_tree(n: int = 4) -> Tree:
    bodies, specs = _chain(n, "R", "y", (0.0,))
    return Tree.from_scene(Scene("c", tuple(bodies), tuple(specs)))


def test_equal_angles_match_the_coupled_chain() -> None:
    """A 4-link chain with all hinges at one angle (eq. 2.77, one coordinate) and the
    full chain with couplings q_i = q_(i-1) (KKT accelerations, §2.8) follow the same
    trajectory over 1 s (both DOP853 at rtol 1e-10: agreement to 1e-7 rad), and the
    hyper-reduced energy is conserved to 1e-8 relative."""
    tree = _chain_tree()
    hyper = uniform_angles(tree)
    t = np.linspace(0.0, 1.0, 11)
    _, qR, qRdot = hyper.simulate([0.3], [0.0], 1.0, rtol=1e-10, atol=1e-12, t_eval=t)
    cons = [Coupling(f"joint{i - 1}", f"joint{i}", 1.0, 0.0).bind(tree) for i in range(1, 4)]
    full = simulate_constrained(
        tree, cons, np.full(4, 0.3), np.zeros(4), 1.0, rtol=1e-10, atol=1e-12, t_eval=t
    )
    np.testing.assert_allclose(full.q, np.repeat(qR, 4, axis=1), atol=1e-7)
    assert np.ptp(qR) > 0.5  # it swings
    e = np.array([hyper.energy(a, b) for a, b in zip(qR, qRdot)])
    assert np.abs(e - e[0]).max() < 1e-8 * abs(e[0])


def _sprung_chain(n: int, angle_deg: float) -> Scene:
    """A chain with every hinge at ``angle_deg`` and a joint spring/damper on each
    (so the implicit K_r and D_r of eq. 2.75 enter the step)."""
    bodies, specs = _chain(n, "R", "y", (angle_deg,))
    specs = [replace(s, stiffness=2e-3, damping=1e-5) for s in specs]
    return Scene("sprung", tuple(bodies), tuple(specs))


def test_formulation_step_equals_the_kkt_step_with_couplings() -> None:
    """Linearly implicit Euler (h = 1e-2, 100 steps) on the hyper-reduced chain through
    the simulator equals the full reduced step with couplings q_i = q_(i-1) solved as a
    KKT system: on the subspace the KKT solution is qdot = J_rR qdot_R with
    J_rR^T A J_rR qdot_R = J_rR^T b, the same linear system, so the trajectories agree
    to round-off (1e-10 rad; the chain swings through 0.27 rad)."""
    scene = _sprung_chain(4, 30.0)
    couplings = [Coupling(f"joint{i - 1}", f"joint{i}", 1.0, 0.0) for i in range(1, 4)]
    full = Simulator(scene, ReducedFormulation(scene, constraints=couplings), dt=1e-2)
    hyper = Simulator(scene, HyperReducedFormulation(scene, np.ones((4, 1))), dt=1e-2)
    a, b = full.initial_state(), hyper.initial_state()
    qs = []
    for i in range(100):
        a, _ = full.step(a, i)
        b, rec = hyper.step(b, i)
        qa, qb = np.asarray(a.q), np.asarray(b.q)
        np.testing.assert_allclose(qb, qa, atol=1e-10)
        qs.append(qb[0])
    assert rec.problem.n == 1
    assert np.ptp(qs) > 0.2
    np.testing.assert_allclose(qb, qb[0], atol=1e-13)  # stays on the subspace


def test_formulation_by_name_reads_the_basis_from_the_scene() -> None:
    """ "hyper-reduced" by name with J_rR (and q_offset) set on the scene: a 3-link
    chain whose hinges keep the offsets (0, 0.2, -0.2) rad around one common angle, 20
    steps, equals the formulation built with the same basis explicitly (bit for bit)."""
    bodies, specs = _chain(3, "R", "y", (10.0, 10.0 + np.rad2deg(0.2), 10.0 - np.rad2deg(0.2)))
    offset = np.array([0.0, 0.2, -0.2])
    scene = Scene("c", tuple(bodies), tuple(specs))
    named = Simulator(
        scene.with_(hyper_basis=np.ones((3, 1)), hyper_offset=offset),
        "hyper-reduced",
        dt=1e-2,
    )
    explicit = Simulator(scene, HyperReducedFormulation(scene, np.ones((3, 1)), offset), dt=1e-2)
    assert named.formulation.name == "hyper-reduced"
    a, b = named.initial_state(), explicit.initial_state()
    for i in range(20):
        a, _ = named.step(a, i)
        b, _ = explicit.step(b, i)
    np.testing.assert_array_equal(np.asarray(a.q), np.asarray(b.q))
    q = np.asarray(a.q)
    np.testing.assert_allclose(q - q[0], offset, atol=1e-12)
    assert abs(q[0] - np.deg2rad(10.0)) > 1e-3  # it moved


def test_formulation_refuses_a_start_off_the_subspace() -> None:
    bodies, specs = _chain(3, "R", "y", (10.0, 20.0, 10.0))
    scene = Scene("c", tuple(bodies), tuple(specs))
    form = HyperReducedFormulation(scene, np.ones((3, 1)))
    with pytest.raises(ConfigurationError, match="away from the hyper-reduced subspace"):
        form.initial_state()
    with pytest.raises(ConfigurationError, match="no hyper-reduced basis"):
        Simulator(scene, "hyper-reduced")


def test_mass_matrix_and_twists_through_the_chained_jacobian() -> None:
    """M_R = J_mR^T M J_mR with J_mR = J_mr J_rR (eq. 2.78), and phi = J_mR qdot_R."""
    tree = _chain_tree(3)
    B = np.array([[1.0, 0.0], [0.5, 1.0], [0.0, -2.0]])
    hyper = HyperReduced.build(tree, B, [0.1, 0.0, 0.2])
    qR, qRdot = np.array([0.4, -0.3]), np.array([1.0, 2.0])
    kin = hyper.kinematics(qR, qRdot)
    JmR = kin.J @ B
    m = tree.scene_inertia.reshape(-1)
    np.testing.assert_allclose(hyper.mass_matrix(qR), JmR.T @ (m[:, None] * JmR), rtol=1e-12)
    np.testing.assert_allclose(kin.phi.reshape(-1), JmR @ qRdot, atol=1e-14)
    q, _ = hyper.joint_state(qR, qRdot)
    np.testing.assert_allclose(forward_kinematics(tree, q).E, kin.E)


def test_bad_bases_are_refused() -> None:
    tree = _chain_tree(3)
    with pytest.raises(ConfigurationError, match="3 rows"):
        HyperReduced.build(tree, np.ones((2, 1)))
    with pytest.raises(ConfigurationError, match="full column rank"):
        HyperReduced.build(tree, np.ones((3, 2)))
