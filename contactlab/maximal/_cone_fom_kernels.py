"""Compiled kernels of the disc-cone contact step by first-order methods (``apgd``, ``admm``).

One call, :func:`cone_fom_step`, takes the step of
:func:`contactlab.maximal._cone_kernels.cone_step` (free bodies, the exact friction cone
``K_i = {||r_t|| <= mu_i r_n}``, Anitescu--Hart's cone complementarity problem or
Coulomb's law in De Saxcé's form) with the general frictional-contact backends'
accelerated projected gradient or ADMM in place of block Gauss--Seidel: the iterations,
the step-size and penalty rules, the stopping test (the natural-map residual relative to
``||q||``) and the iterate returned are those of
:func:`solvers.numerics.fc_methods.apgd` and :func:`solvers.numerics.fc_methods.admm` on
the general route's local problem (:func:`contactlab.models.fc_route.local_step`), but
that APGD refreshes De Saxcé's shift once the shifted problem is solved as well as
Coulomb's (:data:`REFRESH`, :func:`_apgd_rows`; the general backend: solved to a tenth),
and an island left at the cap so is solved again with the general backend's rule
(:data:`REFRESH_RETRY`, :func:`_apgd_coulomb`); the cone projections, De Saxcé's shift
and the natural map are the solver layer's own kernels (:mod:`solvers.numerics.fc_kernels`).

``W`` is never formed.  The rows ``J`` of the contacts (three per contact, 12 columns:
the two bodies' twists) and the diagonal ``M^-1`` give ``W x + q = J M^-1 (f + J^T x) - b``
by two passes over the rows (72 products per contact; only the twists of the bodies in
contact are formed), and the conjugate gradients of ADMM take ``W p = J M^-1 J^T p`` the
same way.  The contacts are put in the general
route's local order (lowest point up) before the iterations, so that every sum over the
contacts (norms, inner products, the natural map) runs in the general route's order;
only the products with ``W`` differ from it in the order of their sums.

The warm start is carried by contact identity as in the ``nsgs`` kernel
(:func:`contactlab.models.delassus.carried_impulses`), and the contact metrics, the state's
outputs and ``E <- E exp(h [phi])`` are :mod:`contactlab.maximal._pile_kernels`'s.
"""

from __future__ import annotations

import math

import numpy as np

from contactlab.maximal._pile_kernels import (
    DECOUPLED,
    I_ISLANDS,
    I_STATUS,
    I_WORK,
    N_INFO,
    OPTIMAL,
    _row_dot,
    _velocity,
    island_contacts,
)
from contactlab.maximal._step_parts import (
    carried_start,
    cone_outputs,
    decoupled,
    free_rows,
    island_done,
    island_residual,
    island_rows,
    normal_rhs,
    row_columns,
    solve_status,
)
from solvers.jit import njit
from solvers.numerics.fc_kernels import _project_all, _shift, cg_start, cg_step, natural_map
from solvers.numerics.fc_methods import (
    Cones,
    admm_after,
    admm_arrays,
    admm_result,
    admm_rhs,
    admm_z_step,
    apgd_accepts,
    apgd_lipschitz,
    apgd_momentum,
    apgd_value,
    natural_map_cones,
)

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 13.0

#: APGD refreshes De Saxcé's shift once the shifted cone problem's natural-map residual
#: is at most this times Coulomb's (measured against a tenth: on the 200-cube drop 38 %
#: fewer iterations with 1, and a 20-cube landing step that stalled at the
#: 20,000-iteration cap at 1.8e-6 with a tenth converges in 2,279; at a tolerance of 1e-9
#: that drop leaves 8 steps at the cap, largest residual 1.1e-7, where a tenth left 4,
#: largest 1.5e-6, with a third of the iterations; the general backend keeps a tenth,
#: :data:`solvers.numerics.fc_methods.APGD_REFRESH`, for tight tolerances' sake)
REFRESH = 1.0

#: An island of Coulomb's law that :func:`_apgd_rows` leaves at the cap with the refresh
#: above is solved again from its warm start with the refresh at this fraction (the
#: general backend's, :data:`solvers.numerics.fc_methods.APGD_REFRESH`), and the lower
#: residual is kept (:func:`_apgd_coulomb`): neither rule converges on every landing step
#: (measured over 100 steps of box-pile drops: with 1, one step of the 50-cube drop stops
#: at 2.0e-3; with a tenth, one of the 20-cube drop at 1.8e-6 and two of the 200-cube
#: drop, one at 1.7e-3).
REFRESH_RETRY = 0.1

#: methods of :func:`cone_fom_step`
APGD, ADMM = 0, 1
#: laws of :func:`cone_fom_step` (those of :mod:`contactlab.maximal._cone_kernels`)
CCP, COULOMB = 0, 1

__all__ = [
    "ADMM",
    "APGD",
    "CCP",
    "COULOMB",
    "DECOUPLED",
    "I_STATUS",
    "cone_fom_step",
]


@njit(cache=True)
def _feasible_start(J, ca, cb, f, dinv, rhs, q, mu, law, r, slots, v, qnorm):  # noqa: ANN001, ANN202, PLR0913
    """Where :func:`_admm` starts
    (:func:`solvers.numerics.fc_methods.feasible_start` with ``W x`` through the rows): the
    warm start ``r`` projected onto the cones, its velocity ``u``, the free velocity ``qs``
    with De Saxcé's shift at ``u`` (``q`` itself for the CCP) and the natural-map residual
    of ``law`` there."""
    n = q.shape[0]
    nc = n // 3
    dirs = np.zeros((0, 2))
    lo = np.zeros(0)
    x = np.empty(n)
    _project_all(0, mu, dirs, lo, nc, r, x)
    u = np.empty(n)
    _product(J, ca, cb, f, dinv, rhs, x, v, u, slots)
    qs = q.copy()
    if law == 1:
        _shift(0, mu, dirs, nc, q, u, qs)
    return x, u, qs, natural_map(law, 0, mu, dirs, lo, nc, x, u, qnorm)


@njit(cache=True)
def _cg(J, ca, cb, dinv, rho, rhs, x, tol, max_iter, slots):  # noqa: ANN001, ANN202, PLR0913
    """Conjugate gradients on ``(W + rho I) x = rhs`` from the given ``x``, ``W p`` through
    the rows (:func:`solvers.numerics.fc_kernels._cg`)."""
    n = rhs.shape[0]
    zero_f = np.zeros(dinv.shape[0])
    zero_b = np.zeros(n)
    v = np.zeros(dinv.shape[0] + 6)
    Ax = np.empty(n)
    _product(J, ca, cb, zero_f, dinv, zero_b, x, v, Ax, slots)
    res, p, rs = cg_start(rho, rhs, x, Ax)
    Ap = np.empty(n)
    for _ in range(max_iter):
        if math.sqrt(rs) <= tol:
            break
        _product(J, ca, cb, zero_f, dinv, zero_b, p, v, Ap, slots)
        rs, done = cg_step(rho, x, res, p, Ap, rs)
        if done:
            break


@njit(cache=True)
def _admm(J, ca, cb, f, dinv, rhs, q, mu, law, r, rho, tol, max_iter, slots):  # noqa: ANN001, ANN202, PLR0913, PLR0915
    """:func:`solvers.numerics.fc_methods.admm` on the cone problem ``u = W r + q`` with
    ``W x`` through the rows; returns ``(iterations, residual)``, ``r`` in place."""
    n = q.shape[0]
    nc = n // 3
    lo = np.zeros(0)
    no_int = np.zeros(0, dtype=np.int64)
    cones = Cones(0, 0, mu, np.zeros((0, 2)), 0, no_int, lo, no_int, lo, nc)
    v = np.zeros(f.shape[0] + 6)
    qnorm = math.sqrt(np.sum(q * q))
    z, u, qs, res = _feasible_start(J, ca, cb, f, dinv, rhs, q, mu, law, r, slots, v, qnorm)
    x, lam, us, b, zold, xl, best, best_res, cg_tol = admm_arrays(z, res, qnorm)
    it = 0
    while res > tol and it < max_iter:
        it += 1
        admm_rhs(rho, z, lam, qs, b)
        _cg(J, ca, cb, dinv, rho, b, x, cg_tol, 4 * n + 20, slots)
        prim, dual, _, _ = admm_z_step(cones, x, lam, 1.0, rho, z, zold, xl)
        prim = math.sqrt(prim)
        dual = math.sqrt(dual)
        _product(J, ca, cb, f, dinv, rhs, z, v, u, slots)
        res = natural_map_cones(cones, law, z, u, qnorm)
        if not math.isfinite(res):
            break
        best_res, cg_tol, rho = admm_after(
            cones, law, it, prim, dual, res, best_res, best, z, u, q, qs, us, lam, rho, tol, qnorm
        )
    return it, admm_result(res, best_res, best, z, r)


@njit(cache=True)
def _soc(m, x0, x1, x2):  # noqa: ANN001, ANN202
    """The projection of ``(x0, x1, x2)`` onto the cone of friction coefficient ``m``
    (:func:`solvers.numerics.fc_local.project`, kind 0, written on scalars)."""
    nt = math.sqrt(x1 * x1 + x2 * x2)
    if nt <= m * x0:
        return x0, x1, x2
    if m * nt <= -x0 or (m == 0.0 and x0 <= 0.0):
        return 0.0, 0.0, 0.0
    if m == 0.0:
        return x0, 0.0, 0.0
    s = (x0 + m * nt) / (1.0 + m * m)
    return s, m * s * x1 / nt, m * s * x2 / nt


@njit(cache=True)
def _product(J, ca, cb, f, dinv, rhs, x, v, out, slots):  # noqa: ANN001, ANN202, PLR0913
    """``out = J M^-1 (f + J^T x) - rhs`` (``W x + q``; ``W x`` with ``f = 0, rhs = 0``),
    allocating nothing.

    Only the twists of the bodies in contact (first slots ``slots``) are formed: the rows
    read no others (``v``'s world slot, last, stays zero); each as
    :func:`contactlab.maximal._pile_kernels._velocity` forms it."""
    n = f.shape[0]
    for s in slots:
        for k in range(6):
            v[s + k] = f[s + k]
    for r in range(x.shape[0]):
        zr = x[r]
        if zr == 0.0:
            continue
        pa, pb = ca[r], cb[r]
        for j in range(6):
            v[pa + j] += J[r, j] * zr
        if pb < n:
            for j in range(6):
                v[pb + j] += J[r, 6 + j] * zr
    for s in slots:
        for k in range(6):
            v[s + k] *= dinv[s + k]
    for r in range(x.shape[0]):
        out[r] = _row_dot(J, ca, cb, v, r) - rhs[r]


@njit(cache=True)
def _apgd_coulomb(J, ca, cb, f, dinv, rhs, mu, law, r, tol, max_iter, slots, v, ws, none):  # noqa: ANN001, ANN202, PLR0913
    """:func:`_apgd_rows` with the refresh :data:`REFRESH`; for Coulomb's law (``law``
    1) a solve that ends at the cap above the tolerance is run again from the same warm
    start with :data:`REFRESH_RETRY`, the impulses of the lower residual kept.  Returns
    :func:`_apgd_rows`' ``(iterations, residual, ||q||_2)``, the iterations of both runs
    summed (the work done)."""
    if law != 1:
        return _apgd_rows(
            J, ca, cb, f, dinv, rhs, mu, law, r, tol, max_iter, slots, v, ws, none, REFRESH
        )
    start = r.copy()
    it, res, qn = _apgd_rows(
        J, ca, cb, f, dinv, rhs, mu, law, r, tol, max_iter, slots, v, ws, none, REFRESH
    )
    if res <= tol or it < max_iter:
        return it, res, qn
    first = r.copy()
    r[:] = start
    it2, res2, qn = _apgd_rows(
        J, ca, cb, f, dinv, rhs, mu, law, r, tol, max_iter, slots, v, ws, none, REFRESH_RETRY
    )
    if not (res2 < res) and math.isfinite(res):
        r[:] = first
        return it + it2, res, qn
    return it + it2, res2, qn


@njit(cache=True)
def _apgd_rows(J, ca, cb, f, dinv, rhs, mu, law, r, tol, max_iter, slots, v, ws, none, refresh):  # noqa: ANN001, ANN202, PLR0913, PLR0915
    """:func:`solvers.numerics.fc_methods.apgd` on the cone problem ``u = W r + q`` of the
    rows given, ``W x`` through the rows; returns ``(iterations, residual, ||q||_2)``,
    ``r`` (the rows' impulses) in place.

    ``ws`` is work space (nine times ``r``'s length), ``v`` the twists (the slots
    ``slots`` written, the world's zero slot last), ``none`` an empty array (the natural
    map's absent directions and bounds): nothing is allocated, and each cone projection
    is fused with the step.  One difference from the general backend, for Coulomb's law:
    De Saxcé's shift is refreshed once the shifted problem's residual is at most
    ``refresh`` times Coulomb's (:data:`REFRESH`, then :data:`REFRESH_RETRY` for a retry by
    :func:`_apgd_coulomb`; the general backend: a tenth,
    :data:`~solvers.numerics.fc_methods.APGD_REFRESH`); as there, the gradients at ``x``
    and ``y`` then move by the shift's change on the normal rows and the momentum is kept
    (restarted only by the gradient test of
    :func:`~solvers.numerics.fc_methods.apgd_momentum`: 18 % fewer iterations over a
    200-cube drop than a restart).  The same problem and stopping test."""
    n = r.shape[0]
    nc = n // 3
    dirs = none.reshape((0, 2))
    q, qs, x, gx, y = ws[:n], ws[n : 2 * n], ws[2 * n : 3 * n], ws[3 * n : 4 * n], ws[4 * n : 5 * n]
    gy, xn, gxn, u = ws[5 * n : 6 * n], ws[6 * n : 7 * n], ws[7 * n : 8 * n], ws[8 * n : 9 * n]
    for i in range(n):
        xn[i] = 0.0
    _product(J, ca, cb, f, dinv, rhs, xn, v, q, slots)
    qsq = 0.0
    for i in range(n):
        qsq += q[i] * q[i]
    qnorm = math.sqrt(qsq)
    # the feasible start (fc_methods.feasible_start)
    for i in range(nc):
        x[3 * i], x[3 * i + 1], x[3 * i + 2] = _soc(mu[i], r[3 * i], r[3 * i + 1], r[3 * i + 2])
    _product(J, ca, cb, f, dinv, rhs, x, v, u, slots)
    for i in range(n):
        qs[i] = q[i]
    if law == 1:
        _shift(0, mu, dirs, nc, q, u, qs)
    res = natural_map(law, 0, mu, dirs, none, nc, x, u, qnorm)
    for i in range(n):
        gx[i] = u[i] + (qs[i] - q[i])
    if res <= tol:
        r[:] = x
        return 0, res, qnorm
    # initial Lipschitz estimate from a probe step (xn, gxn: the probe and its gradient)
    for i in range(n):
        xn[i] = x[i] + 1e-3 * (1.0 + abs(x[i]))
    _product(J, ca, cb, f, dinv, rhs, xn, v, gxn, slots)
    for i in range(0, n, 3):
        gxn[i] += qs[i] - q[i]
    L = apgd_lipschitz(x, gx, xn, gxn)
    for i in range(n):
        y[i] = x[i]
        gy[i] = gx[i]
    theta = 1.0
    it = 0
    while it < max_iter:
        it += 1
        fy = apgd_value(y, gy, qs)
        while True:
            for i in range(nc):
                k = 3 * i
                xn[k], xn[k + 1], xn[k + 2] = _soc(
                    mu[i], y[k] - gy[k] / L, y[k + 1] - gy[k + 1] / L, y[k + 2] - gy[k + 2] / L
                )
            _product(J, ca, cb, f, dinv, rhs, xn, v, gxn, slots)
            for i in range(0, n, 3):
                gxn[i] += qs[i] - q[i]
            if apgd_accepts(xn, gxn, y, gy, qs, fy, L):
                break
            L *= 2.0
        theta = apgd_momentum(theta, x, gx, xn, gxn, y, gy)
        L *= 0.9
        if law == 0:
            res = natural_map(0, 0, mu, dirs, none, nc, x, gx, qnorm)
        else:
            for i in range(n):
                u[i] = gx[i]
            for i in range(0, n, 3):
                u[i] = gx[i] - (qs[i] - q[i])
            res = natural_map(1, 0, mu, dirs, none, nc, x, u, qnorm)
            if res > tol and math.isfinite(res):
                inner = natural_map(0, 0, mu, dirs, none, nc, x, gx, qnorm)
                if inner <= max(refresh * res, 0.5 * tol):
                    # the new shift moves the gradients' normal rows by its change;
                    # the momentum is kept (restarted by apgd_momentum's own test)
                    for i in range(0, n, 3):
                        gy[i] -= qs[i]
                    _shift(0, mu, dirs, nc, q, u, qs)
                    for i in range(0, n, 3):
                        gx[i] = u[i] + (qs[i] - q[i])
                        gy[i] += qs[i]
        if res <= tol or not math.isfinite(res):
            break
    r[:] = x
    return it, res, qnorm


@njit(cache=True)
def _row_islands(a, b, up, nb):  # noqa: ANN001, ANN202
    """The islands of the contacts whose row ``j`` stands for contact ``up[j]`` (bodies
    ``a``, ``b`` in the rows' order; ``nb`` bodies), for :func:`_apgd_islands` and
    :func:`_solve_islands`: :func:`~contactlab.maximal._pile_kernels.island_contacts`'
    ``(count, off, members, order)`` in the contacts' own numbering, and ``pos``, each
    contact's row (``pos[up[j]] = j``)."""
    nc = up.shape[0]
    ia = np.empty(nc, dtype=np.int64)
    ib = np.empty(nc, dtype=np.int64)
    for j in range(nc):
        ia[up[j]] = a[j]
        ib[up[j]] = b[j]
    count, off, members, order = island_contacts(ia, ib, nb, up)
    pos = np.empty(nc, dtype=np.int64)
    for j in range(nc):
        pos[up[j]] = j
    return count, off, members, order, pos


@njit(cache=True)
def _apgd_islands(J, ca, cb, f, dinv, rhs, mu, a, b, up, law, z, tol, max_iter):  # noqa: ANN001, ANN202, PLR0913
    """:func:`_solve_islands` by :func:`_apgd_rows` without copying the islands: the rows
    are put island after island once (each island's in the step's height order restricted
    to it), and each island is solved on its slice of them, its bodies' twists in the
    step's twist vector (the islands share no body: each island's products read and write
    only its own slots, with the same numbers as on arrays of its own).  Returns as
    :func:`_solve_islands`."""
    nc = mu.shape[0]
    nb = dinv.shape[0] // 6
    count, off, members, order, pos = _row_islands(a, b, up, nb)
    if count <= 1:
        return count, OPTIMAL, 0, 0.0, 0.0
    # the rows island after island
    pick = np.empty(nc, dtype=np.int64)
    for k in range(count):
        for j in range(off[k], off[k + 1]):
            pick[j] = pos[members[off[k] + order[j]]]
    m3 = 3 * nc
    Jp = np.empty((m3, 12))
    cap = np.empty(m3, dtype=np.int64)
    cbp = np.empty(m3, dtype=np.int64)
    rp = np.empty(m3)
    zp = np.empty(m3)
    mup = np.empty(nc)
    for j in range(nc):
        i = pick[j]
        mup[j] = mu[i]
        for d in range(3):
            Jp[3 * j + d, :] = J[3 * i + d, :]
            cap[3 * j + d], cbp[3 * j + d] = ca[3 * i + d], cb[3 * i + d]
            rp[3 * j + d], zp[3 * j + d] = rhs[3 * i + d], z[3 * i + d]
    # each island's bodies' first twist slots, island after island
    seen = np.full(nb, -1, dtype=np.int64)
    slots = np.empty(2 * nc, dtype=np.int64)
    soff = np.zeros(count + 1, dtype=np.int64)
    ns = 0
    for k in range(count):
        for j in range(off[k], off[k + 1]):
            for g in (a[pick[j]], b[pick[j]]):
                if g >= 0 and seen[g] < 0:
                    seen[g] = k
                    slots[ns] = 6 * g
                    ns += 1
        soff[k + 1] = ns
    v = np.zeros(dinv.shape[0] + 6)
    ws = np.empty(9 * m3)
    none = np.zeros(0)
    acc = np.zeros(4)  # numerical error met, squared residuals, largest iterations, work
    whole = 0.0
    for k in range(count):
        r0, r1 = 3 * off[k], 3 * off[k + 1]
        zk = zp[r0:r1]
        it, res, qk = _apgd_coulomb(
            Jp[r0:r1], cap[r0:r1], cbp[r0:r1], f, dinv, rp[r0:r1], mup[off[k] : off[k + 1]],
            law, zk, tol, max_iter, slots[soff[k] : soff[k + 1]], v, ws[9 * r0 : 9 * r1], none,
        )  # fmt: skip
        whole += qk * qk
        island_done(z, zk, pick[off[k] : off[k + 1]], res, qk, it, nc, acc)
    status, residual = island_residual(acc, math.sqrt(whole), tol)
    return count, status, int(acc[2]), residual, acc[3]


@njit(cache=True)
def _solve(J, ca, cb, f, dinv, rhs, mu, A, law, method, z, tol, max_iter, rho, slots):  # noqa: ANN001, ANN202, PLR0913
    """:func:`_apgd_rows` or :func:`_admm` on the contacts of the rows ``J`` (in the general
    route's local order; ``A`` their diagonal blocks of ``W``) from the impulses ``z``
    (solved in place); ``q`` formed here.  ADMM's initial penalty ``rho`` (``<= 0``:
    ``1e-3`` times the mean diagonal of these contacts' ``W``).  Returns
    ``(iterations, residual, ||q||_2)``."""
    m3 = rhs.shape[0]
    v = np.zeros(f.shape[0] + 6)
    if method == 0:
        ws = np.empty(9 * m3)
        return _apgd_coulomb(
            J, ca, cb, f, dinv, rhs, mu, law, z, tol, max_iter, slots, v, ws, np.zeros(0)
        )
    q = np.empty(m3)
    _product(J, ca, cb, f, dinv, rhs, np.zeros(m3), v, q, slots)
    wsum = 0.0
    for j in range(m3 // 3):
        for k in range(3):
            wsum += A[j, 4 * k]
    r0 = rho if rho > 0.0 else 1e-3 * (wsum / m3 if m3 > 0 else 1.0)
    it, residual = _admm(J, ca, cb, f, dinv, rhs, q, mu, law, z, r0, tol, max_iter, slots)
    return it, residual, math.sqrt(np.sum(q * q))


@njit(cache=True)
def _solve_islands(J, ca, cb, f, dinv, rhs, mu, A, a, b, up, law, method, z, tol, max_iter,
                   rho):  # fmt: skip  # noqa: ANN001, ANN202, PLR0913
    """:func:`_solve` island by island (:func:`~contactlab.maximal._pile_kernels.island_contacts`):
    row ``j`` of ``J``, ``rhs``, ``mu``, ``A``, ``z`` and of the bodies ``a``, ``b``
    stands for contact ``up[j]`` (the general route's local order); each island's rows in
    that order, its bodies and twists in arrays of its own
    (:func:`~contactlab.maximal._step_parts.island_rows`: the same contacts in a scene of
    their own), solved with its own stopping test (the natural-map residual relative to
    its own ``||q_k||_2``), its own cap, step sizes and penalty; its impulses written back
    into ``z``.  The islands share no row, so the squared unscaled residuals add up to the
    whole problem's and ``sum_k ||q_k||^2 = ||q||^2``: every island within ``tol`` is the
    whole step within it.  Returns ``(count, status, iterations, residual, work)``: the
    number of islands (``<= 1``: nothing solved, the caller solves the whole problem on its
    own arrays), the step's status and residual (the whole problem's), the largest
    island's iterations and the iterations weighted by rows."""
    nc = mu.shape[0]
    nb = dinv.shape[0] // 6
    count, off, members, order, pos = _row_islands(a, b, up, nb)
    if count <= 1:
        return count, OPTIMAL, 0, 0.0, 0.0
    slot = np.full(nb, -1, dtype=np.int64)
    no_dj = np.zeros((0, 12))
    acc = np.zeros(4)  # numerical error met, squared residuals, largest iterations, work
    whole = 0.0
    for k in range(count):
        c0, c1 = off[k], off[k + 1]
        m = c1 - c0
        pick = np.empty(m, dtype=np.int64)
        for j in range(m):
            pick[j] = pos[members[c0 + order[c0 + j]]]  # the island's rows, lowest up
        Jk, _, Ak, rk, muk, zk, fk, dk, cak, cbk = island_rows(
            pick, a, b, J, no_dj, A, rhs, mu, z, f, dinv, slot
        )
        slots = 6 * np.arange(fk.shape[0] // 6)
        it, res, qk = _solve(
            Jk, cak, cbk, fk, dk, rk, muk, Ak, law, method, zk, tol, max_iter, rho, slots
        )
        whole += qk * qk
        island_done(z, zk, pick, res, qk, it, nc, acc)
    status, residual = island_residual(acc, math.sqrt(whole), tol)
    return count, status, int(acc[2]), residual, acc[3]


@njit(cache=True)
def cone_fom_step(  # noqa: ANN201, PLR0912, PLR0913, PLR0915
    mdiag, E, phi, gravity, h, iterations,
    a, b, point, normal, dist, mu, beta, max_corr,
    carry, old_ids, old_order, old_normal, old_friction, ids, origin,
    law, method, tol, max_iter, rho, slip_threshold, islands,
):  # fmt: skip
    """One step of free bodies with the exact friction cone by APGD or ADMM (module
    docstring).

    Arguments as :func:`contactlab.maximal._cone_kernels.cone_step`'s, with ``method``
    (:data:`APGD` or :data:`ADMM`), ``max_iter`` the iteration cap and ``rho`` ADMM's
    initial penalty (``<= 0``: the general backend's default, ``1e-3`` times the mean
    diagonal of ``W``), ``islands`` whether each island is solved alone
    (:func:`_solve_islands`, each with its own penalty; else the whole problem at once).
    Returns the new twists (nb, 6), the new transforms, the impulses
    ``z`` on the rows ``[N; T]``, the friction impulses as world vectors (nc, 3) and
    ``info`` (``I_SWEEPS`` the iterations; ``I_NATURAL`` and ``I_PRIMAL`` the natural-map
    residual, ``I_DUAL`` and ``I_COMP`` zero).
    """
    nb = mdiag.shape[0]
    n = 6 * nb
    nc = a.shape[0]
    m3 = 3 * nc
    info = np.zeros(N_INFO)
    f, dinv, J0, _, A, t1, t2 = free_rows(
        mdiag, E, phi, gravity, h, iterations, a, b, point, normal
    )
    if decoupled(A):
        info[I_STATUS] = DECOUPLED
        return phi.copy(), E.copy(), np.zeros(m3), np.zeros((nc, 3)), info
    # the contacts in the general route's local order (lowest point up)
    up = np.argsort(point[:, 2], kind="mergesort")
    J = np.empty((m3, 12))
    rhs = np.zeros(m3)
    ca, cb = row_columns(a, b, n, up)
    mu_l = np.empty(nc)
    A_l = np.empty((nc, 9))
    a_l = np.empty(nc, dtype=np.int64)
    b_l = np.empty(nc, dtype=np.int64)
    for j in range(nc):
        i = up[j]
        mu_l[j] = mu[i]
        a_l[j], b_l[j] = a[i], b[i]
        A_l[j, :] = A[i, :]
        rhs[3 * j] = normal_rhs(dist[i], h, beta, max_corr)
        for k in range(3):
            J[3 * j + k, :] = J0[3 * i + k, :]
    # warm start carried over from the recorded contacts
    z = np.zeros(m3)
    if carry:
        carried_start(old_ids, old_order, old_normal, old_friction, ids, origin, t1, t2, up, z)
    count = 0
    if islands and method == APGD:
        count, status, it, residual, work = _apgd_islands(
            J, ca, cb, f, dinv, rhs, mu_l, a_l, b_l, up, law, z, tol, max_iter
        )
    elif islands:
        count, status, it, residual, work = _solve_islands(
            J, ca, cb, f, dinv, rhs, mu_l, A_l, a_l, b_l, up, law, method, z, tol, max_iter,
            rho,
        )  # fmt: skip
    if count <= 1:  # one problem: the step's own arrays
        # the first twist slots of the bodies in contact (the products form no others)
        touched = np.zeros(nb, dtype=np.bool_)
        for i in range(nc):
            touched[a[i]] = True
            if b[i] >= 0:
                touched[b[i]] = True
        slots = 6 * np.nonzero(touched)[0]
        it, residual, _ = _solve(
            J, ca, cb, f, dinv, rhs, mu_l, A_l, law, method, z, tol, max_iter, rho, slots
        )
        status = solve_status(residual, tol)
        work, count = float(it), 1 if nc > 0 else 0
    info[I_ISLANDS], info[I_WORK] = count, work
    v = np.zeros(n + 6)
    # back to the contacts' order: impulses, their twists
    zc = np.empty(m3)
    for j in range(nc):
        i = up[j]
        for k in range(3):
            zc[3 * i + k] = z[3 * j + k]
    _velocity(J, ca, cb, f, dinv, z, v)
    phi_new, E_new, out, friction = cone_outputs(
        J, ca, cb, rhs, v, up, zc, mu, dist, slip_threshold,
        status, it, residual, t1, t2, mdiag, E, h, gravity, info,
    )  # fmt: skip
    return phi_new, E_new, out, friction, info
