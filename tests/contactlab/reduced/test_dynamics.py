"""Reduced dynamics: Lagrangian consistency, dense vs recursive, inverse and hybrid dynamics."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from contactlab.reduced import dynamics as dyn
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.recursive import (
    forward_dynamics_recursive,
    hybrid_dynamics,
    inverse_dynamics,
    inverse_mass_times,
)
from contactlab.reduced.tree import Tree

from .conftest import JOINTS, random_coordinates, random_tree_scene

EPS = 1e-6


def _with_joint_springs(scene, rng):  # noqa: ANN001, ANN202
    joints = tuple(
        dataclasses.replace(j, stiffness=rng.uniform(0, 5), damping=rng.uniform(0, 2))
        for j in scene.joints
    )
    return scene.with_(joints=joints)


@pytest.fixture(params=[0, 1, 2])
def tree(request: pytest.FixtureRequest) -> Tree:
    rng = np.random.default_rng(100 + request.param)
    kinds = sorted(JOINTS) + ["revolute", "prismatic", "revolute", "revolute"]
    return Tree.from_scene(_with_joint_springs(random_tree_scene(request.param, kinds), rng))


def test_mass_matrix_and_coriolis_follow_from_the_kinetic_energy() -> None:
    """Lagrange: f_r = -Mdot qdot + dT/dq when gravity and springs are off."""
    tree = Tree.from_scene(random_tree_scene(7, sorted(JOINTS), gravity=False))
    rng = np.random.default_rng(8)
    q, qdot = random_coordinates(tree, rng)
    kin = forward_kinematics(tree, q, qdot)
    M = dyn.mass_matrix(kin)
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > 0

    def T(qq: np.ndarray) -> float:
        return 0.5 * qdot @ dyn.mass_matrix(forward_kinematics(tree, qq)) @ qdot

    dT = np.array([(T(q + EPS * e) - T(q - EPS * e)) / (2 * EPS) for e in np.eye(tree.nq)])
    Mdot = (
        dyn.mass_matrix(forward_kinematics(tree, q + EPS * qdot))
        - dyn.mass_matrix(forward_kinematics(tree, q - EPS * qdot))
    ) / (2 * EPS)
    expected = -Mdot @ qdot + dT
    np.testing.assert_allclose(
        dyn.reduced_forces(kin), expected, atol=1e-6 * np.abs(expected).max()
    )
    # kinetic energy from the maximal twists equals the reduced quadratic form
    assert dyn.energies(kin)["kinetic_energy"] == pytest.approx(0.5 * qdot @ M @ qdot, rel=1e-12)


def test_gravity_and_joint_springs_are_minus_the_potential_gradient(tree: Tree) -> None:
    rng = np.random.default_rng(9)
    q, _ = random_coordinates(tree, rng)
    zero = np.zeros(tree.nq)

    def V(qq: np.ndarray) -> float:
        return dyn.energies(forward_kinematics(tree, qq))["potential_energy"]

    grad = np.array([(V(q + EPS * e) - V(q - EPS * e)) / (2 * EPS) for e in np.eye(tree.nq)])
    np.testing.assert_allclose(
        dyn.reduced_forces(forward_kinematics(tree, q, zero)), -grad, atol=1e-6
    )


def test_recursive_and_dense_forward_dynamics_agree(tree: Tree) -> None:
    rng = np.random.default_rng(11)
    q, qdot = random_coordinates(tree, rng)
    tau = rng.standard_normal(tree.nq)
    dense = dyn.forward_dynamics_dense(tree, q, qdot, tau)
    rec = forward_dynamics_recursive(tree, q, qdot, tau)
    assert np.linalg.norm(rec - dense) <= 1e-9 * np.linalg.norm(dense)


def test_inverse_dynamics_returns_the_applied_torques(tree: Tree) -> None:
    rng = np.random.default_rng(12)
    q, qdot = random_coordinates(tree, rng)
    tau = rng.standard_normal(tree.nq)
    qddot = forward_dynamics_recursive(tree, q, qdot, tau)
    np.testing.assert_allclose(inverse_dynamics(tree, q, qdot, qddot), tau, atol=1e-9)
    # and the dense equations agree: M qddot - f_r(tau=0) = tau
    kin = forward_kinematics(tree, q, qdot)
    np.testing.assert_allclose(
        dyn.mass_matrix(kin) @ qddot - dyn.reduced_forces(kin), tau, atol=1e-9
    )


def test_hybrid_dynamics_mixes_both_directions(tree: Tree) -> None:
    rng = np.random.default_rng(13)
    q, qdot = random_coordinates(tree, rng)
    tau = rng.standard_normal(tree.nq)
    qddot = forward_dynamics_recursive(tree, q, qdot, tau)
    names = [s.name for s in tree.specs][::2]
    qdd, tau_out = hybrid_dynamics(tree, q, qdot, names, qddot, tau)
    np.testing.assert_allclose(qdd, qddot, atol=1e-9)
    np.testing.assert_allclose(tau_out, tau, atol=1e-9)


def test_inverse_mass_product_matches_the_dense_solve(tree: Tree) -> None:
    rng = np.random.default_rng(14)
    q, _ = random_coordinates(tree, rng)
    x = rng.standard_normal(tree.nq)
    M = dyn.mass_matrix(forward_kinematics(tree, q))
    np.testing.assert_allclose(M @ inverse_mass_times(tree, q, x), x, atol=1e-9)


def test_force_elements_map_through_J() -> None:
    """Springs: f_r = -dV/dq; body damping: D_r = -d f_r / d qdot (at qdot = 0, exact)."""
    from contactlab.forces import BodyDamping, ZeroLengthSpring

    base = random_tree_scene(21, sorted(JOINTS))
    springs = (
        ZeroLengthSpring("b1", (0.1, 0.2, 0.0), None, (1.0, 0.0, 0.5), 3.0),
        ZeroLengthSpring("b2", (0.0, 0.1, 0.1), "b4", (0.2, 0.0, 0.0), 2.0),
        BodyDamping(0.3, 0.7),
    )
    tree = Tree.from_scene(base.with_(forces=springs))
    rng = np.random.default_rng(22)
    q, _ = random_coordinates(tree, rng)
    zero = np.zeros(tree.nq)
    kin = forward_kinematics(tree, q, zero)
    assert dyn.energies(kin)["force_energy"] > 0

    def V(qq: np.ndarray) -> float:
        return dyn.energies(forward_kinematics(tree, qq))["potential_energy"]

    grad = np.array([(V(q + EPS * e) - V(q - EPS * e)) / (2 * EPS) for e in np.eye(tree.nq)])
    np.testing.assert_allclose(dyn.reduced_forces(kin), -grad, atol=1e-6)

    def f(qd: np.ndarray) -> np.ndarray:
        return dyn.reduced_forces(forward_kinematics(tree, q, qd))

    D_fd = -np.array([(f(EPS * e) - f(-EPS * e)) / (2 * EPS) for e in np.eye(tree.nq)]).T
    np.testing.assert_allclose(dyn.implicit_terms(kin).D, D_fd, atol=1e-6)
    # recursive forward dynamics sees the same force elements
    np.testing.assert_allclose(
        forward_dynamics_recursive(tree, q, zero),
        dyn.forward_dynamics_dense(tree, q, zero),
        rtol=1e-9,
        atol=1e-9,
    )
