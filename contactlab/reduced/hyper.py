"""Hyper-reduced coordinates (Sueda's notes §2.6, eq. 2.76–2.79).

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

:class:`HyperReduced` integrates eq. 2.79 adaptively;
:class:`HyperReducedFormulation` steps it with any contact model and solver:
it assembles the reduced step problem of the full tree (eq. 2.73–2.75, with
its constraint and contact rows) and restricts it to ``qdot_r = J_rR qdot_R``,

.. math::

    J_{rR}^T A J_{rR}\\, \\dot q_R^+ = J_{rR}^T b + (G J_{rR})^T \\lambda_G + \\dots,

where ``A qdot+ = b`` is the full step.  The state keeps the full ``q_r``
(so metrics, trajectories and results read as for the reduced formulation);
positions advance by ``q_r <- q_r + h J_rR qdot_R+``, which stays on the
affine subspace.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.integrate
import scipy.sparse as sp
from numpy.typing import ArrayLike

from contactlab.collision.contacts import ContactSet
from contactlab.errors import ConfigurationError, StepFailure
from contactlab.formulation import register_formulation
from contactlab.problem import StepProblem, StepSolution
from contactlab.reduced import dynamics as dyn
from contactlab.reduced.formulation import ReducedFormulation
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.tree import Array, Tree
from contactlab.scene import Scene, State

#: largest distance of a start state from the subspace ``q_r = J_rR q_R + q_offset``,
#: relative to ``1 + |q_r|`` (round-off of a state built on it is ~1e-16)
SUBSPACE_TOLERANCE = 1e-9


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
        charted = [
            spec.name
            for spec, j in zip(tree.specs, tree.joints)
            if np.isfinite(j.chart_distance(np.zeros(j.ndof)))
        ]
        if charted:
            raise ConfigurationError(
                f"hyper-reduced coordinates need coordinates linear in time; the joints "
                f"{charted} switch charts (spherical): use another joint kind"
            )
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

    def coordinates(self, q: ArrayLike, qdot: ArrayLike) -> tuple[Array, Array]:
        """``(q_R, qdot_R)`` of a tree state on the subspace (least squares, then checked).

        Raises
        ------
        ConfigurationError
            If ``(q, qdot)`` is off the subspace by more than ``SUBSPACE_TOLERANCE``.
        """
        q = self.tree.check_coordinates(np.asarray(q, dtype=float), "q")
        qdot = self.tree.check_coordinates(np.asarray(qdot, dtype=float), "qdot")
        out = []
        for name, x, x0 in (("q", q, self.offset), ("qdot", qdot, np.zeros_like(q))):
            z = np.linalg.lstsq(self.basis, x - x0, rcond=None)[0]
            gap = float(np.abs(self.basis @ z + x0 - x).max(initial=0.0))
            if gap > SUBSPACE_TOLERANCE * (1.0 + float(np.abs(x).max(initial=0.0))):
                raise ConfigurationError(
                    f"the state's {name} is {gap:.3g} away from the hyper-reduced subspace; "
                    "start the joints on q_r = J_rR q_R + q_offset"
                )
            out.append(z)
        return out[0], out[1]

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
    """Every coordinate of ``tree`` equal to one angle (Sueda's notes, eq. 2.77)."""
    return HyperReduced.build(tree, np.ones((tree.nq, 1)))


@register_formulation("hyper-reduced")
class HyperReducedFormulation(ReducedFormulation):
    """The reduced formulation stepped in hyper-reduced coordinates (eq. 2.77–2.79).

    Parameters
    ----------
    scene : a tree scene whose joints start on the subspace.
    basis : (nq, nR) ``J_rR``; ``offset`` (nq,) ``q_offset`` [rad or m].  When
        ``basis`` is not given they are read from ``scene.hyper_basis``
        and ``scene.hyper_offset``, so that the formulation can be
        chosen by name (``"hyper-reduced"``).
    options : keyword options of :class:`ReducedFormulation` (``implicit``,
        ``joint_torque``, ``constraints``, ``stabilization``).

    A constraint or contact row becomes ``G J_rR``; rows that the subspace
    already satisfies become zero and must be left out (a coupling the basis
    enforces is redundant).  Models that need the full tree coordinates
    (joint friction) do not apply: the formulation provides the contact
    geometry only.
    """

    provides = frozenset({"contact_geometry"})

    def __init__(
        self,
        scene: Scene,
        basis: ArrayLike | None = None,
        offset: ArrayLike | None = None,
        **options: Any,
    ) -> None:
        if basis is None:
            if scene.hyper_basis is None:
                raise ConfigurationError(
                    f"scene {scene.name!r} has no hyper-reduced basis: pass basis= (nq, nR) "
                    "or set the scene's hyper_basis to J_rR"
                )
            basis = scene.hyper_basis
            offset = scene.hyper_offset if offset is None else offset
        super().__init__(scene, **options)
        self.hyper = HyperReduced.build(self.tree, basis, offset)
        # the joint-friction maps live in the full tree coordinates: not provided here
        self.joint_layout = None

    #: ``q_r <- q_r + h J_rR qdot_R+`` keeps the state on the affine subspace
    group_integration = False

    def initial_state(self) -> State:
        """The reduced initial state, checked to lie on the subspace."""
        state = super().initial_state()
        self.hyper.coordinates(np.asarray(state.q), np.asarray(state.qdot))
        return state

    def assemble(self, state: State, h: float, contacts: ContactSet | None = None) -> StepProblem:
        full = super().assemble(state, h, contacts)
        B = self.hyper.basis
        Bs = sp.csr_matrix(B)
        _, qRdot = self.hyper.coordinates(np.asarray(state.q), np.asarray(state.qdot))
        M = B.T @ (full.M @ B)
        return StepProblem(
            h=h,
            M=sp.csc_matrix(0.5 * (M + M.T)),
            f=B.T @ full.f,
            v=qRdot,
            G=full.G @ Bs,
            g=full.g,
            N=full.N @ Bs,
            c=full.c,
            T=full.T @ Bs,
            mu=full.mu,
            L=full.L @ Bs,
            l=full.l,
            D=full.D @ Bs,
            d=full.d,
            contacts=full.contacts,
            directions=full.directions,
            G_owner=full.G_owner,
            G_error=full.G_error,
        )

    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        qdot = self.hyper.basis @ np.asarray(solution.v, dtype=float)
        return super().advance(state, replace(solution, v=qdot), h)
