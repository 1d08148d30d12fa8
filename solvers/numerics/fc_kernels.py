"""Compiled iterations of the frictional-contact backends (numba): NSGS, APGD, ADMM.

Every kernel works on the local problem in CSR form: ``W`` (``indptr``,
``indices``, ``data``), ``q``, ``nc`` contacts in rows ``3i, 3i+1, 3i+2``
(normal first), then scalar rows with lower bound ``row_lo`` (``-inf``:
bilateral, ``u = 0``; ``0``: unilateral without friction).  Cones and laws are
coded as in :mod:`solvers.numerics.fc_local`.  One call runs the whole solve;
Python never runs per contact, row or sweep.

The stopping test of all three is the natural-map residual of
:func:`natural_map` (Siconos / FCLIB's ``fc3d`` error, relative to
``||q||_2``), evaluated on the returned iterate.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.fc_local import ccp_local, coulomb_local, local_residual, project, support

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 8.0

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]


@njit(cache=True)
def matvec(indptr: IVec, indices: IVec, data: Vec, x: Vec, q: Vec, out: Vec) -> None:
    """``out = W x + q``."""
    for i in range(q.shape[0]):
        acc = q[i]
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        out[i] = acc


@njit(cache=True)
def diagonal_blocks(indptr: IVec, indices: IVec, data: Vec, nc: int, n: int) -> Vec:
    """``(nc, 3, 3)`` diagonal blocks of the contacts and ``(n - 3 nc,)`` scalar diagonal after."""
    out = np.zeros((nc + (n - 3 * nc), 3, 3))
    for i in range(n):
        blk = i // 3 if i < 3 * nc else nc + (i - 3 * nc)
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            if i < 3 * nc:
                if j // 3 == blk and j < 3 * nc:
                    out[blk, i % 3, j % 3] = data[k]
            elif j == i:
                out[blk, 0, 0] = data[k]
    return out


@njit(cache=True)
def natural_map(
    law: int, kind: int, mu: Vec, dirs: Vec, row_lo: Vec, nc: int, r: Vec, u: Vec, qnorm: float
) -> float:
    """Natural-map residual ``||r - P(r - û)||_2 / ||q||_2`` (``/ 1`` if ``||q|| <= eps``).

    The exact cone's terms are :func:`~solvers.numerics.fc_local.local_residual`'s
    arithmetic written on scalars (the same numbers, bit for bit; the per-contact calls
    allocated two small arrays each: 0.1 ms per evaluation at 1,000 contacts, 10-15 %
    of an ``ipm`` Coulomb step on the 200-box pile).
    """
    acc = 0.0
    if kind == 0:
        for i in range(nc):
            r0, r1, r2 = r[3 * i], r[3 * i + 1], r[3 * i + 2]
            u0, u1, u2 = u[3 * i], u[3 * i + 1], u[3 * i + 2]
            m = mu[i]
            shift = m * math.sqrt(u1 * u1 + u2 * u2) if law == 1 else 0.0
            x0 = r0 - (u0 + shift)
            x1 = r1 - u1
            x2 = r2 - u2
            # projection onto the cone (fc_local.project, kind 0)
            nt = math.sqrt(x1 * x1 + x2 * x2)
            if nt <= m * x0:
                p0, p1, p2 = x0, x1, x2
            elif m * nt <= -x0 or (m == 0.0 and x0 <= 0.0):
                p0 = p1 = p2 = 0.0
            elif m == 0.0:
                p0, p1, p2 = x0, 0.0, 0.0
            else:
                sc = (x0 + m * nt) / (1.0 + m * m)
                p0, p1, p2 = sc, m * sc * x1 / nt, m * sc * x2 / nt
            acc += (r0 - p0) ** 2 + (r1 - p1) ** 2 + (r2 - p2) ** 2
    else:
        rr = np.empty(3)
        uu = np.empty(3)
        for i in range(nc):
            for a in range(3):
                rr[a] = r[3 * i + a]
                uu[a] = u[3 * i + a]
            acc += local_residual(law, kind, mu[i], dirs, rr, uu)
    for k in range(row_lo.shape[0]):
        i = 3 * nc + k
        p = r[i] - u[i]
        if p < row_lo[k]:
            p = row_lo[k]
        acc += (r[i] - p) ** 2
    scale = qnorm if qnorm > 2.220446049250313e-16 else 1.0
    return math.sqrt(acc) / scale


@njit(cache=True)
def _local(law: int, kind: int, mu: float, dirs: Vec, A: Vec, b: Vec, out: Vec) -> None:
    if law == 0:
        ccp_local(kind, mu, dirs, A, b, out)
    else:
        coulomb_local(kind, mu, dirs, A, b, out)


@njit(cache=True)
def nsgs(
    indptr: IVec,
    indices: IVec,
    data: Vec,
    q: Vec,
    law: int,
    kind: int,
    mu: Vec,
    dirs: Vec,
    row_lo: Vec,
    nc: int,
    r: Vec,
    omega: float,
    tol: float,
    max_sweeps: int,
    direct: bool,
) -> tuple[int, float]:
    """Block nonsmooth Gauss--Seidel; returns ``(sweeps, residual)``, ``r`` updated in place.

    Each contact solves its local problem exactly with the others fixed, then
    moves ``omega`` of the way (projected back onto the cone when ``omega > 1``);
    scalar rows take a projected Gauss--Seidel step in the same sweep.

    For the Coulomb law with ``direct=False`` (the default of the backend) the
    sweeps solve the CCP with De Saxcé's shift ``h(u_t)`` frozen in ``q``
    (block coordinate descent on a convex program, which converges), and the
    shift is updated from the current velocities whenever that CCP's residual
    is below a tenth of the Coulomb residual: the fixed point of Acary and
    Cadoux's sequence of CCPs, each solved inexactly.  ``direct=True`` applies
    the exact one-contact Coulomb solver in the sweep (Siconos's NSGS), which
    can cycle on redundant contacts.  The residual is evaluated after sweeps
    1, 2, 4, 8 and then every 8 sweeps (every sweep for the shifted CCP).
    """
    n = q.shape[0]
    blocks = diagonal_blocks(indptr, indices, data, nc, n)
    u = np.empty(n)
    us = np.empty(n)
    qnorm = math.sqrt(np.sum(q * q))
    qs = q.copy()
    b = np.empty(3)
    new = np.empty(3)
    tmp = np.empty(3)
    shifted = law == 1 and not direct
    local_law = 0 if shifted else law
    matvec(indptr, indices, data, r, q, u)
    res = natural_map(law, kind, mu, dirs, row_lo, nc, r, u, qnorm)
    if shifted:
        _shift(kind, mu, dirs, nc, q, u, qs)
    sweeps = 0
    next_check = 1
    while res > tol and sweeps < max_sweeps:
        for i in range(nc):
            for a in range(3):
                row = 3 * i + a
                acc = qs[row]
                for k in range(indptr[row], indptr[row + 1]):
                    acc += data[k] * r[indices[k]]
                b[a] = acc
            for a in range(3):
                for c in range(3):
                    b[a] -= blocks[i, a, c] * r[3 * i + c]
            _local(local_law, kind, mu[i], dirs, blocks[i], b, new)
            if omega != 1.0:
                for a in range(3):
                    tmp[a] = r[3 * i + a] + omega * (new[a] - r[3 * i + a])
                project(kind, mu[i], dirs, tmp, new)
            for a in range(3):
                r[3 * i + a] = new[a]
        for k in range(n - 3 * nc):
            row = 3 * nc + k
            d = blocks[nc + k, 0, 0]
            if d <= 0.0:
                continue
            acc = q[row]
            for kk in range(indptr[row], indptr[row + 1]):
                acc += data[kk] * r[indices[kk]]
            x = r[row] - omega * acc / d
            r[row] = x if x > row_lo[k] else row_lo[k]
        sweeps += 1
        if shifted or sweeps == next_check or sweeps >= max_sweeps:
            matvec(indptr, indices, data, r, q, u)
            res = natural_map(law, kind, mu, dirs, row_lo, nc, r, u, qnorm)
            if not math.isfinite(res):
                break
            next_check = next_check * 2 if next_check < 8 else next_check + 8
            if shifted:
                for i in range(n):
                    us[i] = u[i] + (qs[i] - q[i])
                inner = natural_map(0, kind, mu, dirs, row_lo, nc, r, us, qnorm)
                if inner <= max(0.1 * res, 0.5 * tol):
                    _shift(kind, mu, dirs, nc, q, u, qs)
    return sweeps, res


@njit(cache=True)
def _shift(kind: int, mu: Vec, dirs: Vec, nc: int, q: Vec, u: Vec, qs: Vec) -> None:
    """De Saxcé's shift moved into the free velocity: ``qs_n = q_n + h(u_t)`` per contact."""
    for i in range(nc):
        qs[3 * i] = q[3 * i] + support(kind, mu[i], dirs, u[3 * i + 1], u[3 * i + 2])


def support_shift(kind: int, mu: Vec, dirs: Vec, nc: int, q: Vec, u: Vec, qs: Vec) -> None:
    """De Saxcé's shift ``qs_n = q_n + h(u_t)`` (compiled; for callers outside this module)."""
    _shift(kind, mu, dirs, nc, q, u, qs)


@njit(cache=True)
def _project_all(kind: int, mu: Vec, dirs: Vec, row_lo: Vec, nc: int, x: Vec, out: Vec) -> None:
    xi = np.empty(3)
    pi = np.empty(3)
    for i in range(nc):
        for a in range(3):
            xi[a] = x[3 * i + a]
        project(kind, mu[i], dirs, xi, pi)
        for a in range(3):
            out[3 * i + a] = pi[a]
    for k in range(row_lo.shape[0]):
        v = x[3 * nc + k]
        out[3 * nc + k] = v if v > row_lo[k] else row_lo[k]


@njit(cache=True)
def apgd(
    indptr: IVec,
    indices: IVec,
    data: Vec,
    q: Vec,
    law: int,
    kind: int,
    mu: Vec,
    dirs: Vec,
    row_lo: Vec,
    nc: int,
    r: Vec,
    tol: float,
    max_iter: int,
) -> tuple[int, float]:
    """Nesterov's accelerated projected gradient on the CCP ``min 1/2 r'Wr + q'r, r in K``.

    Backtracking on the Lipschitz estimate ``L`` (doubled while the quadratic
    upper bound fails, then relaxed by 0.9 per iteration: the adaptive step),
    gradient restart of the momentum when ``g . (x_new - x) > 0``.  One
    product with ``W`` per iteration: the gradient at the extrapolated point
    is the same combination of the gradients at the iterates.

    Coulomb law (``law = 1``): the iterations minimise the CCP with De Saxcé's
    shift ``h(u_t)`` frozen in the free velocity (``q_s``), and the shift is
    updated from the current velocities whenever that CCP's natural-map
    residual is below a tenth of the Coulomb residual (the fixed point of
    Acary and Cadoux's sequence of convex problems, as in :func:`nsgs` and
    :func:`admm`), the momentum then restarted.  The Coulomb law is not the
    optimality condition of one minimisation, so this fixed point may fail
    to converge; the residual returned is the Coulomb law's.
    """
    n = q.shape[0]
    qnorm = math.sqrt(np.sum(q * q))
    x = np.empty(n)
    _project_all(kind, mu, dirs, row_lo, nc, r, x)
    qs = q.copy()
    u = np.empty(n)
    matvec(indptr, indices, data, x, q, u)
    if law == 1:
        _shift(kind, mu, dirs, nc, q, u, qs)
    gx = np.empty(n)
    for i in range(n):
        gx[i] = u[i] + (qs[i] - q[i])
    res = natural_map(law, kind, mu, dirs, row_lo, nc, x, u, qnorm)
    if res <= tol:
        r[:] = x
        return 0, res
    # initial Lipschitz estimate from a probe step
    probe = np.empty(n)
    gp = np.empty(n)
    for i in range(n):
        probe[i] = x[i] + 1e-3 * (1.0 + abs(x[i]))
    matvec(indptr, indices, data, probe, qs, gp)
    num = 0.0
    den = 0.0
    for i in range(n):
        num += (gp[i] - gx[i]) ** 2
        den += (probe[i] - x[i]) ** 2
    L = max(math.sqrt(num / den), 1e-12)
    y = x.copy()
    gy = gx.copy()
    xn = np.empty(n)
    gxn = np.empty(n)
    step = np.empty(n)
    theta = 1.0
    it = 0
    while it < max_iter:
        it += 1
        fy = 0.0
        for i in range(n):
            fy += 0.5 * y[i] * (gy[i] - qs[i]) + qs[i] * y[i]
        while True:
            for i in range(n):
                step[i] = y[i] - gy[i] / L
            _project_all(kind, mu, dirs, row_lo, nc, step, xn)
            matvec(indptr, indices, data, xn, qs, gxn)
            fx = 0.0
            bound = fy
            for i in range(n):
                fx += 0.5 * xn[i] * (gxn[i] - qs[i]) + qs[i] * xn[i]
                d = xn[i] - y[i]
                bound += gy[i] * d + 0.5 * L * d * d
            if fx <= bound + 1e-14 * (abs(fx) + abs(bound)) or L > 1e300:
                break
            L *= 2.0
        theta_n = 0.5 * (-theta * theta + theta * math.sqrt(theta * theta + 4.0))
        beta = theta * (1.0 - theta) / (theta * theta + theta_n)
        restart = 0.0
        for i in range(n):
            restart += gy[i] * (xn[i] - x[i])
        if restart > 0.0:
            beta = 0.0
            theta_n = 1.0
        for i in range(n):
            y[i] = xn[i] + beta * (xn[i] - x[i])
            gy[i] = gxn[i] + beta * (gxn[i] - gx[i])
            x[i] = xn[i]
            gx[i] = gxn[i]
        theta = theta_n
        L *= 0.9
        if law == 0:
            res = natural_map(0, kind, mu, dirs, row_lo, nc, x, gx, qnorm)
        else:
            for i in range(n):
                u[i] = gx[i] - (qs[i] - q[i])
            res = natural_map(1, kind, mu, dirs, row_lo, nc, x, u, qnorm)
            if res > tol and math.isfinite(res):
                inner = natural_map(0, kind, mu, dirs, row_lo, nc, x, gx, qnorm)
                if inner <= max(0.1 * res, 0.5 * tol):
                    _shift(kind, mu, dirs, nc, q, u, qs)
                    for i in range(n):
                        gx[i] = u[i] + (qs[i] - q[i])
                        y[i] = x[i]
                        gy[i] = gx[i]
                    theta = 1.0
        if res <= tol or not math.isfinite(res):
            break
    r[:] = x
    return it, res


@njit(cache=True)
def _cg(
    indptr: IVec,
    indices: IVec,
    data: Vec,
    rho: float,
    rhs: Vec,
    x: Vec,
    tol: float,
    max_iter: int,
) -> None:
    """Conjugate gradients on ``(W + rho I) x = rhs`` from the given ``x``."""
    n = rhs.shape[0]
    zero = np.zeros(n)
    Ax = np.empty(n)
    matvec(indptr, indices, data, x, zero, Ax)
    res = np.empty(n)
    for i in range(n):
        res[i] = rhs[i] - Ax[i] - rho * x[i]
    p = res.copy()
    rs = np.sum(res * res)
    Ap = np.empty(n)
    for _ in range(max_iter):
        if math.sqrt(rs) <= tol:
            break
        matvec(indptr, indices, data, p, zero, Ap)
        pAp = 0.0
        for i in range(n):
            Ap[i] += rho * p[i]
            pAp += p[i] * Ap[i]
        if pAp <= 0.0:
            break
        alpha = rs / pAp
        for i in range(n):
            x[i] += alpha * p[i]
            res[i] -= alpha * Ap[i]
        rs_new = np.sum(res * res)
        for i in range(n):
            p[i] = res[i] + (rs_new / rs) * p[i]
        rs = rs_new


@njit(cache=True)
def admm(
    indptr: IVec,
    indices: IVec,
    data: Vec,
    q: Vec,
    law: int,
    kind: int,
    mu: Vec,
    dirs: Vec,
    row_lo: Vec,
    nc: int,
    r: Vec,
    rho: float,
    tol: float,
    max_iter: int,
) -> tuple[int, float, float]:
    """ADMM with an adaptive penalty; returns ``(iterations, residual, final rho)``.

    Splits ``r = z`` with ``z`` in the cone: ``(W + rho I) r = rho (z - l) - q_s``
    (conjugate gradients, warm-started, to a tolerance below the current
    residuals), ``z = P_K(r + l)``, ``l += r - z``.  For the Coulomb law
    ``q_s = q + (h(u_t), 0, 0)`` per contact with ``u`` the velocity of the
    current ``z``, updated whenever the shifted CCP's own natural-map residual
    is below a tenth of the Coulomb residual (De Saxcé's fixed point, as an
    outer loop folded into the splitting); for the CCP ``q_s = q``.  The
    penalty is balanced every 5 iterations: multiplied by
    ``sqrt(primal / dual)`` (clipped to [0.1, 10]) when the primal residual
    ``||r - z||`` and the dual residual ``rho ||z - z_old||`` differ by more
    than a factor 10, the scaled multiplier rescaled with it.  The iterate
    returned is the one with the smallest natural-map residual seen: on
    redundant contacts the residual can stall near 1e-6 while the balancing
    keeps moving the penalty, and a late iterate can be far worse (measured
    on a three-cube stack's frictionless step: 3.3e1 at iteration 2e4 after
    6.8e-7 at 1e3).
    """
    n = q.shape[0]
    qnorm = math.sqrt(np.sum(q * q))
    z = np.empty(n)
    _project_all(kind, mu, dirs, row_lo, nc, r, z)
    x = z.copy()
    lam = np.zeros(n)
    u = np.empty(n)
    us = np.empty(n)
    qs = q.copy()
    rhs = np.empty(n)
    zold = np.empty(n)
    xl = np.empty(n)
    matvec(indptr, indices, data, z, q, u)
    res = natural_map(law, kind, mu, dirs, row_lo, nc, z, u, qnorm)
    if law == 1:
        _shift(kind, mu, dirs, nc, q, u, qs)
    best = z.copy()
    best_res = res
    it = 0
    cg_tol = 1e-3 * (qnorm + 1e-30)
    while res > tol and it < max_iter:
        it += 1
        for i in range(n):
            rhs[i] = rho * (z[i] - lam[i]) - qs[i]
        _cg(indptr, indices, data, rho, rhs, x, cg_tol, 4 * n + 20)
        for i in range(n):
            zold[i] = z[i]
            xl[i] = x[i] + lam[i]
        _project_all(kind, mu, dirs, row_lo, nc, xl, z)
        prim = 0.0
        dual = 0.0
        for i in range(n):
            lam[i] += x[i] - z[i]
            prim += (x[i] - z[i]) ** 2
            dual += (rho * (z[i] - zold[i])) ** 2
        prim = math.sqrt(prim)
        dual = math.sqrt(dual)
        matvec(indptr, indices, data, z, q, u)
        res = natural_map(law, kind, mu, dirs, row_lo, nc, z, u, qnorm)
        if not math.isfinite(res):
            break
        if res < best_res:
            best_res = res
            best[:] = z
        if law == 1:
            # outer fixed point on the shift once the shifted CCP is solved well enough
            for i in range(n):
                us[i] = u[i] + (qs[i] - q[i])
            inner = natural_map(0, kind, mu, dirs, row_lo, nc, z, us, qnorm)
            if inner <= max(0.1 * res, 0.5 * tol):
                _shift(kind, mu, dirs, nc, q, u, qs)
        cg_tol = max(1e-2 * min(prim + dual, res * (qnorm + 1e-30)), 1e-15 * (qnorm + 1.0))
        if it % 5 == 0 and prim > 0.0 and dual > 0.0 and (prim > 10 * dual or dual > 10 * prim):
            factor = min(max(math.sqrt(prim / dual), 0.1), 10.0)
            rho *= factor
            for i in range(n):
                lam[i] /= factor
    if not res <= best_res:
        r[:] = best
        return it, best_res, rho
    r[:] = z
    return it, res, rho


@njit(cache=True)
def csr_symmetric(indptr: IVec, indices: IVec, data: Vec, tol: float) -> bool:
    """Whether a square CSR matrix with sorted indices equals its transpose to ``tol``."""
    n = indptr.shape[0] - 1
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            lo, hi = indptr[j], indptr[j + 1]
            while lo < hi:
                mid = (lo + hi) // 2
                if indices[mid] < i:
                    lo = mid + 1
                else:
                    hi = mid
            other = data[lo] if lo < indptr[j + 1] and indices[lo] == i else 0.0
            if abs(data[k] - other) > tol:
                return False
    return True


@njit(cache=True)
def factor_velocity(
    indptr: IVec, indices: IVec, data: Vec, d: Vec, r: Vec, q: Vec, tmp: Vec, out: Vec
) -> None:
    """``out = C diag(d) C' r + q`` for ``C`` in CSR (``tmp``: ``C' r``, one entry per column)."""
    tmp[:] = 0.0
    for i in range(indptr.shape[0] - 1):
        ri = r[i]
        for k in range(indptr[i], indptr[i + 1]):
            tmp[indices[k]] += data[k] * ri
    for j in range(tmp.shape[0]):
        tmp[j] *= d[j]
    for i in range(indptr.shape[0] - 1):
        acc = q[i]
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * tmp[indices[k]]
        out[i] = acc


@njit(cache=True)
def factor_diagonal(indptr: IVec, indices: IVec, data: Vec, d: Vec) -> Vec:
    """The diagonal of ``C diag(d) C'``: ``sum_k C_ik^2 d_k`` per row, in the row's order."""
    out = np.empty(indptr.shape[0] - 1)
    for i in range(indptr.shape[0] - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * data[k] * d[indices[k]]
        out[i] = acc
    return out


@njit(cache=True)
def soc_measures(r, u, mu, nc, slip):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Signorini, exact-cone and dissipation violations of :func:`solvers.frictional.fc_residuals`
    (the exact cone), contact by contact: ``max(|min(r_n, u_n)|, max(-r_n, -u_n, 0))``,
    ``max(||r_t|| - mu r_n, 0)`` and, where ``||u_t|| > slip`` and ``r_n > 0``,
    ``||r_t + mu r_n u_t / ||u_t||||``; NaN propagates as in numpy."""
    sig, cone, dis = -np.inf, -np.inf, -np.inf
    sliding = False
    for i in range(nc):
        rn, un = r[3 * i], u[3 * i]
        a = abs(min(rn, un)) if not (math.isnan(rn) or math.isnan(un)) else np.nan
        b = max(max(-rn, -un), 0.0) if not (math.isnan(rn) or math.isnan(un)) else np.nan
        x = max(a, b) if not (math.isnan(a) or math.isnan(b)) else np.nan
        sig = x if math.isnan(x) or math.isnan(sig) else max(sig, x)
        r1, r2 = r[3 * i + 1], r[3 * i + 2]
        out = math.sqrt(r1 * r1 + r2 * r2) - mu[i] * rn
        out = out if math.isnan(out) else max(out, 0.0)
        cone = out if math.isnan(out) or math.isnan(cone) else max(cone, out)
        u1, u2 = u[3 * i + 1], u[3 * i + 2]
        speed = math.sqrt(u1 * u1 + u2 * u2)
        if speed > slip and rn > 0:
            sliding = True
            m = -(mu[i] * rn)
            d1 = r1 - m * u1 / speed
            d2 = r2 - m * u2 / speed
            gap = math.sqrt(d1 * d1 + d2 * d2)
            dis = gap if math.isnan(gap) or math.isnan(dis) else max(dis, gap)
    return sig, cone, dis if sliding else 0.0


@njit(cache=True)
def factor_soc_residuals(  # type: ignore[no-untyped-def]  # pragma: no cover
    fptr, fidx, fval, fd, r, q, tmp, u, law, mu, dirs, row_lo, nc, qnorm, slip
):
    """:func:`solvers.frictional.fc_residuals` of the exact cone through ``W``'s factor, in
    one call: ``u = C diag(d) C' r + q`` (into ``u``), the natural map of ``law`` and
    :func:`soc_measures` (zeros without contacts)."""
    factor_velocity(fptr, fidx, fval, fd, r, q, tmp, u)
    nat = natural_map(law, 0, mu, dirs, row_lo, nc, r, u, qnorm)
    if nc == 0:
        return nat, 0.0, 0.0, 0.0
    sig, cone, dis = soc_measures(r, u, mu, nc, slip)
    return nat, sig, cone, dis
