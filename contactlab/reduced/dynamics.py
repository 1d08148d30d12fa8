"""Reduced equations of motion ``M_r qddot = f_r`` (REDMAX, Sueda's notes §2.3 and §2.5).

With the maximal (body-frame, diagonal) inertia ``M``,

.. math::

    M_r = J^T M J, \\qquad
    f_r = J^T (f_m - M \\dot J \\dot q) + \\tau_{joint} + \\tau ,

(Sueda's notes, eq. 2.18 and 2.69).  ``f_m`` stacks per body the Coriolis
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
    """``M_r = J^T M J + diag(armature)`` (nq, nq) (Sueda's notes, eq. 2.18).

    The joints' armature (reflected rotor inertia, ``JointSpec.armature``) adds
    kinetic energy ``a qdot^2 / 2`` per coordinate, so it enters the diagonal only.
    """
    J = kin.J
    m = kin.tree.scene_inertia.reshape(-1)
    M = J.T @ (m[:, None] * J)
    M[np.diag_indices_from(M)] += kin.tree.per_dof("armature")
    return M


def reduced_forces(kin: Kinematics, tau: Array | None = None) -> Array:
    """``f_r = J^T (f_m - M Jdot qdot) + tau_joint + tau`` (nq,), computed in O(n)."""
    tree = kin.tree
    inertia = tree.scene_inertia
    f_m = asm.coriolis(inertia, kin.phi) + applied_wrenches(tree, kin)
    f_m -= inertia * kin.bias_acceleration
    f = kin.JT_times(f_m) + joint_forces(tree, kin.q, kin.qdot)
    return f if tau is None else f + tau


#: the gyroscopic forms of :func:`free_momentum`
CORIOLIS_FORMS = ("rotated_linear", "rotated", "explicit")


def free_momentum(
    kin: Kinematics, h: float, tau: Array | None = None, coriolis: str = "rotated_linear"
) -> Array:
    """Right-hand side ``M_r qdot + h f_r`` (nq,) of a velocity-level step of ``h`` [s].

    With ``M_r qdot = J^T M phi``, the forms differ in how each body's momenta
    meet the gyroscopic wrench ``ad(phi)^T M phi = (-w x I w, -w x m v)``
    (all first-order equal):

    - "explicit": eq. 2.73 as printed, ``M phi + h ad(phi)^T M phi``.  The
      linear part multiplies ``|m v|`` by ``sqrt(1 + h^2 |w|^2)`` per step (a
      rolling ball speeds up); the angular part adds ``h^2/2 |w x I w|^2_{I^-1}``.
    - "rotated_linear" (default): the linear momentum turned by the step
      rotation, ``exp(-h [w]) m v`` (its exact motion in the body frame at
      constant ``w``: norm-preserving), the angular part explicit.
    - "rotated": both momenta turned (the maximal formulation's
      ``coriolis="rotated"``, so a floating body steps identically in both).
      Turning ``I w`` is unstable for a thin body spinning with ``w`` off its
      principal axes: the long axis' rate grows by ``h^2 |w|^2 I_max / (2 I_min)``
      per step (a 10:1 link at 20 rad/s, h = 1e-2: doubling per step).
    """
    if coriolis == "explicit":
        return mass_matrix(kin) @ kin.qdot + h * reduced_forces(kin, tau)
    if coriolis not in CORIOLIS_FORMS:
        raise ConfigurationError(
            f"coriolis must be one of {', '.join(CORIOLIS_FORMS)}, got {coriolis!r}"
        )
    tree = kin.tree
    inertia = tree.scene_inertia
    p = asm.rotated_momentum(inertia, kin.phi, h)
    if coriolis == "rotated_linear":
        explicit = inertia * kin.phi + h * asm.coriolis(inertia, kin.phi)
        p[:, :3] = explicit[:, :3]
    p += h * (applied_wrenches(tree, kin) - inertia * kin.bias_acceleration)
    f = (
        kin.JT_times(p)
        + tree.per_dof("armature") * kin.qdot
        + h * joint_forces(tree, kin.q, kin.qdot)
    )
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
    kinetic += 0.5 * float(np.sum(tree.per_dof("armature") * kin.qdot**2))
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
