"""Equality-constrained dynamics at the acceleration level (Sueda's notes §2.8–2.9, §2.12).

With the rows of :mod:`contactlab.reduced.constraints` stacked as
``G qddot = rhs`` (eq. 2.99, Baumgarte terms included), the accelerations
and multipliers solve the KKT system

.. math::

    \begin{pmatrix} M_r & -G^T \\ G & 0 \\end{pmatrix}
    \begin{pmatrix} \\ddot q \\ \\lambda \\end{pmatrix}
    = \begin{pmatrix} f_r \\ rhs \\end{pmatrix}

(eq. 2.94/2.102 in the package's sign, ``M qddot = f + G^T lambda``), either
densely or through the dual ``G M^-1 G^T lambda = rhs - G qddot*`` with the
recursive forward dynamics giving ``qddot*`` and ``M^-1`` products
(eq. 2.118–2.120).  :func:`simulate_constrained` integrates the result with
``solve_ivp``.  Inequalities (joint limits) are stepped at the velocity level
as QPs instead (:class:`~contactlab.reduced.ReducedFormulation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.integrate
import scipy.linalg

from contactlab.errors import ConfigurationError, SingularSystemError, StepFailure
from contactlab.reduced import dynamics as dyn
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.recursive import forward_dynamics_recursive, inverse_mass_times
from contactlab.reduced.tree import Array, Tree


def _stack(
    tree: Tree, kin: Kinematics, t: float, constraints: Sequence[Any], alpha: float, beta: float
) -> tuple[Array, Array, list[int]]:
    limits = [c.name for c in constraints if c.unilateral]
    if limits:
        raise ConfigurationError(
            f"constraints {limits} are inequalities, which the acceleration-level solve does "
            "not take; step them at the velocity level (Simulator with the reduced "
            "formulation and a QP solver such as osqp)"
        )
    eq = list(constraints)
    parts = [c.acceleration_rows(tree, kin, t, alpha, beta) for c in eq]
    if not parts:
        return np.zeros((0, tree.nq)), np.zeros(0), []
    return (
        np.vstack([p[0] for p in parts]),
        np.concatenate([p[1] for p in parts]),
        [len(p[1]) for p in parts],
    )


def constrained_acceleration(
    tree: Tree,
    q: Array,
    qdot: Array,
    t: float,
    constraints: Sequence[Any],
    tau: Array | None = None,
    *,
    alpha: float = 0.0,
    beta: float = 0.0,
    method: str = "dense",
) -> tuple[Array, Array]:
    """Accelerations and multipliers of the equality-constrained dynamics.

    ``method="dense"`` solves the KKT system of Sueda's notes, eq. 2.102 (with
    eq. 2.99 rows and Baumgarte terms); ``"dual"`` solves the unconstrained
    problem by the recursive algorithm, then the Delassus system
    ``G M^-1 G^T lambda = rhs - G qddot*`` with ``M^-1`` applied by the
    recursion (eq. 2.118–2.120), then ``qddot = qddot* + M^-1 G^T lambda``.

    Returns ``qddot`` (nq,) and ``lambda`` (m,): the generalized forces
    ``G^T lambda`` that the constraints apply [N m or N].
    """
    kin = forward_kinematics(tree, q, qdot)
    G, rhs, _ = _stack(tree, kin, t, constraints, alpha, beta)
    m = G.shape[0]
    if method == "dense":
        M = dyn.mass_matrix(kin)
        f = dyn.reduced_forces(kin, tau)
        K = np.block([[M, G.T], [G, np.zeros((m, m))]])
        try:
            x = np.linalg.solve(K, np.concatenate([f, rhs]))
        except np.linalg.LinAlgError as err:
            raise SingularSystemError(
                "the constrained KKT system is singular: the constraint rows are dependent "
                "(a loop closed with too many rows, or two constraints on the same motion)"
            ) from err
        # the symmetric KKT matrix carries -lambda: M qddot = f + G^T lambda
        return x[: tree.nq], -x[tree.nq :]
    if method != "dual":
        raise ConfigurationError(f"method must be 'dense' or 'dual', got {method!r}")
    free = forward_dynamics_recursive(tree, q, qdot, tau)
    if m == 0:
        return free, np.zeros(0)
    MinvGT = np.column_stack([inverse_mass_times(tree, q, row) for row in G])
    D = G @ MinvGT
    try:
        lam = scipy.linalg.solve(D, rhs - G @ free, assume_a="sym")
    except np.linalg.LinAlgError as err:
        raise SingularSystemError(
            "the Delassus matrix G M^-1 G^T is singular: the constraint rows are dependent"
        ) from err
    return free + MinvGT @ lam, lam


@dataclass
class ConstrainedTrajectory:
    """Samples ``t`` (nt,), ``q``, ``qdot`` (nt, nq) of :func:`simulate_constrained`."""

    t: Array
    q: Array
    qdot: Array
    nfev: int


def simulate_constrained(
    tree: Tree,
    constraints: Sequence[Any],
    q0: Array,
    qdot0: Array,
    t_end: float,
    *,
    alpha: float = 0.0,
    beta: float = 0.0,
    rtol: float = 1e-9,
    atol: float = 1e-11,
    t_eval: Array | None = None,
    method: str = "dense",
    integrator: str = "DOP853",
) -> ConstrainedTrajectory:
    """Integrate the acceleration-level constrained dynamics with ``solve_ivp``.

    Joints with chart switches (exponential-coordinate spherical joints) are
    not re-charted here; use :func:`contactlab.reduced.simulate_adaptive`
    for unconstrained trees with such joints.
    """
    nq = tree.nq

    def rhs(t: float, y: Array) -> Array:
        qdd, _ = constrained_acceleration(
            tree, y[:nq], y[nq:], t, constraints, alpha=alpha, beta=beta, method=method
        )
        return np.concatenate([y[nq:], qdd])

    y0 = np.concatenate([tree.check_coordinates(q0, "q0"), tree.check_coordinates(qdot0, "qdot0")])
    sol = scipy.integrate.solve_ivp(
        rhs, (0.0, t_end), y0, method=integrator, rtol=rtol, atol=atol, t_eval=t_eval
    )
    if sol.status != 0:
        raise StepFailure(f"constrained integration failed at t={sol.t[-1]:.6g} s: {sol.message}")
    return ConstrainedTrajectory(sol.t, sol.y[:nq].T, sol.y[nq:].T, sol.nfev)
