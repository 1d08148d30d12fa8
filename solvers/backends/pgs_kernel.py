"""Compiled projected Gauss--Seidel sweeps over a CSR matrix (numba).

A *unit* is either one row or a pair of tangent rows of a disc-friction
contact.  A row update is the Gauss--Seidel step of ArtiSynth notes, eq. (0.17), with
over-relaxation ``omega`` and projection onto the row's bounds; a box-friction
row's bounds are ``±mu z_n`` with the current normal impulse (ArtiSynth notes,
§0.16); a disc pair is updated row by row and then projected onto the disc of
radius ``mu z_n`` (a projected-gradient step on the pair's 2x2 block).

Each sweep also returns the largest natural-map residual of a unit *before*
its update (the residual of the iterate the update sees, free to compute as
``w`` is formed anyway): the driver evaluates the exact residual of the final
iterate only once this estimate is below the tolerance.  A friction unit
whose bound ``mu z_n`` is zero (a contact that carries no normal impulse) is
set to zero without forming ``w``: its projection is zero whatever ``w``.

A box-friction contact (its normal row and one or two tangent rows, none of
them decoupled) is one *contact unit* (``unit_c[u] >= -1`` with
``contact[u]``): its rows are solved together, exactly, given the other
impulses.  With ``A`` the contact's diagonal block of ``M`` and ``r`` the rest
of its ``w``, the local problem ``w = A x + r``, ``0 <= x_n ⟂ w_n >= 0``,
``x_t,k`` in ``[-mu x_n, mu x_n]`` with the box complementarity, is solved by
enumerating its active sets: separation (``x = 0`` when ``r_n >= 0``), then
for ``x_n > 0`` each tangent row sticking (``w_t,k = 0``) or at a bound of the
sign that opposes ``w_t,k``.  The stick set is tried first, then the signs the
stick solution points to, then the rest.  A row-wise update couples a normal
row and its friction rows only through the bounds and can cycle where
friction's effect on the normal velocity dominates the normal's own
(``|A_nt| mu > A_nn``: a hinged paddle striking the ground, where row-wise
sweeps alternate between ``x_n = 0`` and ``x_n`` too large without end); the
local solve does not.  When no active set is consistent (a singular block
without a solution) the unit falls back to the row-wise update.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 4.0

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]
#: the bounded LCP the sweeps solve, as the sweeps pass it on: ``M`` in CSR (``indptr``,
#: ``indices``, ``data``), ``q``, the fixed bounds ``lo`` and ``hi`` and, for a friction
#: row, the row of its normal impulse ``owner`` (``-1``: fixed bounds) and ``mu_row``
Problem = tuple[IVec, IVec, Vec, Vec, Vec, Vec, IVec, Vec]


@njit(cache=True)
def _row_w(indptr: IVec, indices: IVec, data: Vec, q: Vec, z: Vec, i: int) -> float:
    acc = q[i]
    for k in range(indptr[i], indptr[i + 1]):
        acc += data[k] * z[indices[k]]
    return acc


@njit(cache=True)
def _bounds(i: int, lo: Vec, hi: Vec, owner: IVec, mu_row: Vec, z: Vec) -> tuple[float, float]:
    if owner[i] >= 0:
        b = mu_row[i] * max(z[owner[i]], 0.0)
        return -b, b
    return lo[i], hi[i]


@njit(cache=True)
def _natural_row(lcp: Problem, z: Vec, i: int) -> tuple[float, float, float, float]:
    """Row ``i``'s ``w``, its bounds and its natural-map residual ``|z_i - Pi(z_i - w_i)|``."""
    indptr, indices, data, q, lo, hi, owner, mu_row = lcp
    w = _row_w(indptr, indices, data, q, z, i)
    lo_i, hi_i = _bounds(i, lo, hi, owner, mu_row, z)
    return w, lo_i, hi_i, abs(z[i] - min(max(z[i] - w, lo_i), hi_i))


@njit(cache=True)
def _disc_residual(za: float, zb: float, wa: float, wb: float, radius: float) -> float:
    """A disc pair's natural-map residual ``|z_t - Pi_disc(z_t - w_t)|`` (disc of ``radius``)."""
    va = za - wa
    vb = zb - wb
    norm = np.sqrt(va * va + vb * vb)
    if norm > radius:
        va *= radius / norm
        vb *= radius / norm
    return np.sqrt((za - va) ** 2 + (zb - vb) ** 2)


@njit(cache=True)
def contact_blocks(
    indptr: IVec, indices: IVec, data: Vec, unit_a: IVec, unit_b: IVec, unit_c: IVec, out: Vec
) -> None:
    """``out[u]`` (flattened 3x3) = the diagonal block of ``M`` on contact unit ``u``'s rows."""
    for u in range(unit_a.shape[0]):
        if unit_c[u] < -1:
            continue
        rows = (unit_a[u], unit_b[u], unit_c[u])
        for i in range(3):
            if rows[i] < 0:
                continue
            for k in range(indptr[rows[i]], indptr[rows[i] + 1]):
                col = indices[k]
                for j in range(3):
                    if rows[j] == col:
                        out[u, 3 * i + j] += data[k]


@njit(cache=True)
def _local_case(
    A: Vec, r: Vec, m: int, mu: float, s1: int, s2: int, x: Vec, S: Vec, b: Vec
) -> bool:
    """Solve contact unit's active set (``x_n > 0``; tangent k sticks when its sign is 0,
    else sits at ``s_k mu x_n``) into ``x``; True when consistent.  ``S`` (3x3) and ``b``
    (3) are scratch."""
    signs = (0, s1, s2)
    for i in range(m):
        for j in range(m):
            S[i, j] = 0.0
    for i in range(m):
        if i == 0 or signs[i] == 0:
            for j in range(m):
                S[i, j] = A[3 * i + j]
            b[i] = -r[i]
        else:
            S[i, i] = 1.0
            S[i, 0] = -signs[i] * mu
            b[i] = 0.0
    scale = 0.0
    for i in range(m):
        for j in range(m):
            scale = max(scale, abs(S[i, j]))
    # Gaussian elimination with partial pivoting (rows swapped in place)
    for c in range(m):
        p = c
        for i in range(c + 1, m):
            if abs(S[i, c]) > abs(S[p, c]):
                p = i
        if p != c:
            for j in range(m):
                S[c, j], S[p, j] = S[p, j], S[c, j]
            b[c], b[p] = b[p], b[c]
        piv = S[c, c]
        if abs(piv) <= 1e-13 * scale:
            return False
        for i in range(c + 1, m):
            f = S[i, c] / piv
            if f != 0.0:
                for j in range(c, m):
                    S[i, j] -= f * S[c, j]
                b[i] -= f * b[c]
    for c in range(m - 1, -1, -1):
        acc = b[c]
        for j in range(c + 1, m):
            acc -= S[c, j] * x[j]
        x[c] = acc / S[c, c]
    if not x[0] > 0.0:
        return False
    size = 0.0
    for i in range(m):
        size = max(size, abs(r[i]))
    for k in range(1, m):
        if signs[k] == 0:
            if abs(x[k]) > mu * x[0] * (1.0 + 1e-12):
                return False
        else:
            w = r[k]
            for j in range(m):
                w += A[3 * k + j] * x[j]
            if signs[k] * w > 1e-12 * max(size, 1e-300) + 1e-300:
                return False
    return True


@njit(cache=True)
def local_contact_solve(A: Vec, r: Vec, m: int, mu: float, x: Vec, S: Vec, b: Vec) -> bool:
    """Exact solution of a contact unit's box-friction LCP into ``x`` (module docstring);
    ``S`` (3x3) and ``b`` (3) are scratch."""
    if r[0] >= 0.0:
        for i in range(m):
            x[i] = 0.0
        return True
    if _local_case(A, r, m, mu, 0, 0, x, S, b):
        return True
    # the signs the stick solution points to, then every other active set
    p1 = 0
    p2 = 0
    if m > 1 and x[0] > 0.0:
        p1 = 1 if x[1] > 0.0 else -1
        if m > 2:
            p2 = 1 if x[2] > 0.0 else -1
    elif m > 1:
        p1 = 1
        p2 = 1 if m > 2 else 0
    if m > 1 and _local_case(A, r, m, mu, p1, p2, x, S, b):
        return True
    n1 = 3 if m > 1 else 1
    n2 = 3 if m > 2 else 1
    for i1 in range(n1):
        s1 = (0, 1, -1)[i1] if m > 1 else 0
        for i2 in range(n2):
            s2 = (0, 1, -1)[i2] if m > 2 else 0
            if (s1 == 0 and s2 == 0) or (s1 == p1 and s2 == p2):
                continue
            if _local_case(A, r, m, mu, s1, s2, x, S, b):
                return True
    return False


@njit(cache=True)
def _row_update(lcp: Problem, diag: Vec, a: int, z: Vec, omega: float) -> float:
    """One projected Gauss--Seidel step of row ``a``; returns its pre-update residual."""
    wa, lo_a, hi_a, res = _natural_row(lcp, z, a)
    z[a] = min(max(z[a] - omega * wa / diag[a], lo_a), hi_a)
    return res


@njit(cache=True)
def _contact_unit(
    lcp: Problem,
    diag: Vec,
    a: int,
    b: int,
    c: int,
    A: Vec,
    z: Vec,
    omega: float,
    r: Vec,
    x: Vec,
    S: Vec,
    sb: Vec,
) -> float:
    """One exact update of a contact unit; returns its pre-update natural-map residual."""
    rows = (a, b, c)
    m = 3 if c >= 0 else 2
    worst = 0.0
    for i in range(m):
        w, _, _, res = _natural_row(lcp, z, rows[i])
        worst = max(worst, res)
        r[i] = w
    for i in range(m):
        for j in range(m):
            r[i] -= A[3 * i + j] * z[rows[j]]
    mu = lcp[7][b]  # mu_row
    if local_contact_solve(A, r, m, mu, x, S, sb):
        zn = max(z[a] + omega * (x[0] - z[a]), 0.0)
        z[a] = zn
        for i in range(1, m):
            zt = z[rows[i]] + omega * (x[i] - z[rows[i]])
            z[rows[i]] = min(max(zt, -mu * zn), mu * zn)
    else:
        for i in range(m):
            _row_update(lcp, diag, rows[i], z, omega)
    return worst


@njit(cache=True)
def pgs_sweeps(
    indptr: IVec,
    indices: IVec,
    data: Vec,
    diag: Vec,
    q: Vec,
    lo: Vec,
    hi: Vec,
    owner: IVec,
    mu_row: Vec,
    unit_a: IVec,
    unit_b: IVec,
    unit_c: IVec,
    block: Vec,
    step: Vec,
    z: Vec,
    omega: float,
    sweeps: int,
) -> float:
    """Run ``sweeps`` projected Gauss--Seidel sweeps in place on ``z``.

    ``step[u]`` is the step length of a disc pair ``u``: ``1 / lambda_max`` of its
    2x2 diagonal block (bounded by Gershgorin), so the block step is a descent step.
    ``unit_c[u] >= -1`` marks a contact unit (normal ``unit_a``, tangents ``unit_b`` and
    ``unit_c`` or none), solved exactly on its block ``block[u]`` (:func:`contact_blocks`).
    Returns the largest pre-update natural-map residual of a unit in the last sweep.
    """
    lcp = (indptr, indices, data, q, lo, hi, owner, mu_row)
    worst = 0.0
    r = np.zeros(3)
    x = np.zeros(3)
    S = np.zeros((3, 3))
    sb = np.zeros(3)
    for _ in range(sweeps):
        worst = 0.0
        for u in range(unit_a.shape[0]):
            a = unit_a[u]
            b = unit_b[u]
            if unit_c[u] >= -1:
                res = _contact_unit(lcp, diag, a, b, unit_c[u], block[u], z, omega, r, x, S, sb)
                worst = max(worst, res)
            elif b < 0:
                if owner[a] >= 0 and mu_row[a] * z[owner[a]] <= 0.0:
                    worst = max(worst, abs(z[a]))
                    z[a] = 0.0
                    continue
                res = _row_update(lcp, diag, a, z, omega)
                worst = max(worst, res)
            else:
                radius = mu_row[a] * max(z[owner[a]], 0.0)
                if radius <= 0.0:
                    worst = max(worst, np.sqrt(z[a] * z[a] + z[b] * z[b]))
                    z[a] = 0.0
                    z[b] = 0.0
                    continue
                # One step length for both rows keeps the step parallel to w_t, so the fixed
                # point is z_t = Pi_disc(z_t - alpha w_t): the disc condition for any alpha > 0.
                wa = _row_w(indptr, indices, data, q, z, a)
                wb = _row_w(indptr, indices, data, q, z, b)
                worst = max(worst, _disc_residual(z[a], z[b], wa, wb, radius))
                z[a] = z[a] - omega * step[u] * wa
                z[b] = z[b] - omega * step[u] * wb
                norm = np.sqrt(z[a] * z[a] + z[b] * z[b])
                if norm > radius:
                    scale = radius / norm
                    z[a] *= scale
                    z[b] *= scale
    return worst


@njit(cache=True)
def natural_residual(
    indptr: IVec,
    indices: IVec,
    data: Vec,
    q: Vec,
    lo: Vec,
    hi: Vec,
    owner: IVec,
    mu_row: Vec,
    unit_a: IVec,
    unit_b: IVec,
    z: Vec,
) -> float:
    """``max |z - Pi(z - w)|`` over units: zero exactly at an LCP solution."""
    lcp = (indptr, indices, data, q, lo, hi, owner, mu_row)
    worst = 0.0
    for u in range(unit_a.shape[0]):
        a = unit_a[u]
        b = unit_b[u]
        if b < 0:
            res = _natural_row(lcp, z, a)[3]
            worst = max(worst, res)
        else:
            wa = _row_w(indptr, indices, data, q, z, a)
            wb = _row_w(indptr, indices, data, q, z, b)
            radius = mu_row[a] * max(z[owner[a]], 0.0)
            worst = max(worst, _disc_residual(z[a], z[b], wa, wb, radius))
    return worst
