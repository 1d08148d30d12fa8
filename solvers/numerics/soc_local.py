"""Newton's method for the one-contact cone problem on the exact (disc) friction cone.

The problem of :func:`solvers.numerics.fc_local.ccp_local` with ``kind = 0``: the
minimiser of ``1/2 r'A r + b'r`` over ``K = {||r_t|| <= mu r_n}`` (``A`` a contact's 3x3
SPD block of the Delassus matrix), the projection onto ``K`` in ``A``'s metric.  The apex
and the interior are tested first, as there; a solution on the cone's boundary is a
Karush--Kuhn--Tucker point

    ``A r + b = u``,  ``r = t (1, mu e)``,  ``u = s (mu, -e)``,  ``t > 0``, ``s >= 0``,

``e = (cos θ, sin θ)``: ``r`` on the boundary ray of angle ``θ``, ``u`` on the dual cone's
boundary ray orthogonal to it.  Three equations in ``(t, θ, s)``, solved by Newton's method
(a 3x3 system per iteration) from an angle given by the caller (the contact's previous
impulse), else the unconstrained minimiser's, ``-b_t``'s or one of 8 evenly spaced
angles, until one start ends at such a point.  The problem is strictly convex, so a point
meeting these conditions with ``t > 0`` and ``s >= 0`` is its unique solution; when
no start reaches one (in a few iterations, or at the wrong sign), the scan and bisection
of :func:`ccp_local` give the answer.  Same solution as ``ccp_local`` to
rounding, in a handful of 3x3 solves instead of some 130 angle evaluations.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.fc_local import ccp_local, solve3

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 3.0

Vec = NDArray[np.float64]

#: Newton iterations before the scan takes over
_NEWTON = 30
#: evenly spaced starting angles tried after the first ones
_RING = 8

__all__ = ["soc_ccp_local"]


@njit(cache=True)
def _boundary_newton(mu: float, A: Vec, b: Vec, th: float, r: Vec) -> bool:  # noqa: PLR0915
    """Newton's method on the boundary conditions from the angle ``th``; ``True`` and the
    solution in ``r`` if it converged to a point with ``t > 0`` and ``s >= 0``."""
    jac = np.empty((3, 3))
    f = np.empty(3)
    dx = np.empty(3)
    c, sn = math.cos(th), math.sin(th)
    # t: the minimiser along the ray, s: the velocity's component against e there
    d0, d1, d2 = 1.0, mu * c, mu * sn
    ad0 = A[0, 0] * d0 + A[0, 1] * d1 + A[0, 2] * d2
    ad1 = A[1, 0] * d0 + A[1, 1] * d1 + A[1, 2] * d2
    ad2 = A[2, 0] * d0 + A[2, 1] * d1 + A[2, 2] * d2
    dad = d0 * ad0 + d1 * ad1 + d2 * ad2
    bd = b[0] * d0 + b[1] * d1 + b[2] * d2
    t = -bd / dad if dad > 0.0 else 0.0
    t = max(t, 0.0)
    s = -(c * (t * ad1 + b[1]) + sn * (t * ad2 + b[2]))
    s = max(s, 0.0)
    scale = abs(b[0]) + abs(b[1]) + abs(b[2])
    done = False
    for _ in range(_NEWTON):
        c, sn = math.cos(th), math.sin(th)
        d0, d1, d2 = 1.0, mu * c, mu * sn
        # F = t A d + b - s w,  w = (mu, -c, -sn)
        for k in range(3):
            adk = A[k, 0] * d0 + A[k, 1] * d1 + A[k, 2] * d2
            # d'(θ) = (0, -mu sn, mu c), w'(θ) = (0, sn, -c)
            add = mu * (-A[k, 1] * sn + A[k, 2] * c)
            jac[k, 0] = adk
            jac[k, 1] = t * add
            jac[k, 2] = 0.0
            f[k] = t * adk + b[k]
        f[0] -= s * mu
        f[1] += s * c
        f[2] += s * sn
        jac[0, 2] = -mu
        jac[1, 2] = c
        jac[2, 2] = sn
        jac[1, 1] -= s * sn
        jac[2, 1] += s * c
        if done:
            break
        if not solve3(jac, f, dx):
            return False
        dth = -dx[1]
        if dth > 0.5:
            dth = 0.5
        elif dth < -0.5:
            dth = -0.5
        t -= dx[0]
        th += dth
        s -= dx[2]
        if abs(dth) <= 1e-15 and abs(dx[0]) <= 1e-15 * abs(t) and abs(dx[2]) <= 1e-15 * abs(s):
            done = True
        elif abs(dth) <= 1e-12 and abs(dx[0]) <= 1e-12 * abs(t) + 1e-300:
            # one more step at full precision, then stop
            done = True
    if not done:
        return False
    fn = abs(f[0]) + abs(f[1]) + abs(f[2])
    if not (t > 0.0 and s >= -1e-12 * scale and fn <= 1e-10 * scale):
        return False
    r[0], r[1], r[2] = t, t * mu * math.cos(th), t * mu * math.sin(th)
    return True


@njit(cache=True)
def soc_ccp_local(mu: float, A: Vec, b: Vec, r: Vec, guess: Vec) -> None:
    """Exact minimiser of ``1/2 r'A r + b'r`` over ``{||r_t|| <= mu r_n}``, into ``r``.

    ``guess``: an impulse whose tangential direction starts Newton's method (ignored when
    its tangential part is zero); ``r`` and ``guess`` may be the same array.
    """
    g1, g2 = guess[1], guess[2]
    if mu == 0.0:
        r[0] = max(-b[0] / A[0, 0], 0.0) if A[0, 0] > 0.0 else 0.0
        r[1] = r[2] = 0.0
        return
    if b[0] >= mu * math.sqrt(b[1] * b[1] + b[2] * b[2]):  # apex: b in K*
        r[0] = r[1] = r[2] = 0.0
        return
    tmp = np.empty(3)
    neg = np.empty(3)
    neg[0], neg[1], neg[2] = -b[0], -b[1], -b[2]
    solved = solve3(A, neg, tmp)
    if solved and tmp[0] >= 0.0 and math.sqrt(tmp[1] * tmp[1] + tmp[2] * tmp[2]) <= mu * tmp[0]:
        r[0], r[1], r[2] = tmp[0], tmp[1], tmp[2]
        return
    # starting angles: the guess's, the unconstrained minimiser's, against b_t, then a ring
    starts = np.empty(3 + _RING)
    ns = 0
    if g1 != 0.0 or g2 != 0.0:
        starts[ns] = math.atan2(g2, g1)
        ns += 1
    if solved and (tmp[1] != 0.0 or tmp[2] != 0.0):
        starts[ns] = math.atan2(tmp[2], tmp[1])
        ns += 1
    if b[1] != 0.0 or b[2] != 0.0:
        starts[ns] = math.atan2(-b[2], -b[1])
        ns += 1
    for k in range(_RING):
        starts[ns] = 2.0 * math.pi * k / _RING
        ns += 1
    for k in range(ns):
        if _boundary_newton(mu, A, b, starts[k], r):
            return
    dirs = np.zeros((0, 2))
    ccp_local(0, mu, dirs, A, b, r)
