"""Compiled kernel of the maximal Stewart--Trinkle step by Lemke
(:mod:`contactlab.maximal.lemke_step`).

One call, :func:`lemke_step`, takes a step of free rigid bodies from their contacts: the
free momentum and the contact rows of the box-friction compiled step
(:mod:`contactlab.maximal._pile_kernels`: the formulation's midpoint rule, per contact its
normal and two tangent rows over the twelve columns of its two bodies), the pyramid rows
``d_ij = cos(a_j) t_i1 + sin(a_j) t_i2``, the Stewart--Trinkle LCP of
:class:`contactlab.models.stewart_trinkle.StewartTrinkle` as a dense matrix

.. math::

    \\begin{pmatrix} C M^{-1} C^T & \\bar E \\\\ \\bar E_\\mu & 0 \\end{pmatrix}, \\qquad
    \\begin{pmatrix} C M^{-1} f - b \\\\ 0 \\end{pmatrix}

over the unknowns ``[lambda_N (nc); beta (nc k, contact by contact); s (nc)]`` (``C =
[N; D]``, ``b = [c; 0]``; the blocks of ``C M^-1 C^T`` formed for the pairs of contacts
that share a body), Lemke's method of :mod:`solvers.numerics.lemke_kernel` on it, the
velocities ``v = M^-1 (f + C^T lambda)``, the LCP's residuals as the solver layer measures
them (:func:`solvers.residuals.lcp_residuals`), the contact metrics and the integration.
"""

from __future__ import annotations

import numpy as np

from contactlab.maximal._pile_kernels import (
    I_ANGULAR,
    I_COMP,
    I_CONE,
    I_DISSIPATION,
    I_DUAL,
    I_KINETIC,
    I_LINEAR,
    I_NATURAL,
    I_NORMAL_COMP,
    I_NORMAL_FEAS,
    I_PENETRATION,
    I_POTENTIAL,
    I_PRIMAL,
    I_SLIDING,
    I_STATUS,
    I_SWEEPS,
    N_INFO,
    _contact_metrics,
    _step_outputs,
    _velocity,
)
from contactlab.maximal._step_parts import free_rows, normal_rhs, record_metrics, row_columns
from solvers.jit import njit
from solvers.numerics import lemke_kernel as LK

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 15.0

#: statuses of :func:`lemke_step` (those of :func:`solvers.numerics.lemke_kernel.lemke_lcp`)
OPTIMAL, MAX_ITERATIONS, RAY = LK.OPTIMAL, LK.MAX_ITERATIONS, LK.RAY
#: entries of the step's ``info`` after the pile kernels' ``I_*``: the LCP's size, its
#: ``max |q|``, then the ``info`` of :func:`~solvers.numerics.lemke_kernel.lemke_lcp`
I_SIZE = N_INFO
I_QSCALE = N_INFO + 1
I_LEMKE = N_INFO + 2
N_STEP_INFO = I_LEMKE + LK.N_INFO


@njit(cache=True)
def lcp_matrix(J, DJ, a, b, rhs, mu, dirs, f, dinv):  # noqa: ANN001, ANN201, PLR0913
    """The Stewart--Trinkle LCP ``(M, q)`` (dense) of contacts with rows ``J`` (3 nc, 12),
    ``DJ = M^-1 J^T`` row by row, on bodies ``a`` and ``b`` (``-1``: the world), normal
    right-hand sides ``rhs``, friction ``mu``, pyramid directions ``dirs`` (k, 2) in the
    ``(t1, t2)`` basis, free momentum ``f`` and ``dinv`` the inverse mass diagonal."""
    nc = a.shape[0]
    k = dirs.shape[0]
    per = 1 + k
    mc = nc * per
    m = mc + nc
    # the rows of C = [N; D] and M^-1 C^T over each contact's twelve columns
    C = np.zeros((mc, 12))
    DC = np.zeros((mc, 12))
    for i in range(nc):
        for s in range(12):
            C[i, s] = J[3 * i, s]
            DC[i, s] = DJ[3 * i, s]
        for j in range(k):
            p = nc + i * k + j
            c, sn = dirs[j, 0], dirs[j, 1]
            for s in range(12):
                C[p, s] = c * J[3 * i + 1, s] + sn * J[3 * i + 2, s]
                DC[p, s] = c * DJ[3 * i + 1, s] + sn * DJ[3 * i + 2, s]
    rows = np.empty((nc, per), dtype=np.int64)  # contact i's rows in C
    for i in range(nc):
        rows[i, 0] = i
        for j in range(k):
            rows[i, 1 + j] = nc + i * k + j
    Ml = np.zeros((m, m))
    for i in range(nc):
        for si in range(2):
            body = a[i] if si == 0 else b[i]
            if body < 0:
                continue
            for jc in range(nc):
                for sj in range(2):
                    other = a[jc] if sj == 0 else b[jc]
                    if other != body:
                        continue
                    for u in range(per):
                        p = rows[i, u]
                        for t in range(per):
                            r = rows[jc, t]
                            acc = 0.0
                            for x in range(6):
                                acc += C[p, 6 * si + x] * DC[r, 6 * sj + x]
                            Ml[p, r] += acc
    q = np.zeros(m)
    for i in range(nc):
        for u in range(per):
            p = rows[i, u]
            acc = 0.0
            for side in range(2):
                body = a[i] if side == 0 else b[i]
                if body < 0:
                    continue
                for x in range(6):
                    acc += C[p, 6 * side + x] * (dinv[6 * body + x] * f[6 * body + x])
            q[p] = acc - (rhs[i] if u == 0 else 0.0)
        # the coupling of the slack: w_D += E s, w_s = mu lambda_N - E^T beta
        for j in range(k):
            p = nc + i * k + j
            Ml[p, mc + i] = 1.0
            Ml[mc + i, p] = -1.0
        Ml[mc + i, i] = mu[i]
    return Ml, q


@njit(cache=True)
def solve_step_lcp(A, q, zero_rtol, pivot_tol, max_iter, restarts, x, info, at):  # noqa: ANN001, ANN201, PLR0913
    """Lemke's method (:func:`~solvers.numerics.lemke_kernel.lemke_lcp`) on a step's LCP
    ``(A, q)`` (dense (m, m)), its solution into ``x``; ``max_iter`` the pivot cap of each
    walk (``< 0``: ``50 m``).  Writes the LCP's size into ``info[at]``, its ``max |q|``
    into ``info[at + 1]`` and Lemke's ``info`` from ``info[at + 2]``; returns the status."""
    m = q.shape[0]
    cap = max_iter if max_iter >= 0 else 50 * max(m, 1)
    lk = np.empty(LK.N_INFO)
    LK.lemke_lcp(A, q, zero_rtol, pivot_tol, cap, restarts, x, lk)
    info[at] = m
    for p in range(m):
        info[at + 1] = max(info[at + 1], abs(q[p]))
    info[at + 2 : at + 2 + LK.N_INFO] = lk
    return int(lk[LK.I_STATUS])


@njit(cache=True)
def lcp_residuals(A, q, x):  # noqa: ANN001, ANN201
    """The LCP's residuals as the solver layer measures them
    (:func:`solvers.residuals.lcp_residuals`, bounds ``[0, inf)``) at ``x``: primal, dual,
    complementarity and the natural map's."""
    m = q.shape[0]
    primal = dual = comp = 0.0
    for p in range(m):
        w = q[p]
        for r in range(m):
            w += A[p, r] * x[r]
        primal = max(primal, -x[p])
        wp, wm = max(w, 0.0), max(-w, 0.0)
        dual = max(dual, wm)
        comp = max(comp, min(abs(x[p]), wp), wm)
    return primal, dual, comp, LK.natural_residual(A, q, x) if m else 0.0


@njit(cache=True)
def lemke_step(  # noqa: ANN201, PLR0913, PLR0915
    mdiag, E, phi, gravity, h, iterations,
    a, b, point, normal, dist, mu, beta, max_corr, dirs,
    zero_rtol, pivot_tol, max_iter, restarts, slip_threshold,
):  # fmt: skip
    """One Stewart--Trinkle step of free bodies by Lemke's method (module docstring).

    ``mdiag`` (nb, 6) the diagonal mass, ``E`` (nb, 4, 4), ``phi`` (nb, 6) the state;
    contacts on bodies ``a`` and ``b`` (``-1``: the world), normals from B toward A;
    ``beta`` and ``max_corr`` the penetration feedback; ``dirs`` (k, 2) the pyramid's
    directions; ``max_iter`` the pivot cap of each walk (``< 0``: ``50 m``).

    Returns the new twists (nb, 6), the new transforms, the impulses on the rows ``[N; T]``
    (``nc + 2 nc``: the pyramid impulses summed into the tangent basis), the friction
    impulses as world vectors (nc, 3), ``info`` (the pile kernels' ``I_*`` with pivots in
    ``I_SWEEPS``, then :data:`I_SIZE` and Lemke's ``info`` from :data:`I_LEMKE`) and the
    LCP's solution ``[lambda_N; beta; s]``.
    """
    nb = mdiag.shape[0]
    n = 6 * nb
    nc = a.shape[0]
    k = dirs.shape[0]
    mc = nc * (1 + k)
    m = mc + nc
    info = np.zeros(N_STEP_INFO)
    f, dinv, J, DJ, _, t1, t2 = free_rows(
        mdiag, E, phi, gravity, h, iterations, a, b, point, normal
    )
    rhs = np.zeros(nc)
    for i in range(nc):
        rhs[i] = normal_rhs(dist[i], h, beta, max_corr)
    Ml, q = lcp_matrix(J, DJ, a, b, rhs, mu, dirs, f, dinv)
    x = np.empty(m)
    status = solve_step_lcp(Ml, q, zero_rtol, pivot_tol, max_iter, restarts, x, info, I_SIZE)
    info[I_STATUS] = status
    info[I_SWEEPS] = info[I_LEMKE + LK.I_PIVOTS]
    if status == RAY:
        return phi.copy(), E.copy(), np.zeros(3 * nc), np.zeros((nc, 3)), info, x
    # the impulses per contact: normal, then the pyramid's summed into (t1, t2)
    z = np.zeros(3 * nc)
    for i in range(nc):
        z[3 * i] = x[i]
        for j in range(k):
            bj = x[nc + i * k + j]
            z[3 * i + 1] += bj * dirs[j, 0]
            z[3 * i + 2] += bj * dirs[j, 1]
    ca, cb = row_columns(a, b, n, np.arange(nc))
    v = np.empty(n + 6)
    _velocity(J, ca, cb, f, dinv, z, v)
    # -- contact metrics ----------------------------------------------------------------
    acc = np.zeros(5)
    pen = 0.0
    u = np.zeros(3)
    for i in range(nc):
        for d in range(3):
            u[d] = 0.0
            r = 3 * i + d
            for x_ in range(6):
                u[d] += J[r, x_] * v[ca[r] + x_] + J[r, 6 + x_] * v[cb[r] + x_]
        u[0] -= rhs[i]
        _contact_metrics(i, z, u[0], u[1], u[2], mu, slip_threshold, acc)
        pen = max(pen, -dist[i])
    info[I_PRIMAL], info[I_DUAL], info[I_COMP], info[I_NATURAL] = lcp_residuals(Ml, q, x)
    record_metrics(info, acc, pen)
    phi_new, E_new, out, friction = _step_outputs(z, t1, t2, v, n, nb, E, h, mdiag, gravity, info)
    return phi_new, E_new, out, friction, info, x


__all__ = [
    "COMPILE_SECONDS",
    "I_ANGULAR",
    "I_COMP",
    "I_CONE",
    "I_DISSIPATION",
    "I_DUAL",
    "I_KINETIC",
    "I_LEMKE",
    "I_LINEAR",
    "I_NATURAL",
    "I_NORMAL_COMP",
    "I_NORMAL_FEAS",
    "I_PENETRATION",
    "I_POTENTIAL",
    "I_PRIMAL",
    "I_QSCALE",
    "I_SIZE",
    "I_SLIDING",
    "I_STATUS",
    "I_SWEEPS",
    "MAX_ITERATIONS",
    "OPTIMAL",
    "RAY",
    "lcp_matrix",
    "lcp_residuals",
    "lemke_step",
    "solve_step_lcp",
]
