"""Compiled maps and sweeps of the frictional-contact backends (numba) on three-row contacts.

Every kernel works on the local problem in CSR form: ``W`` (``indptr``,
``indices``, ``data``), ``q``, ``nc`` contacts in rows ``3i, 3i+1, 3i+2``
(normal first), then scalar rows with lower bound ``row_lo`` (``-inf``:
bilateral, ``u = 0``; ``0``: unilateral without friction).  Cones and laws are
coded as in :mod:`solvers.numerics.fc_local`.  One call runs the whole solve;
Python never runs per contact, row or sweep.  Here: the maps of the cones (projection,
De Saxcé's shift, natural map) and the block Gauss--Seidel sweeps :func:`nsgs`; APGD and
ADMM, written once for these and the wide contacts, are in
:mod:`solvers.numerics.fc_methods`.

The stopping test of every method is the natural-map residual of
:func:`natural_map` (Siconos / FCLIB's ``fc3d`` error, relative to
``||q||_2``), evaluated on the returned iterate.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.csr import find_sorted
from solvers.numerics.fc_local import ccp_local, coulomb_local, local_residual, project, support

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 6.0

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
def cone_gap(m: float, x0: float, x1: float, x2: float, r0: float, r1: float, r2: float) -> float:  # noqa: PLR0913
    """``||r - P_K(x)||^2`` for the cone ``K`` of friction coefficient ``m``
    (:func:`~solvers.numerics.fc_local.project`, kind 0, written on scalars)."""
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
    return (r0 - p0) ** 2 + (r1 - p1) ** 2 + (r2 - p2) ** 2


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
            acc += cone_gap(m, r0 - (u0 + shift), r1 - u1, r2 - u2, r0, r1, r2)
    else:
        rr = np.empty(3)
        uu = np.empty(3)
        for i in range(nc):
            for a in range(3):
                rr[a] = r[3 * i + a]
                uu[a] = u[3 * i + a]
            acc += local_residual(law, kind, mu[i], dirs, rr, uu)
    return _add_bound_rows(row_lo, 3 * nc, r, u, acc, qnorm)


@njit(cache=True)
def _add_bound_rows(row_lo: Vec, first: int, r: Vec, u: Vec, acc: float, qnorm: float) -> float:
    """The natural map's end, for either contact layout: the contacts' sum of squares
    ``acc`` plus the scalar rows' (from row ``first``, projected onto ``r >= row_lo``),
    square-rooted and divided by ``||q||`` (``/ 1`` if ``||q|| <= eps``)."""
    for k in range(row_lo.shape[0]):
        i = first + k
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
        _sweep_bound_rows(indptr, indices, data, q, row_lo, 3 * nc, blocks[nc:, 0, 0], omega, r)
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
def _sweep_bound_rows(
    indptr: IVec, indices: IVec, data: Vec, q: Vec, row_lo: Vec, first: int, diag: Vec,
    omega: float, r: Vec,
) -> None:  # fmt: skip
    """One projected Gauss--Seidel sweep over the scalar rows from row ``first`` (their
    diagonal entries ``diag``; a row without a positive one is left), ``r`` in place: the
    end of every Gauss--Seidel sweep, for either contact layout."""
    for k in range(diag.shape[0]):
        row = first + k
        d = diag[k]
        if d <= 0.0:
            continue
        acc = q[row]
        for kk in range(indptr[row], indptr[row + 1]):
            acc += data[kk] * r[indices[kk]]
        x = r[row] - omega * acc / d
        r[row] = x if x > row_lo[k] else row_lo[k]


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
    _project_bounds(row_lo, 3 * nc, x, out)


@njit(cache=True)
def _project_bounds(row_lo: Vec, first: int, x: Vec, out: Vec) -> None:
    """The scalar rows from row ``first`` projected onto their bounds ``row_lo``."""
    for k in range(row_lo.shape[0]):
        v = x[first + k]
        out[first + k] = v if v > row_lo[k] else row_lo[k]


@njit(cache=True)
def cg_start(rho: float, rhs: Vec, x: Vec, Ax: Vec) -> tuple[Vec, Vec, float]:
    """Conjugate gradients' start on ``(W + rho I) x = rhs`` given ``Ax = W x``: the
    residual, the first direction (a copy of it) and its squared norm."""
    n = x.shape[0]
    res = np.empty(n)
    for i in range(n):
        res[i] = rhs[i] - Ax[i] - rho * x[i]
    return res, res.copy(), np.sum(res * res)


@njit(cache=True)
def cg_step(rho: float, x: Vec, res: Vec, p: Vec, Ap: Vec, rs: float) -> tuple[float, bool]:
    """One step of conjugate gradients on ``(W + rho I) x = b`` given ``Ap = W p``: ``x``,
    the residual ``res`` and the direction ``p`` moved; returns the new ``||res||^2`` and
    whether the iteration stops (``p`` of no positive curvature: nothing moved)."""
    n = x.shape[0]
    pAp = 0.0
    for i in range(n):
        Ap[i] += rho * p[i]
        pAp += p[i] * Ap[i]
    if pAp <= 0.0:
        return rs, True
    alpha = rs / pAp
    for i in range(n):
        x[i] += alpha * p[i]
        res[i] -= alpha * Ap[i]
    rs_new = np.sum(res * res)
    for i in range(n):
        p[i] = res[i] + (rs_new / rs) * p[i]
    return rs_new, False


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
    res, p, rs = cg_start(rho, rhs, x, Ax)
    Ap = np.empty(n)
    for _ in range(max_iter):
        if math.sqrt(rs) <= tol:
            break
        matvec(indptr, indices, data, p, zero, Ap)
        rs, done = cg_step(rho, x, res, p, Ap, rs)
        if done:
            break


@njit(cache=True)
def csr_symmetric(indptr: IVec, indices: IVec, data: Vec, tol: float) -> bool:
    """Whether a square CSR matrix with sorted indices equals its transpose to ``tol``."""
    n = indptr.shape[0] - 1
    for i in range(n):
        for k in range(indptr[i], indptr[i + 1]):
            j = indices[k]
            lo = find_sorted(indices, indptr[j], indptr[j + 1], i)
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
