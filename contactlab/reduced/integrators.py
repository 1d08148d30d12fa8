"""Time integration in reduced coordinates.

- :func:`step_linearly_implicit`: linearly implicit Euler (seed 000,
  eq. 2.73–2.75), the joint and force-element springs and dampers taken
  implicitly, positions advanced on each joint's group (:meth:`Tree.advance`),
  spherical charts switched after every step.
- :func:`simulate_adaptive`: the first-order system
  ``d/dt (q, qdot) = (qdot, M_r^{-1} f_r)`` (eq. 2.21) with
  :func:`scipy.integrate.solve_ivp`; forward dynamics dense or recursive.
  Chart switches of spherical joints stop the integrator on an event and
  restart it in the new chart.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.integrate

from contactlab.errors import StepFailure
from contactlab.reduced import dynamics as dyn
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.recursive import forward_dynamics_recursive
from contactlab.reduced.tree import Array, Tree

TorqueInput = Array | Callable[[float, Array, Array], Array] | None

#: extra angle [rad] past a joint's switch angle at which the adaptive
#: integrator changes chart, so that the new chart starts well inside its range
CHART_HYSTERESIS = 0.5


def step_linearly_implicit(
    tree: Tree,
    q: Array,
    qdot: Array,
    h: float,
    tau: Array | None = None,
    coriolis: str = "rotated_linear",
) -> tuple[Array, Array]:
    """One step of linearly implicit Euler; returns ``(q, qdot)`` at ``t + h``.

    .. math::

        (M_r + h D_r - h^2 K_r)\\, \\dot q^{+} = M_r \\dot q + h f_r + h D_r \\dot q,
        \\qquad Q_j(q^{+}) = Q_j(q) \\exp(h [S_j \\dot q_j^{+}])

    (the ``h D_r qdot`` term cancels the damping force evaluated at the
    start of the step, eq. 2.72).  Positions by :meth:`Tree.advance`
    (``q + h qdot+`` for joints with constant ``S``); ``f_r``'s bias
    ``Jdot qdot`` is taken along that motion (``forward_kinematics(step=True)``).
    ``coriolis``: "rotated_linear" (default), "rotated" or "explicit" gyroscopic terms
    (:func:`contactlab.reduced.dynamics.free_momentum`).
    """
    kin = forward_kinematics(tree, q, qdot, step=True)
    M = dyn.mass_matrix(kin)
    terms = dyn.implicit_terms(kin)
    lhs = M + h * terms.D - h * h * terms.K
    rhs = dyn.free_momentum(kin, h, tau, coriolis) + h * (terms.D @ qdot)
    try:
        qdot_new = np.linalg.solve(lhs, rhs)
    except np.linalg.LinAlgError as err:
        raise StepFailure(
            f"the implicit system of the reduced step is singular at h={h:g} s; reduce h"
        ) from err
    return tree.advance(q, qdot_new, h)


@dataclass
class Trajectory:
    """Result of :func:`simulate_adaptive`: samples ``t`` (nt,), ``q`` and ``qdot`` (nt, nq)."""

    t: Array
    q: Array
    qdot: Array
    nfev: int
    chart_switches: int


def _torque(tau: TorqueInput, t: float, q: Array, qdot: Array) -> Array | None:
    if tau is None:
        return None
    if callable(tau):
        return np.asarray(tau(t, q, qdot), dtype=float)
    return np.asarray(tau, dtype=float)


def simulate_adaptive(
    tree: Tree,
    q0: Array,
    qdot0: Array,
    t_end: float,
    *,
    method: str = "recursive",
    integrator: str = "DOP853",
    rtol: float = 1e-6,
    atol: float = 1e-9,
    t_eval: Array | None = None,
    tau: TorqueInput = None,
) -> Trajectory:
    """Integrate ``(q, qdot)`` from 0 to ``t_end`` [s] with an adaptive explicit method.

    Parameters
    ----------
    method : forward dynamics, ``"recursive"`` (O(n), compiled) or ``"dense"``.
    integrator : a :func:`scipy.integrate.solve_ivp` method ("RK45", "DOP853", ...).
    t_eval : output times (default: the integrator's own steps).
    tau : applied joint torques, an (nq,) array or ``tau(t, q, qdot)``.
    """
    if method not in ("recursive", "dense"):
        raise ValueError(f"method must be 'recursive' or 'dense', got {method!r}")
    fd = forward_dynamics_recursive if method == "recursive" else dyn.forward_dynamics_dense
    nq = tree.nq
    charted = [
        i for i, j in enumerate(tree.joints) if np.isfinite(j.chart_distance(np.zeros(j.ndof)))
    ]

    def rhs(t: float, y: Array) -> Array:
        q, qdot = y[:nq], y[nq:]
        return np.concatenate([qdot, fd(tree, q, qdot, _torque(tau, t, q, qdot))])

    def chart_event(t: float, y: Array) -> float:
        d = [
            tree.joints[i].chart_distance(y[tree.dof0[i] : tree.dof0[i] + tree.ndof[i]])
            for i in charted
        ]
        return min(d) + CHART_HYSTERESIS

    chart_event.terminal = True  # type: ignore[attr-defined]
    chart_event.direction = -1  # type: ignore[attr-defined]
    events = [chart_event] if charted else None

    y = np.concatenate([tree.check_coordinates(q0, "q0"), tree.check_coordinates(qdot0, "qdot0")])
    t_eval = None if t_eval is None else np.asarray(t_eval, dtype=float)
    t0, nfev, switches = 0.0, 0, 0
    ts: list[Array] = []
    ys: list[Array] = []
    while True:
        te = None if t_eval is None else t_eval[(t_eval >= t0) & (t_eval <= t_end)]
        sol = scipy.integrate.solve_ivp(
            rhs,
            (t0, t_end),
            y,
            method=integrator,
            rtol=rtol,
            atol=atol,
            t_eval=te,
            events=events,
        )
        nfev += sol.nfev
        if sol.status == -1:
            raise StepFailure(f"adaptive integration failed at t={sol.t[-1]:.6g} s: {sol.message}")
        keep = sol.t > t0 if ts else np.ones(len(sol.t), dtype=bool)
        ts.append(sol.t[keep])
        ys.append(sol.y[:, keep])
        if sol.status == 0:
            break
        t0 = float(sol.t_events[0][0])
        ye = sol.y_events[0][0]
        q, qdot, _ = tree.reparameterize(ye[:nq], ye[nq:])
        y = np.concatenate([q, qdot])
        switches += 1
    Y = np.hstack(ys)
    return Trajectory(np.concatenate(ts), Y[:nq].T, Y[nq:].T, nfev, switches)
