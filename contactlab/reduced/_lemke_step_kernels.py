"""Compiled kernel of the reduced formulation's Stewart--Trinkle step by Lemke
(:mod:`contactlab.reduced.lemke_step`).

One call, :func:`lemke_full_step`, takes a step of
:class:`~contactlab.reduced.formulation.ReducedFormulation` with the friction pyramid of
:class:`contactlab.models.stewart_trinkle.StewartTrinkle`.  Its prologue is the box step's
own (:func:`contactlab.reduced._step_kernels.contact_step`'s functions): the kinematics,
``M = M_r + h D - h^2 K`` and the free momentum ``f`` (``_system``), the tree factor
``M = L^T L`` (``_ltl``), the rows ``[N; T; L]`` and their right-hand side
(``_contact_rows``) and ``M^-1 C^T`` (``_inverse_rows``).  The pyramid rows
``d_ij = cos(a_j) t_i1 + sin(a_j) t_i2`` follow from the tangent rows, giving the model's
rows ``C = [N; D; L]`` (``D`` contact by contact) and the LCP

.. math::

    \\begin{pmatrix} C M^{-1} C^T & \\bar E \\\\ \\bar E_\\mu & 0 \\end{pmatrix}, \\qquad
    \\begin{pmatrix} C M^{-1} f - b \\\\ 0 \\end{pmatrix}

over ``[lambda_N; beta; lambda_L; s]``, solved by Lemke's method of
:mod:`solvers.numerics.lemke_kernel` (the general backend's rules and settings).  Then the
velocity ``v = M^-1 (f + C^T lambda)``, the LCP's residuals as the solver layer measures
them (:func:`solvers.residuals.lcp_residuals`), the position update, the new state's body
transforms and twists and the step's measurements.
"""

from __future__ import annotations

import numpy as np

from contactlab.maximal._lemke_kernels import lcp_residuals, solve_step_lcp
from contactlab.reduced._cone_step_kernels import (
    delassus_rows,
    step_end,
    step_rows,
    step_system,
    step_velocity,
)
from solvers.jit import njit
from solvers.numerics import lemke_kernel as LK

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 20.0

#: statuses of :func:`lemke_full_step`: Lemke's (:func:`~solvers.numerics.lemke_kernel.lemke_lcp`),
#: then the steps it does not take (the general path's closed forms and messages)
OPTIMAL, MAX_ITERATIONS, RAY = LK.OPTIMAL, LK.MAX_ITERATIONS, LK.RAY
NOT_SPD, DECOUPLED = 4, 5

#: entries of the ``info`` array of :func:`lemke_full_step` (those of the cone step's
#: kernel), then the LCP's size, its ``max |q|`` and Lemke's ``info``
(
    I_STATUS, I_SWEEPS, I_PRIMAL, I_DUAL, I_COMP, I_NATURAL, I_KINETIC, I_GRAVITY, I_SPRING,
    I_MOMENTUM, I_NORMAL_COMP, I_NORMAL_FEAS, I_CONE, I_DISSIPATION, I_SLIDING,
    I_PENETRATION, I_FINITE, I_LIMIT,
) = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 18, 19, 20, 21, 22)  # fmt: skip
I_SIZE, I_QSCALE, I_LEMKE = 23, 24, 25
N_INFO = I_LEMKE + LK.N_INFO


@njit(cache=True)
def pyramid_lcp(C, Kt, b, u_free, mu, dirs, nc, ml):  # noqa: ANN001, ANN201, PLR0913
    """The Stewart--Trinkle LCP ``(A, q)`` (dense) and the model's rows ``Cp = [N; D; L]``
    with ``Kp = M^-1 Cp^T`` (nq, mr), from the rows ``C = [N; T; L]``, ``Kt = M^-1 C^T``,
    the right-hand side ``b``, the free velocity ``u_free``, friction ``mu`` and the
    pyramid's directions ``dirs`` (k, 2) in the ``(t1, t2)`` basis."""
    nq = u_free.shape[0]
    k = dirs.shape[0]
    mr = nc * (1 + k) + ml
    m = mr + nc
    Cp = np.zeros((mr, nq))
    Kp = np.zeros((nq, mr))
    bp = np.zeros(mr)
    for i in range(nc):
        for a in range(nq):
            Cp[i, a] = C[i, a]
            Kp[a, i] = Kt[a, i]
        bp[i] = b[i]
        t1, t2 = nc + 2 * i, nc + 2 * i + 1
        for j in range(k):
            p = nc + i * k + j
            c, s = dirs[j, 0], dirs[j, 1]
            for a in range(nq):
                Cp[p, a] = c * C[t1, a] + s * C[t2, a]
                Kp[a, p] = c * Kt[a, t1] + s * Kt[a, t2]
    for j in range(ml):
        p = nc * (1 + k) + j
        for a in range(nq):
            Cp[p, a] = C[3 * nc + j, a]
            Kp[a, p] = Kt[a, 3 * nc + j]
        bp[p] = b[3 * nc + j]
    A = np.zeros((m, m))
    q = np.zeros(m)
    delassus_rows(Cp, Kp, bp, u_free, np.arange(mr), A, q)
    for i in range(nc):
        # the coupling of the slack: w_D += E s, w_s = mu lambda_N - E^T beta
        for j in range(k):
            p = nc + i * k + j
            A[p, mr + i] = 1.0
            A[mr + i, p] = -1.0
        A[mr + i, i] = mu[i]
    return A, q, Cp, Kp, bp


@njit(cache=True)
def lemke_full_step(  # noqa: ANN201, PLR0912, PLR0913, PLR0915
    kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
    stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
    node_of_body, body_of_node, body_a, body_b, point, normal, dist, mu, beta, max_corr,
    lim_dof, lim_sign, lim_bound, dirs, zero_rtol, pivot_tol, max_iter, restarts,
    slip_threshold,
):  # fmt: skip
    """One Stewart--Trinkle step by Lemke's method (module docstring).  Arguments as
    :func:`contactlab.reduced._cone_step_kernels.cone_full_step`'s, with the pyramid's
    directions ``dirs`` (k, 2) and Lemke's settings (``max_iter < 0``: ``50 m``).

    Returns ``q+``, ``qdot+``, the step's velocity ``v``, the new body transforms and
    twists in scene order, the impulses ``z`` on the rows ``[N; T; L]`` (the pyramid's
    summed into the tangent basis), the friction impulses as world vectors, ``info``
    (entries ``I_*``) and the LCP's solution ``[lambda_N; beta; lambda_L; s]``.
    """
    nc = dist.shape[0]
    ml = lim_dof.shape[0]
    k = dirs.shape[0]
    mr = nc * (1 + k) + ml
    m = mr + nc
    info = np.zeros(N_INFO)
    nb = body_of_node.shape[0]
    E_s = np.zeros((nb, 4, 4))
    phi_s = np.zeros((nb, 6))
    z = np.zeros(3 * nc + ml)
    friction = np.zeros((nc, 3))
    x = np.zeros(m)
    # -- the box step's prologue (no kept kinematics: computed at (q, qdot)) -------------
    ok, E, J, L, lam, u_free = step_system(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, inertia, support, n_support,
        stiffness, damping, rest, armature, gravity, q, qdot, h, tau,
    )  # fmt: skip
    if not ok:
        info[I_STATUS] = NOT_SPD
        return q, qdot, qdot, E_s, phi_s, z, friction, info, x
    t1, t2, C, b, Kt = step_rows(
        E, J, L, lam, support, n_support, q, h, node_of_body, body_a, body_b, point, normal,
        dist, beta, max_corr, lim_dof, lim_sign, lim_bound,
    )  # fmt: skip
    # -- the model's LCP and Lemke's method ----------------------------------------------
    A, q_lcp, Cp, Kp, bp = pyramid_lcp(C, Kt, b, u_free, mu, dirs, nc, ml)
    status = solve_step_lcp(A, q_lcp, zero_rtol, pivot_tol, max_iter, restarts, x, info, I_SIZE)
    info[I_STATUS] = status
    info[I_SWEEPS] = info[I_LEMKE + LK.I_PIVOTS]
    if status == RAY:
        return q, qdot, qdot, E_s, phi_s, z, friction, info, x
    v = step_velocity(u_free, Kp, x)  # M^-1 (f + Cp^T lambda)
    # the LCP's residuals as the solver layer measures them
    info[I_PRIMAL], info[I_DUAL], info[I_COMP], info[I_NATURAL] = lcp_residuals(A, q_lcp, x)
    # the impulses on [N; T; L]: the pyramid's summed into (t1, t2)
    for i in range(nc):
        z[i] = x[i]
        for j in range(k):
            bj = x[nc + i * k + j]
            z[nc + 2 * i] += bj * dirs[j, 0]
            z[nc + 2 * i + 1] += bj * dirs[j, 1]
    for j in range(ml):
        z[3 * nc + j] = x[nc * (1 + k) + j]
    q_new, v_new, friction = step_end(
        kind, axis, parent, Fp, Fci, AdFc, ndof, dof0, q, v, h, inertia, gravity,
        body_of_node, E_s, phi_s, armature, stiffness, rest, dist, b, C, z, mu,
        slip_threshold, lim_sign, lim_dof, lim_bound, t1, t2, info,
    )  # fmt: skip
    return q_new, v_new, v, E_s, phi_s, z, friction, info, x


__all__ = [
    "COMPILE_SECONDS",
    "DECOUPLED",
    "MAX_ITERATIONS",
    "NOT_SPD",
    "OPTIMAL",
    "RAY",
    "lemke_full_step",
    "pyramid_lcp",
]
