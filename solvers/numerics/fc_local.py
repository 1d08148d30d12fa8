"""Compiled per-contact pieces of the frictional-contact solvers (numba).

One contact has the impulse ``r = (r_n, r_t1, r_t2)`` and the relative
velocity ``u = A r + b`` (``A`` the contact's 3x3 Delassus block, ``b`` the
velocity the other impulses leave).  A *cone* is ``kind = 0`` for the exact
Coulomb cone ``K = {||r_t|| <= mu r_n}`` or ``kind = 1`` for a polyhedral cone
spanned by the generators ``g_j = (1, mu d_j)`` with ``d_j`` the rows of
``dirs`` (``k`` vertices of a convex polygon in angular order: the
``k``-direction pyramid or the box ``(±1, ±1)``).  Its dual cone is
``K* = {u_n >= h(u_t)}`` with the support function ``h(u_t) = mu ||u_t||``
(exact cone) or ``max_j (-mu d_j . u_t)`` (polyhedral).

Two laws:

- ``law = 0``, the cone complementarity problem (CCP, Anitescu--Hart's
  relaxation): ``K ∋ r ⟂ u ∈ K*``, the optimality condition of
  ``min 1/2 r'A r + b'r`` over ``K``;
- ``law = 1``, the Coulomb law in De Saxcé's form: ``K ∋ r ⟂ û ∈ K*`` with the
  modified velocity ``û = (u_n + h(u_t), u_t)``: ``u_n >= 0`` complementary to
  ``r_n`` (no separation while sliding) and ``r_t`` maximally dissipative.

Exact local solvers (no inner iteration with a tolerance):

- CCP, polyhedral: the minimiser of a convex QP over a polyhedral cone lies in
  the relative interior of one face (apex, a ray, a facet, the interior), where
  it is the unconstrained minimiser on the face's span; every feasible face
  candidate is admissible, so the lowest objective among them is the optimum.
- CCP, exact cone: apex, interior, else the boundary ray ``t (1, mu e(θ))``
  minimising ``-(b.d)^2 / (2 d'A d)`` over ``θ``: a scan of 64 angles, then
  bisection on the sign of the derivative ``t mu (e x u_t)`` next to the best
  one (to rounding).
- Coulomb: take-off (``r = 0``), sticking (``u = 0``), and sliding on the
  cone's boundary with ``u_n = 0`` and ``u_t`` opposite the friction: for the
  exact cone a root in ``θ`` of ``e(θ) x u_t(θ)`` (scan and bisection), for a
  polyhedral cone one 2x2 linear system per facet and one division per ray.
  Among the candidates the one with the smallest local natural-map residual
  is returned (the admissible one has residual zero).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 4.0

Vec = NDArray[np.float64]

_SCAN = 64


@njit(cache=True)
def solve3(A: Vec, b: Vec, out: Vec) -> bool:
    """``out = A^{-1} b`` for a 3x3 ``A`` by cofactors; ``False`` if ``A`` is singular."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    scale = abs(A[0, 0]) + abs(A[1, 1]) + abs(A[2, 2])
    if abs(det) <= 1e-14 * scale * scale * scale or scale == 0.0:
        return False
    c10 = A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]
    c11 = A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]
    c12 = A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]
    c20 = A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]
    c21 = A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]
    c22 = A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
    out[0] = (c00 * b[0] + c10 * b[1] + c20 * b[2]) / det
    out[1] = (c01 * b[0] + c11 * b[1] + c21 * b[2]) / det
    out[2] = (c02 * b[0] + c12 * b[1] + c22 * b[2]) / det
    return True


@njit(cache=True)
def support(kind: int, mu: float, dirs: Vec, ut1: float, ut2: float) -> float:
    """``h(u_t)``: the largest ``-r_t . u_t`` over the cone's section at ``r_n = 1``."""
    if kind == 0:
        return mu * math.sqrt(ut1 * ut1 + ut2 * ut2)
    best = -np.inf
    for j in range(dirs.shape[0]):
        best = max(best, -mu * (dirs[j, 0] * ut1 + dirs[j, 1] * ut2))
    return best


@njit(cache=True)
def in_cone(kind: int, mu: float, dirs: Vec, r: Vec, slack: float) -> bool:
    """Whether ``r`` lies in the cone up to ``slack`` (absolute)."""
    if r[0] < -slack:
        return False
    if kind == 0:
        return math.sqrt(r[1] * r[1] + r[2] * r[2]) <= mu * r[0] + slack
    k = dirs.shape[0]
    for j in range(k):
        # outward normal of the edge d_j -> d_{j+1} (counter-clockwise polygon)
        ex = dirs[(j + 1) % k, 0] - dirs[j, 0]
        ey = dirs[(j + 1) % k, 1] - dirs[j, 1]
        nx, ny = ey, -ex
        if nx * (r[1] - mu * r[0] * dirs[j, 0]) + ny * (r[2] - mu * r[0] * dirs[j, 1]) > slack * (
            abs(nx) + abs(ny)
        ):
            return False
    return True


@njit(cache=True)
def _quad(A: Vec, b: Vec, r0: float, r1: float, r2: float) -> float:
    a0 = A[0, 0] * r0 + A[0, 1] * r1 + A[0, 2] * r2
    a1 = A[1, 0] * r0 + A[1, 1] * r1 + A[1, 2] * r2
    a2 = A[2, 0] * r0 + A[2, 1] * r1 + A[2, 2] * r2
    return 0.5 * (r0 * a0 + r1 * a1 + r2 * a2) + b[0] * r0 + b[1] * r1 + b[2] * r2


@njit(cache=True)
def _ray(A: Vec, b: Vec, d0: float, d1: float, d2: float) -> float:
    """The minimiser ``t >= 0`` of the objective along the ray ``t d``."""
    dAd = (
        d0 * (A[0, 0] * d0 + A[0, 1] * d1 + A[0, 2] * d2)
        + d1 * (A[1, 0] * d0 + A[1, 1] * d1 + A[1, 2] * d2)
        + d2 * (A[2, 0] * d0 + A[2, 1] * d1 + A[2, 2] * d2)
    )
    bd = b[0] * d0 + b[1] * d1 + b[2] * d2
    if dAd <= 0.0 or bd >= 0.0:
        return 0.0
    return -bd / dAd


@njit(cache=True)
def _soc_boundary_value(A: Vec, b: Vec, mu: float, th: float) -> float:
    d1, d2 = mu * math.cos(th), mu * math.sin(th)
    t = _ray(A, b, 1.0, d1, d2)
    return _quad(A, b, t, t * d1, t * d2)


@njit(cache=True)
def _soc_boundary_slope(A: Vec, b: Vec, mu: float, th: float) -> float:
    """Sign of the derivative of the boundary objective: ``e(θ) x u_t`` at the ray minimiser."""
    e1, e2 = math.cos(th), math.sin(th)
    t = _ray(A, b, 1.0, mu * e1, mu * e2)
    ut1 = t * (A[1, 0] + mu * (A[1, 1] * e1 + A[1, 2] * e2)) + b[1]
    ut2 = t * (A[2, 0] + mu * (A[2, 1] * e1 + A[2, 2] * e2)) + b[2]
    return e1 * ut2 - e2 * ut1


@njit(cache=True)
def ccp_local(kind: int, mu: float, dirs: Vec, A: Vec, b: Vec, r: Vec) -> None:
    """Exact minimiser of ``1/2 r'A r + b'r`` over the cone, written into ``r``."""
    tmp = np.empty(3)
    if mu == 0.0:
        t = _ray(A, b, 1.0, 0.0, 0.0)
        r[0], r[1], r[2] = t, 0.0, 0.0
        return
    # apex: b in K*
    if b[0] >= support(kind, mu, dirs, b[1], b[2]):
        r[0] = r[1] = r[2] = 0.0
        return
    neg = np.empty(3)
    neg[0], neg[1], neg[2] = -b[0], -b[1], -b[2]
    if solve3(A, neg, tmp) and in_cone(kind, mu, dirs, tmp, 0.0):
        r[0], r[1], r[2] = tmp[0], tmp[1], tmp[2]
        return
    best = 0.0
    r[0] = r[1] = r[2] = 0.0
    if kind == 0:
        step = 2.0 * math.pi / _SCAN
        th_best = 0.0
        for s in range(_SCAN):
            v = _soc_boundary_value(A, b, mu, s * step)
            if v < best:
                best, th_best = v, s * step
        if best == 0.0:
            return
        # d phi / d theta = t mu (e x u_t): bisect its sign change (- to +) next to the best angle
        lo, hi = th_best - step, th_best
        if _soc_boundary_slope(A, b, mu, th_best) < 0.0:
            lo, hi = th_best, th_best + step
        if _soc_boundary_slope(A, b, mu, lo) <= 0.0 <= _soc_boundary_slope(A, b, mu, hi):
            for _ in range(64):
                mid = 0.5 * (lo + hi)
                if _soc_boundary_slope(A, b, mu, mid) < 0.0:
                    lo = mid
                else:
                    hi = mid
            th = 0.5 * (lo + hi)
        else:
            th = th_best
        d1, d2 = mu * math.cos(th), mu * math.sin(th)
        t = _ray(A, b, 1.0, d1, d2)
        r[0], r[1], r[2] = t, t * d1, t * d2
        return
    k = dirs.shape[0]
    for j in range(k):
        g0, g1, g2 = 1.0, mu * dirs[j, 0], mu * dirs[j, 1]
        t = _ray(A, b, g0, g1, g2)
        v = _quad(A, b, t * g0, t * g1, t * g2)
        if v < best:
            best = v
            r[0], r[1], r[2] = t * g0, t * g1, t * g2
        # facet spanned by g_j and g_{j+1}: 2x2 normal equations in (a, c)
        h0, h1, h2 = 1.0, mu * dirs[(j + 1) % k, 0], mu * dirs[(j + 1) % k, 1]
        Ag0 = A[0, 0] * g0 + A[0, 1] * g1 + A[0, 2] * g2
        Ag1 = A[1, 0] * g0 + A[1, 1] * g1 + A[1, 2] * g2
        Ag2 = A[2, 0] * g0 + A[2, 1] * g1 + A[2, 2] * g2
        Ah0 = A[0, 0] * h0 + A[0, 1] * h1 + A[0, 2] * h2
        Ah1 = A[1, 0] * h0 + A[1, 1] * h1 + A[1, 2] * h2
        Ah2 = A[2, 0] * h0 + A[2, 1] * h1 + A[2, 2] * h2
        m00 = g0 * Ag0 + g1 * Ag1 + g2 * Ag2
        m01 = g0 * Ah0 + g1 * Ah1 + g2 * Ah2
        m11 = h0 * Ah0 + h1 * Ah1 + h2 * Ah2
        r0 = -(b[0] * g0 + b[1] * g1 + b[2] * g2)
        r1 = -(b[0] * h0 + b[1] * h1 + b[2] * h2)
        det = m00 * m11 - m01 * m01
        if det <= 1e-14 * (m00 * m11 + 1e-300):
            continue
        a = (m11 * r0 - m01 * r1) / det
        c = (m00 * r1 - m01 * r0) / det
        if a < 0.0 or c < 0.0:
            continue
        x0, x1, x2 = a * g0 + c * h0, a * g1 + c * h1, a * g2 + c * h2
        v = _quad(A, b, x0, x1, x2)
        if v < best:
            best = v
            r[0], r[1], r[2] = x0, x1, x2


@njit(cache=True)
def project(kind: int, mu: float, dirs: Vec, x: Vec, out: Vec) -> None:
    """Euclidean projection of ``x`` onto the cone."""
    if kind == 0:
        nt = math.sqrt(x[1] * x[1] + x[2] * x[2])
        if nt <= mu * x[0]:
            out[0], out[1], out[2] = x[0], x[1], x[2]
        elif mu * nt <= -x[0] or (mu == 0.0 and x[0] <= 0.0):
            out[0] = out[1] = out[2] = 0.0
        elif mu == 0.0:
            out[0], out[1], out[2] = x[0], 0.0, 0.0
        else:
            s = (x[0] + mu * nt) / (1.0 + mu * mu)
            out[0], out[1], out[2] = s, mu * s * x[1] / nt, mu * s * x[2] / nt
        return
    eye = np.zeros((3, 3))
    eye[0, 0] = eye[1, 1] = eye[2, 2] = 1.0
    nb = np.empty(3)
    nb[0], nb[1], nb[2] = -x[0], -x[1], -x[2]
    ccp_local(kind, mu, dirs, eye, nb, out)


@njit(cache=True)
def local_residual(law: int, kind: int, mu: float, dirs: Vec, r: Vec, u: Vec) -> float:
    """Squared norm of ``r - P_K(r - û)`` for one contact (``û = u`` for the CCP)."""
    x = np.empty(3)
    p = np.empty(3)
    shift = support(kind, mu, dirs, u[1], u[2]) if law == 1 else 0.0
    x[0] = r[0] - (u[0] + shift)
    x[1] = r[1] - u[1]
    x[2] = r[2] - u[2]
    project(kind, mu, dirs, x, p)
    return (r[0] - p[0]) ** 2 + (r[1] - p[1]) ** 2 + (r[2] - p[2]) ** 2


@njit(cache=True)
def _velocity(A: Vec, b: Vec, r: Vec, u: Vec) -> None:
    for a in range(3):
        u[a] = A[a, 0] * r[0] + A[a, 1] * r[1] + A[a, 2] * r[2] + b[a]


@njit(cache=True)
def _soc_slide(A: Vec, b: Vec, mu: float, th: float, out: Vec) -> float:
    """Sliding candidate at angle ``θ``: ``r = t (1, mu e)``, ``u_n = 0``; returns ``e x u_t``.

    ``out[0] < 0`` marks an angle with no admissible ``t > 0``.
    """
    e1, e2 = math.cos(th), math.sin(th)
    an = A[0, 0] + mu * (A[0, 1] * e1 + A[0, 2] * e2)
    if an <= 0.0:
        out[0] = -1.0
        return 0.0
    t = -b[0] / an
    if t < 0.0:
        out[0] = -1.0
        return 0.0
    out[0], out[1], out[2] = t, t * mu * e1, t * mu * e2
    ut1 = A[1, 0] * out[0] + A[1, 1] * out[1] + A[1, 2] * out[2] + b[1]
    ut2 = A[2, 0] * out[0] + A[2, 1] * out[1] + A[2, 2] * out[2] + b[2]
    if e1 * ut1 + e2 * ut2 > 0.0:
        out[0] = -1.0
        return 0.0
    return e1 * ut2 - e2 * ut1


@njit(cache=True)
def _keep_best(
    law: int, kind: int, mu: float, dirs: Vec, A: Vec, b: Vec, cand: Vec, r: Vec, best: float
) -> float:
    u = np.empty(3)
    _velocity(A, b, cand, u)
    res = local_residual(law, kind, mu, dirs, cand, u)
    if res < best:
        r[0], r[1], r[2] = cand[0], cand[1], cand[2]
        return res
    return best


@njit(cache=True)
def coulomb_local(kind: int, mu: float, dirs: Vec, A: Vec, b: Vec, r: Vec) -> None:
    """Exact solution of the one-contact Coulomb problem (De Saxcé's form), into ``r``."""
    cand = np.zeros(3)
    if mu == 0.0:
        t = _ray(A, b, 1.0, 0.0, 0.0)
        r[0], r[1], r[2] = t, 0.0, 0.0
        return
    best = np.inf
    if b[0] >= 0.0:  # take-off
        best = _keep_best(1, kind, mu, dirs, A, b, cand, r, best)
        if best <= 0.0:
            return
    neg = np.empty(3)
    neg[0], neg[1], neg[2] = -b[0], -b[1], -b[2]
    if solve3(A, neg, cand) and in_cone(kind, mu, dirs, cand, 0.0):  # sticking
        best = _keep_best(1, kind, mu, dirs, A, b, cand, r, best)
        if best <= 1e-30:
            return
    if kind == 0:
        step = 2.0 * math.pi / _SCAN
        prev = np.empty(3)
        g_prev = _soc_slide(A, b, mu, 0.0, prev)
        ok_prev = prev[0] >= 0.0
        for s in range(1, _SCAN + 1):
            g = _soc_slide(A, b, mu, s * step, cand)
            ok = cand[0] >= 0.0
            if ok and ok_prev and g_prev * g <= 0.0:
                lo, hi, glo = (s - 1) * step, s * step, g_prev
                for _ in range(60):
                    mid = 0.5 * (lo + hi)
                    gm = _soc_slide(A, b, mu, mid, cand)
                    if cand[0] < 0.0:
                        break
                    if glo * gm <= 0.0:
                        hi = mid
                    else:
                        lo, glo = mid, gm
                _soc_slide(A, b, mu, 0.5 * (lo + hi), cand)
                if cand[0] >= 0.0:
                    best = _keep_best(1, kind, mu, dirs, A, b, cand, r, best)
                _soc_slide(A, b, mu, s * step, cand)
            g_prev, ok_prev = g, ok
        if best == np.inf:
            r[0] = r[1] = r[2] = 0.0
        return
    k = dirs.shape[0]
    for j in range(k):
        # ray g_j with u_n = 0
        g0, g1, g2 = 1.0, mu * dirs[j, 0], mu * dirs[j, 1]
        an = A[0, 0] * g0 + A[0, 1] * g1 + A[0, 2] * g2
        if an > 0.0 and -b[0] / an >= 0.0:
            t = -b[0] / an
            cand[0], cand[1], cand[2] = t * g0, t * g1, t * g2
            best = _keep_best(1, kind, mu, dirs, A, b, cand, r, best)
        # facet: r = a g_j + c (g_{j+1} - g_j), u_n = 0 and u_t along the edge = 0
        e1 = mu * (dirs[(j + 1) % k, 0] - dirs[j, 0])
        e2 = mu * (dirs[(j + 1) % k, 1] - dirs[j, 1])
        # rows: u_n = (A g)_n a + (A e)_n c + b_n ; (u_t . e) = ...
        Ag = np.empty(3)
        Ae = np.empty(3)
        for a in range(3):
            Ag[a] = A[a, 0] * g0 + A[a, 1] * g1 + A[a, 2] * g2
            Ae[a] = A[a, 1] * e1 + A[a, 2] * e2
        m00, m01 = Ag[0], Ae[0]
        m10, m11 = Ag[1] * e1 + Ag[2] * e2, Ae[1] * e1 + Ae[2] * e2
        rhs0, rhs1 = -b[0], -(b[1] * e1 + b[2] * e2)
        det = m00 * m11 - m01 * m10
        if abs(det) <= 1e-14 * (abs(m00 * m11) + abs(m01 * m10) + 1e-300):
            continue
        a_ = (m11 * rhs0 - m01 * rhs1) / det
        c_ = (m00 * rhs1 - m10 * rhs0) / det
        if a_ < 0.0 or c_ < 0.0 or c_ > a_:
            continue
        cand[0], cand[1], cand[2] = a_ * g0, a_ * g1 + c_ * e1, a_ * g2 + c_ * e2
        best = _keep_best(1, kind, mu, dirs, A, b, cand, r, best)
    if best == np.inf:
        r[0] = r[1] = r[2] = 0.0
