"""Compiled wide friction cones: torsional and rolling rows in the frictional-contact solvers.

A *wide* contact has ``d`` rows (3 to 6): the normal row first, then its tangential rows
``(t1, t2[, s][, r1, r2])`` (sliding, spin about the normal, rolling), each with its own
coefficient ``m_j > 0`` (``mu`` for sliding, ``mu_t`` and ``mu_r`` [m] for spin and
rolling; MuJoCo's ``condim`` 4 and 6).  The problem is held in flat arrays: ``off``
(``nc + 1``: contact ``i`` owns rows ``off[i] .. off[i+1] - 1``), ``mr`` (a coefficient per
row; the normal row's entry is unused) and ``fam`` (a family label per row: rows of one
family form one group of the *separate* cone).  Two cones (``sep``):

- ``sep = 0``, elliptic (MuJoCo's): ``K = {r : ||D^-1 r_T|| <= r_n}``, ``D = diag(m_j)``;
  dual ``K* = {u : u_n >= ||D u_T||}``;
- ``sep = 1``, separate: ``||r_g|| <= m_g r_n`` for each family ``g`` (sliding, spin,
  rolling), each group bounded by the full normal impulse; dual
  ``K* = {u : u_n >= sum_g m_g ||u_g||}``.

A row with ``m_j = 0`` is forced to zero: ``K`` is then the product of ``{0}`` in that row
and the cone of the other rows, so every map below zeroes it and works on the rest.

Euclidean projection onto the elliptic cone (derivation).  Scaling the tangential rows,
``r = S w`` with ``S = diag(1, m_j)``, maps ``K`` onto the unit second-order cone, and
``S P_SOC(S^-1 x)`` is the projection in the metric ``S^-2`` -- the Euclidean projection
only when all ``m_j`` are equal (then it is the usual ``mu``-cone projection).  The
Euclidean one: ``x`` in ``K`` is its own projection, ``x`` in the polar cone ``-K*``
(``-x_n >= ||D x_T||``) projects to 0, otherwise the projection ``y`` lies on the boundary
and the KKT conditions of ``min ||y - x||^2/2`` s.t. ``sum y_j^2/m_j^2 <= y_n^2`` with a
multiplier ``s > 0`` give

    ``y_n (1 - s) = x_n``,  ``y_j (1 + s/m_j^2) = x_j``,  so
    ``y_j = x_j m_j^2 / (m_j^2 + s)``,  ``s = 1 - x_n / y_n``.

With ``t = y_n > 0`` the boundary condition is the scalar equation
``t^2 = S(t) = sum_j (x_j m_j / (m_j^2 + s(t)))^2``.  For ``x_n > 0``, ``s`` rises with
``t`` on ``(x_n, inf)`` so ``t - sqrt(S)`` is increasing, negative at ``t = x_n``
(``x`` is not in ``K``) and non-negative at ``t = ||D^-1 x_T||``; for ``x_n < 0`` the
substitution ``σ = 1/s`` gives ``(t^2 - S)/t^2 ∝ x_n^2/(1-σ)^2 - sum_j
(x_j m_j)^2/(1 + m_j^2 σ)^2``, increasing in ``σ`` (and ``t`` rises with ``σ``),
negative at ``t -> 0`` (``x`` is not in ``-K*``) and non-negative at
``t = sqrt(sum_j (x_j m_j/(m_j^2+1))^2)`` (``s >= 1``); ``x_n = 0`` has ``s = 1``.  So
one sign change, found by bisection to rounding: :func:`project_elliptic`.

The separate cone: with ``a = y_n`` fixed each group's nearest point is ``x_g`` or its
radial scaling to ``m_g a``, so ``a`` minimises the convex piecewise quadratic
``(a - x_n)^2 + sum_g (||x_g|| - m_g a)_+^2`` over ``a >= 0``: the root of its increasing
piecewise-linear derivative, found segment by segment (:func:`project_separate`).

Local problem of one contact (the ``nsgs`` sweep): ``min 1/2 r'A r + b'r`` over ``K``.
Elliptic, exactly: in the scaled variables ``w`` (unit SOC, ``Â = S A S``, ``b̂ = S b``)
the solution is the apex (``b̂`` in the SOC), the unconstrained minimiser, or a boundary
point with ``Â w + b̂ = s R w``, ``R = diag(1, -1, ..)``, ``s > 0`` (a boundary point's
complementary dual point is its reflection).  With ``Â = L L'`` and the eigenpairs
``(λ_i, q_i)`` of ``L^-1 R L^-T`` (one positive eigenvalue ``λ_1``: Sylvester's law),
``V = L^-T Q``, ``c = V'b̂``: ``w(s) = -V (c_i / (1 - s λ_i))_i`` and
``w'Rw = φ(s) = sum_i λ_i c_i^2 / (1 - s λ_i)^2``.  ``φ`` increases on ``(0, 1/λ_1)`` (root
iff ``φ(0) < 0``) and, in ``σ = 1/s``, ``φ/s^2 = sum_i λ_i c_i^2 / (σ - λ_i)^2`` increases
on ``(0, λ_1)`` (root iff ``b̂'R b̂ < 0``): at most one root each, found by bisection; the
root with ``w_n >= 0`` is the KKT point, hence the minimiser (:func:`ccp_elliptic`).  The
separate cone (several multipliers) and degenerate cases are solved by accelerated
projected gradient on the block, warm-started (:func:`ccp_iterative`).

:func:`nsgs_wide` is :func:`~solvers.numerics.fc_kernels.nsgs` with these maps and the
local solver; APGD and ADMM are written once for both layouts
(:mod:`solvers.numerics.fc_methods`) over :func:`project_all_wide`, :func:`shift_wide`
and :func:`natural_map_wide`.  The Coulomb law is De Saxcé's: the CCP with the normal
velocity shifted by the dual norm ``h(u_T)`` (``||D u_T||``, elliptic; ``sum_g m_g
||u_g||``, separate), the shift an outer fixed point, as for three rows.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.dense import cholesky_solve
from solvers.numerics.fc_kernels import (
    _add_bound_rows,
    _project_bounds,
    _sweep_bound_rows,
    matvec,
)

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 17.0

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]


@njit(cache=True)
def project_elliptic(mr: Vec, s: int, d: int, x: Vec, xo: int, out: Vec, oo: int) -> None:
    """Euclidean projection of ``x[xo:xo+d]`` onto the elliptic cone of coefficients
    ``mr[s+1:s+d]``, into ``out[oo:oo+d]`` (module docstring)."""
    xn = x[xo]
    inner = 0.0  # ||D^-1 x_T||^2 over the rows with m > 0
    dual = 0.0  # ||D x_T||^2
    top = 0.0  # sum (x_j m_j / (m_j^2 + 1))^2
    free = 0
    for j in range(1, d):
        m = mr[s + j]
        if m > 0.0:
            xj = x[xo + j]
            inner += (xj / m) ** 2
            dual += (m * xj) ** 2
            top += (xj * m / (m * m + 1.0)) ** 2
            free += 1
    if math.sqrt(inner) <= xn:
        out[oo] = xn
        for j in range(1, d):
            out[oo + j] = x[xo + j] if mr[s + j] > 0.0 else 0.0
        return
    if free == 0 or math.sqrt(dual) <= -xn:
        out[oo] = xn if (free == 0 and xn > 0.0) else 0.0
        for j in range(1, d):
            out[oo + j] = 0.0
        return
    if xn == 0.0:
        t = math.sqrt(top)
        sm = 1.0
    else:
        lo = xn if xn > 0.0 else 0.0
        hi = math.sqrt(inner) if xn > 0.0 else math.sqrt(top)
        for _ in range(200):
            t = 0.5 * (lo + hi)
            if t <= lo or t >= hi:
                break
            sm = 1.0 - xn / t
            acc = 0.0
            for j in range(1, d):
                m = mr[s + j]
                if m > 0.0:
                    acc += (x[xo + j] * m / (m * m + sm)) ** 2
            if t * t < acc:
                lo = t
            else:
                hi = t
        t = 0.5 * (lo + hi)
        sm = 1.0 - xn / t
    out[oo] = t
    for j in range(1, d):
        m = mr[s + j]
        out[oo + j] = x[xo + j] * m * m / (m * m + sm) if m > 0.0 else 0.0


@njit(cache=True)
def _group_norm(fam: IVec, s: int, d: int, j0: int, x: Vec, xo: int) -> tuple[float, int]:
    """Norm of the group starting at row ``j0`` of the contact and the row after it."""
    acc = 0.0
    j = j0
    while j < d and fam[s + j] == fam[s + j0]:
        acc += x[xo + j] * x[xo + j]
        j += 1
    return math.sqrt(acc), j


@njit(cache=True)
def project_separate(
    mr: Vec, fam: IVec, s: int, d: int, x: Vec, xo: int, out: Vec, oo: int
) -> None:
    """Euclidean projection onto the separate cone (one circular cone per family sharing
    the normal component), into ``out[oo:oo+d]`` (module docstring)."""
    xn = x[xo]
    # the root a of h(a) = a - x_n - sum_g m_g (n_g - m_g a)_+ (increasing), a >= 0:
    # on each segment between breakpoints b_g = n_g / m_g the active set is fixed
    a = -1.0
    h0 = -xn
    j = 1
    while j < d:
        ng, nxt = _group_norm(fam, s, d, j, x, xo)
        if mr[s + j] > 0.0:
            h0 -= mr[s + j] * ng
        j = nxt
    if h0 >= 0.0:
        a = 0.0
    else:
        # candidate thresholds: 0 and each breakpoint; active = {g : b_g > threshold}; the
        # candidate inside its segment is the root (at a breakpoint, rounding may put it just
        # outside both: the one closest to its segment is kept)
        miss = np.inf
        k = 0
        while miss > 0.0 and k < d:
            if k == 0:
                tau = 0.0
            else:
                if k > 1 and fam[s + k] == fam[s + k - 1]:
                    k += 1
                    continue
                if mr[s + k] <= 0.0:
                    k += 1
                    continue
                ng, _ = _group_norm(fam, s, d, k, x, xo)
                tau = ng / mr[s + k]
            num, den = xn, 1.0
            nearest = np.inf  # the next breakpoint above tau
            j = 1
            while j < d:
                ng, nxt = _group_norm(fam, s, d, j, x, xo)
                m = mr[s + j]
                if m > 0.0:
                    b = ng / m
                    if b > tau:
                        num += m * ng
                        den += m * m
                        nearest = min(nearest, b)
                j = nxt
            cand = num / den
            off_by = max(tau - cand, cand - nearest, 0.0)
            if off_by < miss:
                miss, a = off_by, cand
            k += 1
        a = max(a, 0.0)
    out[oo] = a
    j = 1
    while j < d:
        ng, nxt = _group_norm(fam, s, d, j, x, xo)
        m = mr[s + j]
        scale = 0.0
        if m > 0.0:
            scale = 1.0 if ng <= m * a else (m * a / ng if ng > 0.0 else 0.0)
        for jj in range(j, nxt):
            out[oo + jj] = scale * x[xo + jj]
        j = nxt


@njit(cache=True)
def project(
    sep: int, mr: Vec, fam: IVec, s: int, d: int, x: Vec, xo: int, out: Vec, oo: int
) -> None:
    """Euclidean projection of one contact's ``x[xo:xo+d]`` onto its cone."""
    if sep == 0:
        project_elliptic(mr, s, d, x, xo, out, oo)
    else:
        project_separate(mr, fam, s, d, x, xo, out, oo)


@njit(cache=True)
def support(sep: int, mr: Vec, fam: IVec, s: int, d: int, u: Vec, uo: int) -> float:
    """The dual norm ``h(u_T)`` of one contact's tangential velocity (De Saxcé's shift)."""
    if sep == 0:
        acc = 0.0
        for j in range(1, d):
            acc += (mr[s + j] * u[uo + j]) ** 2
        return math.sqrt(acc)
    out = 0.0
    j = 1
    while j < d:
        ng, nxt = _group_norm(fam, s, d, j, u, uo)
        out += mr[s + j] * ng
        j = nxt
    return out


@njit(cache=True)
def _objective(A: Vec, b: Vec, d: int, r: Vec) -> float:
    acc = 0.0
    for i in range(d):
        ar = 0.0
        for j in range(d):
            ar += A[i, j] * r[j]
        acc += r[i] * (0.5 * ar + b[i])
    return acc


@njit(cache=True)
def ccp_iterative(
    sep: int, mr: Vec, fam: IVec, s: int, d: int, A: Vec, b: Vec, r: Vec, max_iter: int
) -> None:
    """``min 1/2 r'A r + b'r`` over the contact's cone by accelerated projected gradient
    (step ``1/L``, ``L`` the largest Gershgorin bound of ``A``; momentum restarted when the
    objective rises), from the given ``r``, until a step moves less than ``1e-15`` of it."""
    L = 0.0
    for i in range(d):
        acc = 0.0
        for j in range(d):
            acc += abs(A[i, j])
        L = max(L, acc)
    if L <= 0.0:
        return
    x = np.empty(d)
    y = np.empty(d)
    g = np.empty(d)
    xn = np.empty(d)
    project(sep, mr, fam, s, d, r, 0, x, 0)
    y[:] = x
    f = _objective(A, b, d, x)
    theta = 1.0
    for _ in range(max_iter):
        for i in range(d):
            acc = b[i]
            for j in range(d):
                acc += A[i, j] * y[j]
            g[i] = y[i] - acc / L
        project(sep, mr, fam, s, d, g, 0, xn, 0)
        fn = _objective(A, b, d, xn)
        step = 0.0
        size = 0.0
        for i in range(d):
            step += (xn[i] - x[i]) ** 2
            size += xn[i] * xn[i]
        theta_n = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * theta * theta))
        beta = (theta - 1.0) / theta_n
        if fn > f:
            beta = 0.0
            theta_n = 1.0
        for i in range(d):
            y[i] = xn[i] + beta * (xn[i] - x[i])
            x[i] = xn[i]
        f = fn
        theta = theta_n
        if math.sqrt(step) <= 1e-15 * (1.0 + math.sqrt(size)):
            break
    for i in range(d):
        r[i] = x[i]


@njit(cache=True)
def ccp_elliptic(mr: Vec, s: int, d: int, A: Vec, b: Vec, r: Vec) -> bool:
    """Exact minimiser of ``1/2 r'A r + b'r`` over the elliptic cone (module docstring),
    into ``r``; ``False`` (``r`` untouched) when ``A`` restricted to the free rows is not
    positive definite or no boundary root qualifies (the caller iterates instead)."""
    p = 1
    for j in range(1, d):
        if mr[s + j] > 0.0:
            p += 1
    idx = np.empty(p, dtype=np.int64)
    sc = np.empty(p)
    idx[0], sc[0] = 0, 1.0
    k = 1
    for j in range(1, d):
        if mr[s + j] > 0.0:
            idx[k], sc[k] = j, mr[s + j]
            k += 1
    Ah = np.empty((p, p))
    bh = np.empty(p)
    for i in range(p):
        bh[i] = sc[i] * b[idx[i]]
        for j in range(p):
            Ah[i, j] = sc[i] * A[idx[i], idx[j]] * sc[j]
    for j in range(d):
        r[j] = 0.0
    # apex: b̂ in the (self-dual) unit cone
    nt = 0.0
    for i in range(1, p):
        nt += bh[i] * bh[i]
    if bh[0] >= math.sqrt(nt):
        return True
    if Ah[0, 0] <= 0.0:
        return False
    if p == 1:
        r[0] = -bh[0] / Ah[0, 0]
        return True
    # Cholesky Â = L L'
    Lc = np.zeros((p, p))
    for i in range(p):
        for j in range(i + 1):
            acc = Ah[i, j]
            for k in range(j):
                acc -= Lc[i, k] * Lc[j, k]
            if i == j:
                if acc <= 1e-14 * Ah[i, i]:
                    return False
                Lc[i, i] = math.sqrt(acc)
            else:
                Lc[i, j] = acc / Lc[j, j]
    # unconstrained minimiser w0 = -Â^-1 b̂
    w = np.empty(p)
    for i in range(p):
        w[i] = -bh[i]
    cholesky_solve(Lc, w, w)
    nt = 0.0
    for i in range(1, p):
        nt += w[i] * w[i]
    if w[0] >= math.sqrt(nt):
        for i in range(p):
            r[idx[i]] = sc[i] * w[i]
        return True
    # Linv = L^-1 (lower triangular)
    Li = np.zeros((p, p))
    for col in range(p):
        for i in range(col, p):
            acc = 1.0 if i == col else 0.0
            for k in range(col, i):
                acc -= Lc[i, k] * Li[k, col]
            Li[i, col] = acc / Lc[i, i]
    # Mr = Linv R Linv'
    Mr = np.empty((p, p))
    for i in range(p):
        for j in range(p):
            acc = Li[i, 0] * Li[j, 0]
            for k in range(1, p):
                acc -= Li[i, k] * Li[j, k]
            Mr[i, j] = acc
    lam, Q = np.linalg.eigh(Mr)
    # V = L^-T Q = Linv' Q, c = V' b̂
    V = np.empty((p, p))
    for i in range(p):
        for j in range(p):
            acc = 0.0
            for k in range(p):
                acc += Li[k, i] * Q[k, j]
            V[i, j] = acc
    c = np.empty(p)
    for j in range(p):
        acc = 0.0
        for i in range(p):
            acc += V[i, j] * bh[i]
        c[j] = acc
    l1 = lam[p - 1]
    if not l1 > 0.0:
        return False
    best = np.inf
    found = False
    cand = np.empty(p)
    for branch in range(2):
        if branch == 0:
            # phi(s) on (0, 1/l1), increasing: a root iff phi(0) < 0
            f0 = 0.0
            for i in range(p):
                f0 += lam[i] * c[i] * c[i]
            if not f0 < 0.0:
                continue
            lo, hi = 0.0, 1.0 / l1
        else:
            # chi(sigma) = sum lam c^2 / (sigma - lam)^2 on (0, l1), increasing
            f0 = 0.0
            for i in range(p):
                f0 += c[i] * c[i] / lam[i]
            if not f0 < 0.0:
                continue
            lo, hi = 0.0, l1
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            acc = 0.0
            for i in range(p):
                den = (1.0 - mid * lam[i]) if branch == 0 else (mid - lam[i])
                acc += lam[i] * c[i] * c[i] / (den * den)
            if acc < 0.0:
                lo = mid
            else:
                hi = mid
        mid = 0.5 * (lo + hi)
        sv = mid if branch == 0 else 1.0 / mid
        for i in range(p):
            acc = 0.0
            for j in range(p):
                acc -= V[i, j] * c[j] / (1.0 - sv * lam[j])
            cand[i] = acc
        if not (cand[0] >= 0.0 and math.isfinite(cand[0])):
            continue
        # on the boundary up to rounding: put it there (w_n = ||w_T||)
        nt = 0.0
        for i in range(1, p):
            nt += cand[i] * cand[i]
        nt = math.sqrt(nt)
        avg = 0.5 * (cand[0] + nt)
        cand[0] = avg
        if nt > 0.0:
            for i in range(1, p):
                cand[i] *= avg / nt
        val = 0.0
        for i in range(p):
            acc = 0.0
            for j in range(p):
                acc += Ah[i, j] * cand[j]
            val += cand[i] * (0.5 * acc + bh[i])
        if val < best:
            best = val
            found = True
            for i in range(p):
                w[i] = cand[i]
    if not found:
        return False
    for i in range(p):
        r[idx[i]] = sc[i] * w[i]
    return True


@njit(cache=True)
def ccp_local(sep: int, mr: Vec, fam: IVec, s: int, d: int, A: Vec, b: Vec, r: Vec) -> None:
    """The contact's local CCP ``min 1/2 r'A r + b'r`` over its cone, into ``r`` (``r`` holds
    the current impulse on entry: the iterative solver's warm start)."""
    if sep == 0:
        keep = r.copy()
        if ccp_elliptic(mr, s, d, A, b, r):
            return
        r[:] = keep
    ccp_iterative(sep, mr, fam, s, d, A, b, r, 2000)


@njit(cache=True)
def natural_map_wide(
    law: int, sep: int, off: IVec, mr: Vec, fam: IVec, row_lo: Vec, nc: int, r: Vec, u: Vec,
    qnorm: float,
) -> float:  # fmt: skip
    """``||r - P_K(r - û)||_2 / ||q||_2`` over the wide contacts and the scalar rows."""
    x = np.empty(6)
    p = np.empty(6)
    acc = 0.0
    for i in range(nc):
        s = off[i]
        d = off[i + 1] - s
        if x.shape[0] < d:
            x = np.empty(d)
            p = np.empty(d)
        shift = support(sep, mr, fam, s, d, u, s) if law == 1 else 0.0
        for a in range(d):
            x[a] = r[s + a] - u[s + a]
        x[0] -= shift
        project(sep, mr, fam, s, d, x, 0, p, 0)
        for a in range(d):
            acc += (r[s + a] - p[a]) ** 2
    return _add_bound_rows(row_lo, off[nc], r, u, acc, qnorm)


@njit(cache=True)
def support_all(sep: int, off: IVec, mr: Vec, fam: IVec, nc: int, u: Vec, out: Vec) -> None:
    """``out[i] = h(u_T)`` of every contact."""
    for i in range(nc):
        s = off[i]
        out[i] = support(sep, mr, fam, s, off[i + 1] - s, u, s)


@njit(cache=True)
def shift_wide(sep: int, off: IVec, mr: Vec, fam: IVec, nc: int, q: Vec, u: Vec, qs: Vec) -> None:
    """De Saxcé's shift moved into the free velocity: ``qs_n = q_n + h(u_T)`` per contact."""
    for i in range(nc):
        s = off[i]
        qs[s] = q[s] + support(sep, mr, fam, s, off[i + 1] - s, u, s)


@njit(cache=True)
def project_all_wide(
    sep: int, off: IVec, mr: Vec, fam: IVec, row_lo: Vec, nc: int, x: Vec, out: Vec
) -> None:
    """Projection of every contact onto its cone and every scalar row onto its bound."""
    for i in range(nc):
        s = off[i]
        project(sep, mr, fam, s, off[i + 1] - s, x, s, out, s)
    _project_bounds(row_lo, off[nc], x, out)


@njit(cache=True)
def wide_blocks(
    indptr: IVec, indices: IVec, data: Vec, off: IVec, nc: int, n: int
) -> tuple[IVec, Vec, Vec]:
    """The contacts' diagonal blocks (flat, row-major, block ``i`` at ``boff[i]``) and the
    scalar rows' diagonal entries."""
    boff = np.zeros(nc + 1, dtype=np.int64)
    for i in range(nc):
        d = off[i + 1] - off[i]
        boff[i + 1] = boff[i] + d * d
    blocks = np.zeros(boff[nc])
    m = off[nc]
    sdiag = np.zeros(n - m)
    for i in range(nc):
        s, e = off[i], off[i + 1]
        d = e - s
        for row in range(s, e):
            for k in range(indptr[row], indptr[row + 1]):
                j = indices[k]
                if s <= j < e:
                    blocks[boff[i] + (row - s) * d + (j - s)] = data[k]
    for row in range(m, n):
        for k in range(indptr[row], indptr[row + 1]):
            if indices[k] == row:
                sdiag[row - m] = data[k]
    return boff, blocks, sdiag


@njit(cache=True)
def nsgs_wide(
    indptr: IVec, indices: IVec, data: Vec, q: Vec, law: int, sep: int, off: IVec, mr: Vec,
    fam: IVec, row_lo: Vec, nc: int, r: Vec, omega: float, tol: float, max_sweeps: int,
) -> tuple[int, float]:  # fmt: skip
    """Block nonsmooth Gauss--Seidel on wide contacts; ``(sweeps, residual)``, ``r`` in place.

    As :func:`~solvers.numerics.fc_kernels.nsgs` (the Coulomb law by De Saxcé's shift frozen
    in ``q`` and updated once the shifted CCP's residual is below a tenth of the Coulomb
    residual), with the local solver :func:`ccp_local`."""
    n = q.shape[0]
    boff, blocks, sdiag = wide_blocks(indptr, indices, data, off, nc, n)
    m = off[nc]
    dmax = 1
    for i in range(nc):
        dmax = max(dmax, off[i + 1] - off[i])
    u = np.empty(n)
    us = np.empty(n)
    qnorm = math.sqrt(np.sum(q * q))
    qs = q.copy()
    b = np.empty(dmax)
    new = np.empty(dmax)
    tmp = np.empty(dmax)
    matvec(indptr, indices, data, r, q, u)
    res = natural_map_wide(law, sep, off, mr, fam, row_lo, nc, r, u, qnorm)
    if law == 1:
        shift_wide(sep, off, mr, fam, nc, q, u, qs)
    sweeps = 0
    while res > tol and sweeps < max_sweeps:
        for i in range(nc):
            s = off[i]
            d = off[i + 1] - s
            A = blocks[boff[i] : boff[i + 1]].reshape((d, d))
            for a in range(d):
                row = s + a
                acc = qs[row]
                for k in range(indptr[row], indptr[row + 1]):
                    acc += data[k] * r[indices[k]]
                for c in range(d):
                    acc -= A[a, c] * r[s + c]
                b[a] = acc
                new[a] = r[row]
            ccp_local(sep, mr, fam, s, d, A, b[:d], new[:d])
            if omega != 1.0:
                for a in range(d):
                    tmp[a] = r[s + a] + omega * (new[a] - r[s + a])
                project(sep, mr, fam, s, d, tmp, 0, new, 0)
            for a in range(d):
                r[s + a] = new[a]
        _sweep_bound_rows(indptr, indices, data, q, row_lo, m, sdiag, omega, r)
        sweeps += 1
        matvec(indptr, indices, data, r, q, u)
        res = natural_map_wide(law, sep, off, mr, fam, row_lo, nc, r, u, qnorm)
        if not math.isfinite(res):
            break
        if law == 1:
            for i in range(n):
                us[i] = u[i] + (qs[i] - q[i])
            inner = natural_map_wide(0, sep, off, mr, fam, row_lo, nc, r, us, qnorm)
            if inner <= max(0.1 * res, 0.5 * tol):
                shift_wide(sep, off, mr, fam, nc, q, u, qs)
    return sweeps, res


@njit(cache=True)
def wide_measures(
    sep: int, off: IVec, mr: Vec, fam: IVec, nc: int, r: Vec, u: Vec
) -> tuple[float, float]:
    """Signorini ``max |min(r_n, u_n)|`` (with ``max(-r_n, -u_n, 0)``) and the distance of
    the impulses outside their cones, ``max ||r - P_K(r)||``, over the contacts."""
    p = np.empty(6)
    sig = 0.0
    out = 0.0
    for i in range(nc):
        s = off[i]
        d = off[i + 1] - s
        if p.shape[0] < d:
            p = np.empty(d)
        rn, un = r[s], u[s]
        sig = max(sig, abs(min(rn, un)), max(max(-rn, -un), 0.0))
        project(sep, mr, fam, s, d, r, s, p, 0)
        acc = 0.0
        for a in range(d):
            acc += (r[s + a] - p[a]) ** 2
        out = max(out, math.sqrt(acc))
    return sig, out
