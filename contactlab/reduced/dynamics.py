"""Reduced equations of motion ``M_r qddot = f_r`` (REDMAX, seed 000 §2.3 and §2.5).

With the maximal (body-frame, diagonal) inertia ``M``,

.. math::

    M_r = J^T M J, \\qquad
    f_r = J^T (f_m - M \\dot J \\dot q) + \\tau_{joint} + \\tau ,

(seed 000, eq. 2.18 and 2.69).  ``f_m`` stacks per body the Coriolis
wrench ``ad(phi)^T M phi`` (eq. 1.21; it equals ``(-w x I w, -w x m v)``,
the Newton–Euler terms moved to the right), gravity ``(0, R^T m g)``
(eq. 1.22) and the wrenches of the scene's force elements; these maximal
terms are the ones :mod:`contactlab.maximal.assembly` assembles.  Joint springs
and dampers give ``tau_joint = -k (q - rest) - d qdot`` (eq. 2.68, 2.70).

Stiffness and damping for the linearly implicit integrator (eq. 2.75) use
``K = df/dq`` and ``D = -df/dqdot``:
``K_r = -diag(k) + J^T K_m J`` and ``D_r = diag(d) + J^T D_m J``.  The
geometric term ``(dJ^T/dq) f_m`` of the exact ``d f_r / d q`` is left out,
as in eq. 2.75; it only changes the implicit linearization, not the forces.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from contactlab import forces
from contactlab.errors import ConfigurationError, SingularSystemError
from contactlab.maximal import assembly as asm
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.tree import Array, Tree


def applied_wrenches(tree: Tree, kin: Kinematics) -> Array:
    """Gravity plus force elements (nb, 6): every maximal force except Coriolis."""
    scene = tree.scene
    return asm.gravity_wrench(tree.scene_inertia, scene.gravity, kin.E) + asm.force_wrench(
        scene, kin.E, kin.phi
    )


def joint_forces(tree: Tree, q: Array, qdot: Array) -> Array:
    """Joint spring and damper forces ``-k (q - rest) - d qdot`` (nq,) (eq. 2.68, 2.70)."""
    k = tree.per_dof("stiffness")
    d = tree.per_dof("damping")
    rest = tree.per_dof("rest")
    return -k * (q - rest) - d * qdot


def mass_matrix(kin: Kinematics) -> Array:
    """``M_r = J^T M J`` (nq, nq) (seed 000, eq. 2.18)."""
    J = kin.J
    m = kin.tree.scene_inertia.reshape(-1)
    return J.T @ (m[:, None] * J)


def reduced_forces(kin: Kinematics, tau: Array | None = None) -> Array:
    """``f_r = J^T (f_m - M Jdot qdot) + tau_joint + tau`` (nq,), computed in O(n)."""
    tree = kin.tree
    inertia = tree.scene_inertia
    f_m = asm.coriolis(inertia, kin.phi) + applied_wrenches(tree, kin)
    f_m -= inertia * kin.bias_acceleration
    f = kin.JT_times(f_m) + joint_forces(tree, kin.q, kin.qdot)
    return f if tau is None else f + tau


def free_momentum(
    kin: Kinematics, h: float, tau: Array | None = None, coriolis: str = "rotated"
) -> Array:
    """Right-hand side ``M_r qdot + h f_r`` (nq,) of a velocity-level step of ``h`` [s].

    ``coriolis="explicit"`` is eq. 2.73 as printed.  ``"rotated"`` (default)
    writes ``M_r qdot = J^T M phi`` and turns each body's momenta by its step
    rotation, ``J^T exp(-h [omega]) M phi`` (:func:`contactlab.maximal.assembly.
    rotated_momentum`), instead of adding the explicit gyroscopic wrench
    ``h ad(phi)^T M phi``: first-order equal, but the explicit form multiplies
    each body's momentum norm by ``sqrt(1 + h^2 |omega|^2)`` per step, energy a
    spinning body gains without bound.  It is the maximal formulation's default,
    so a floating body steps the same in both formulations.
    """
    if coriolis == "explicit":
        return mass_matrix(kin) @ kin.qdot + h * reduced_forces(kin, tau)
    if coriolis != "rotated":
        raise ConfigurationError(f"coriolis must be 'rotated' or 'explicit', got {coriolis!r}")
    tree = kin.tree
    inertia = tree.scene_inertia
    p = asm.rotated_momentum(inertia, kin.phi, h) + h * (
        applied_wrenches(tree, kin) - inertia * kin.bias_acceleration
    )
    f = kin.JT_times(p) + h * joint_forces(tree, kin.q, kin.qdot)
    return f if tau is None else f + h * tau


def bias_forces(tree: Tree, q: Array, qdot: Array) -> Array:
    """``h(q, qdot)`` of ``M_r qddot + h = tau``: minus the reduced forces at zero torque."""
    return -reduced_forces(forward_kinematics(tree, q, qdot))


def forward_dynamics_dense(tree: Tree, q: Array, qdot: Array, tau: Array | None = None) -> Array:
    """``qddot = M_r^{-1} f_r`` by a Cholesky solve (the dense REDMAX path, O(n^3))."""
    kin = forward_kinematics(tree, q, qdot)
    return solve_mass(mass_matrix(kin), reduced_forces(kin, tau))


def solve_mass(M: Array, f: Array) -> Array:
    """Solve with an SPD matrix, naming the failure if it is singular."""
    if M.shape[0] == 0:
        return np.zeros(0)
    try:
        return scipy.linalg.cho_solve(scipy.linalg.cho_factor(M), f)
    except np.linalg.LinAlgError as err:
        raise SingularSystemError(
            "the reduced mass matrix is not positive definite: a joint has coordinates that "
            "do not move any mass (check massless chains or degenerate joint axes)"
        ) from err


@dataclass(frozen=True)
class ImplicitTerms:
    """Linearization of the reduced forces: ``K_r = df_r/dq``, ``D_r = -df_r/dqdot`` (nq, nq)."""

    K: Array
    D: Array


def implicit_terms(kin: Kinematics) -> ImplicitTerms:
    """``K_r`` and ``D_r`` from joint springs/dampers and force elements (eq. 2.74–2.75)."""
    tree = kin.tree
    scene = tree.scene
    K = -np.diag(tree.per_dof("stiffness"))
    D = np.diag(tree.per_dof("damping"))
    if scene.forces:
        J = kin.J
        K = K + J.T @ (forces.total_stiffness(scene, kin.E, kin.phi) @ J)
        D = D + J.T @ (forces.total_damping(scene, kin.E, kin.phi) @ J)
    return ImplicitTerms(K, D)


def energies(kin: Kinematics) -> dict[str, float]:
    """Kinetic, gravitational, joint-spring and force-element energies [J]."""
    tree = kin.tree
    scene = tree.scene
    kinetic = 0.5 * float(np.sum(tree.scene_inertia * kin.phi**2))
    gravity = asm.gravity_energy(tree.scene_inertia, scene.gravity, kin.E)
    k = tree.per_dof("stiffness")
    spring = 0.5 * float(np.sum(k * (kin.q - tree.per_dof("rest")) ** 2))
    elements = asm.force_energy(scene, kin.E, kin.phi)
    potential = gravity + spring + elements
    return {
        "kinetic_energy": kinetic,
        "gravity_energy": gravity,
        "joint_spring_energy": spring,
        "force_energy": elements,
        "potential_energy": potential,
        "total_energy": kinetic + potential,
    }
