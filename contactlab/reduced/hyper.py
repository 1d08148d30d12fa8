"""Hyper-reduced coordinates (seed 000 §2.6, eq. 2.76–2.79).

A constant linear map ``q_r = J_rR q_R + q_offset`` expresses the joint
coordinates through fewer coordinates ``q_R`` (e.g. every hinge of a chain
at the same angle, eq. 2.77).  With ``J_mR = J_mr J_rR`` and, the map being
constant, ``Jdot_mR = Jdot_mr J_rR`` (eq. 2.78), the equations of motion
(eq. 2.79) are

.. math::

    J_{rR}^T M_r J_{rR}\\, \\ddot q_R = J_{rR}^T f_r(q_r, \\dot q_r),
    \\qquad \\dot q_r = J_{rR} \\dot q_R ,

so the reduced mass matrix and forces of the tree are reused unchanged.
The same motion follows from the full tree with the couplings
``q_r = J_rR q_R + q_offset`` as constraints (§2.8); the tests compare both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.integrate
from numpy.typing import ArrayLike

from contactlab.errors import ConfigurationError, StepFailure
from contactlab.reduced import dynamics as dyn
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.tree import Array, Tree


@dataclass(frozen=True, eq=False)
class HyperReduced:
    """A tree driven through hyper-reduced coordinates.

    Parameters
    ----------
    tree : the tree (no chart-switching joints: the map is linear in ``q_r``).
    basis : (nq, nR) ``J_rR``, full column rank.
    offset : (nq,) ``q_offset`` [rad or m] (default zero).
    """

    tree: Tree
    basis: Array
    offset: Array

    @classmethod
    def build(cls, tree: Tree, basis: ArrayLike, offset: ArrayLike | None = None) -> HyperReduced:
        """Check shapes and rank; see the class docstring."""
        B = np.atleast_2d(np.asarray(basis, dtype=float))
        if B.shape[0] != tree.nq or not np.all(np.isfinite(B)):
            raise ConfigurationError(
                f"basis J_rR must be finite with {tree.nq} rows (one per joint coordinate), "
                f"got shape {B.shape}"
            )
        if np.linalg.matrix_rank(B) < B.shape[1]:
            raise ConfigurationError("basis J_rR must have full column rank")
        off = (
            np.zeros(tree.nq)
            if offset is None
            else tree.check_coordinates(np.asarray(offset, dtype=float), "offset")
        )
        return cls(tree, B, off)

    @property
    def n(self) -> int:
        """Number of hyper-reduced coordinates."""
        return int(self.basis.shape[1])

    def joint_state(self, qR: ArrayLike, qRdot: ArrayLike) -> tuple[Array, Array]:
        """``(q_r, qdot_r)`` of the tree."""
        qR, qRdot = np.asarray(qR, dtype=float), np.asarray(qRdot, dtype=float)
        return self.basis @ qR + self.offset, self.basis @ qRdot

    def kinematics(self, qR: ArrayLike, qRdot: ArrayLike) -> Kinematics:
        """The tree's kinematics at the hyper-reduced state (``J_mR = kin.J @ basis``)."""
        return forward_kinematics(self.tree, *self.joint_state(qR, qRdot))

    def mass_matrix(self, qR: ArrayLike) -> Array:
        """``M_R = J_rR^T M_r J_rR`` (nR, nR) (eq. 2.79)."""
        kin = self.kinematics(qR, np.zeros(self.n))
        return self.basis.T @ dyn.mass_matrix(kin) @ self.basis

    def forces(self, qR: ArrayLike, qRdot: ArrayLike, tau: Array | None = None) -> Array:
        """``f_R = J_rR^T f_r`` (nR,); ``tau`` (nq,) are applied joint forces."""
        return self.basis.T @ dyn.reduced_forces(self.kinematics(qR, qRdot), tau)

    def forward_dynamics(self, qR: ArrayLike, qRdot: ArrayLike) -> Array:
        """``qddot_R`` (nR,) of eq. 2.79."""
        kin = self.kinematics(qR, qRdot)
        M = self.basis.T @ dyn.mass_matrix(kin) @ self.basis
        return dyn.solve_mass(M, self.basis.T @ dyn.reduced_forces(kin))

    def energy(self, qR: ArrayLike, qRdot: ArrayLike) -> float:
        """Total energy [J] of the tree at the hyper-reduced state."""
        return dyn.energies(self.kinematics(qR, qRdot))["total_energy"]

    def simulate(
        self,
        qR0: ArrayLike,
        qRdot0: ArrayLike,
        t_end: float,
        *,
        rtol: float = 1e-9,
        atol: float = 1e-11,
        t_eval: Array | None = None,
    ) -> tuple[Array, Array, Array]:
        """Adaptive integration (DOP853) of eq. 2.79; returns ``t``, ``q_R``, ``qdot_R``."""
        n = self.n

        def rhs(t: float, y: Array) -> Array:
            return np.concatenate([y[n:], self.forward_dynamics(y[:n], y[n:])])

        y0 = np.concatenate(
            [np.asarray(qR0, float).reshape(n), np.asarray(qRdot0, float).reshape(n)]
        )
        sol = scipy.integrate.solve_ivp(
            rhs, (0.0, t_end), y0, method="DOP853", rtol=rtol, atol=atol, t_eval=t_eval
        )
        if sol.status != 0:
            raise StepFailure(
                f"hyper-reduced integration failed at t={sol.t[-1]:.6g} s: {sol.message}"
            )
        return sol.t, sol.y[:n].T, sol.y[n:].T


def uniform_angles(tree: Tree) -> HyperReduced:
    """Every coordinate of ``tree`` equal to one angle (seed 000, eq. 2.77)."""
    return HyperReduced.build(tree, np.ones((tree.nq, 1)))
