"""Cone algebra of the interior point: Nesterov--Todd scaling, Jordan products, steps.

Blocks are given by a pointer array ``bptr`` over a stacked vector: a block of
size 1 is a half-line, a longer block a Lorentz cone ``{x_0 >= ||x_1||}``.  These
kernels are the per-block operations of Mehrotra's predictor-corrector in
:mod:`solvers.backends.fc_ipm` (as in Vandenberghe's CVXOPT ``coneqp``): the NT
scaling point and its application (:func:`nt_scaling`, :func:`scale`,
:func:`scale_inv`, :func:`apply_theta`), the Jordan product and division
(:func:`jordan`, :func:`jordan_div`), the longest step inside the cones
(:func:`max_step`), margins and pushes into the interior, and the scalar products
that avoid BLAS (:func:`dot`, :func:`gap_after`: its thread start-up costs
milliseconds per call on a loaded machine).
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured on its own: included in :mod:`solvers.backends.fc_ipm`'s, which
#: was measured with these kernels in that module), for the first-use message of
#: :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]


@njit(cache=True)
def nt_scaling(bptr: IVec, s: Vec, z: Vec, wbar: Vec, eta: Vec, lam: Vec, theta: Vec) -> None:
    """Nesterov--Todd scaling of every block at ``(s, z)``.

    Linear rows: ``W = sqrt(s/z)``, ``λ = sqrt(s z)``, ``Θ = z/s`` (``wbar``
    unused).  Lorentz blocks: ``W = η W̄`` with ``W̄ = 2 w̄ w̄' - J`` squared,
    ``W̄ = [[w0, w1'], [w1, I + w1 w1'/(1 + w0)]]``, ``w̄ = (s̄ + J z̄)/(2γ)``,
    ``η = (det s / det z)^{1/4}``; ``λ = W z``; ``Θ = W^{-2} = (2 Jw̄ (Jw̄)' - J)/η²``
    stored row-major (9 numbers per block, at ``9 b``).
    """
    nb = bptr.shape[0] - 1
    for b in range(nb):
        i = bptr[b]
        if bptr[b + 1] - i == 1:
            eta[b] = math.sqrt(s[i] / z[i])
            lam[i] = math.sqrt(s[i] * z[i])
            theta[9 * b] = z[i] / s[i]
            continue
        ds = s[i] * s[i] - s[i + 1] * s[i + 1] - s[i + 2] * s[i + 2]
        dz = z[i] * z[i] - z[i + 1] * z[i + 1] - z[i + 2] * z[i + 2]
        ds = max(ds, 1e-300)
        dz = max(dz, 1e-300)
        rs = math.sqrt(ds)
        rz = math.sqrt(dz)
        sb0, sb1, sb2 = s[i] / rs, s[i + 1] / rs, s[i + 2] / rs
        zb0, zb1, zb2 = z[i] / rz, z[i + 1] / rz, z[i + 2] / rz
        g = math.sqrt(max(0.5 * (1.0 + sb0 * zb0 + sb1 * zb1 + sb2 * zb2), 1e-300))
        w0 = (sb0 + zb0) / (2.0 * g)
        w1 = (sb1 - zb1) / (2.0 * g)
        w2 = (sb2 - zb2) / (2.0 * g)
        e = math.sqrt(math.sqrt(ds / dz))
        eta[b] = e
        wbar[i], wbar[i + 1], wbar[i + 2] = w0, w1, w2
        # λ = η W̄ z
        wz = w1 * z[i + 1] + w2 * z[i + 2]
        lam[i] = e * (w0 * z[i] + wz)
        f = z[i] + wz / (1.0 + w0)
        lam[i + 1] = e * (z[i + 1] + f * w1)
        lam[i + 2] = e * (z[i + 2] + f * w2)
        jw0, jw1, jw2 = w0, -w1, -w2
        inv = 1.0 / (e * e)
        jw = (jw0, jw1, jw2)
        for a in range(3):
            for c in range(3):
                val = 2.0 * jw[a] * jw[c]
                if a == c:
                    val -= 1.0 if a == 0 else -1.0
                theta[9 * b + 3 * a + c] = val * inv


@njit(cache=True)
def _scale_blocks(bptr: IVec, wbar: Vec, eta: Vec, x: Vec, out: Vec, inverse: bool) -> None:
    """``out = W x`` per block, or ``W^{-1} x`` when ``inverse``: ``W̄^{-1} = J W̄ J`` is
    ``W̄`` with the vector part of ``w̄`` negated, and ``eta`` divides instead of
    multiplying."""
    nb = bptr.shape[0] - 1
    sign = -1.0 if inverse else 1.0
    for b in range(nb):
        i = bptr[b]
        if bptr[b + 1] - i == 1:
            out[i] = x[i] / eta[b] if inverse else x[i] * eta[b]
            continue
        w0, w1, w2 = wbar[i], sign * wbar[i + 1], sign * wbar[i + 2]
        wx = w1 * x[i + 1] + w2 * x[i + 2]
        f = x[i] + wx / (1.0 + w0)
        y0 = w0 * x[i] + wx
        y1 = x[i + 1] + f * w1
        y2 = x[i + 2] + f * w2
        if inverse:
            out[i], out[i + 1], out[i + 2] = y0 / eta[b], y1 / eta[b], y2 / eta[b]
        else:
            out[i], out[i + 1], out[i + 2] = y0 * eta[b], y1 * eta[b], y2 * eta[b]


@njit(cache=True)
def scale_inv(bptr: IVec, wbar: Vec, eta: Vec, x: Vec, out: Vec) -> None:
    """``out = W^{-1} x`` per block (``W̄^{-1} = J W̄ J``)."""
    _scale_blocks(bptr, wbar, eta, x, out, True)


@njit(cache=True)
def scale(bptr: IVec, wbar: Vec, eta: Vec, x: Vec, out: Vec) -> None:
    """``out = W x`` per block."""
    _scale_blocks(bptr, wbar, eta, x, out, False)


@njit(cache=True)
def jordan(bptr: IVec, x: Vec, y: Vec, out: Vec) -> None:
    """``out = x ∘ y`` (Jordan product: ``(x'y, x0 y1 + y0 x1)``; plain product on lines)."""
    nb = bptr.shape[0] - 1
    for b in range(nb):
        i = bptr[b]
        if bptr[b + 1] - i == 1:
            out[i] = x[i] * y[i]
            continue
        out[i] = x[i] * y[i] + x[i + 1] * y[i + 1] + x[i + 2] * y[i + 2]
        out[i + 1] = x[i] * y[i + 1] + y[i] * x[i + 1]
        out[i + 2] = x[i] * y[i + 2] + y[i] * x[i + 2]


@njit(cache=True)
def jordan_div(bptr: IVec, lam: Vec, x: Vec, out: Vec) -> None:
    """``out`` with ``lam ∘ out = x``."""
    nb = bptr.shape[0] - 1
    for b in range(nb):
        i = bptr[b]
        if bptr[b + 1] - i == 1:
            out[i] = x[i] / lam[i]
            continue
        l0, l1, l2 = lam[i], lam[i + 1], lam[i + 2]
        det = l0 * l0 - l1 * l1 - l2 * l2
        t0 = (l0 * x[i] - l1 * x[i + 1] - l2 * x[i + 2]) / det
        out[i] = t0
        out[i + 1] = (x[i + 1] - t0 * l1) / l0
        out[i + 2] = (x[i + 2] - t0 * l2) / l0


@njit(cache=True)
def max_step(bptr: IVec, x: Vec, d: Vec) -> float:
    """Largest ``α`` with ``x + α d`` in the cones (``x`` interior); ``inf`` if unbounded.

    A Lorentz block needs ``(x_0 + α d_0)² ≥ ||x_1 + α d_1||²`` (the roots of that
    quadratic) and ``x_0 + α d_0 ≥ 0``: the quadratic alone also admits the negative
    cone, and a path through the apex (``x_1 = d_1 = 0``, ``d_0 < 0``) has a double root
    that rounding can turn into a negative discriminant, so the half-space bounds it.
    """
    best = np.inf
    nb = bptr.shape[0] - 1
    for b in range(nb):
        i = bptr[b]
        if d[i] < 0.0:
            best = min(best, -x[i] / d[i])
        if bptr[b + 1] - i == 1:
            continue
        a = d[i] * d[i] - d[i + 1] * d[i + 1] - d[i + 2] * d[i + 2]
        bb = x[i] * d[i] - x[i + 1] * d[i + 1] - x[i + 2] * d[i + 2]
        c = x[i] * x[i] - x[i + 1] * x[i + 1] - x[i + 2] * x[i + 2]
        if c <= 0.0:
            return 0.0
        disc = bb * bb - a * c
        if abs(a) <= 1e-300:
            if bb < 0.0:
                best = min(best, -c / (2.0 * bb))
            continue
        if disc < 0.0:
            continue
        sq = math.sqrt(disc)
        qq = -(bb + sq) if bb >= 0.0 else -(bb - sq)
        r1 = qq / a
        r2 = c / qq if qq != 0.0 else np.inf
        for r in (r1, r2):
            if r > 0.0:
                best = min(best, r)
    return best


@njit(cache=True)
def apply_theta(bptr: IVec, theta: Vec, x: Vec, out: Vec) -> None:
    """``out = Θ x``."""
    nb = bptr.shape[0] - 1
    for b in range(nb):
        i = bptr[b]
        if bptr[b + 1] - i == 1:
            out[i] = theta[9 * b] * x[i]
            continue
        for a in range(3):
            out[i + a] = (
                theta[9 * b + 3 * a] * x[i]
                + theta[9 * b + 3 * a + 1] * x[i + 1]
                + theta[9 * b + 3 * a + 2] * x[i + 2]
            )


@njit(cache=True)
def cone_margin(bptr: IVec, x: Vec) -> float:
    """Smallest ``x_0 - ||x_1||`` (Lorentz) or ``x`` (line) over the blocks."""
    best = np.inf
    for b in range(bptr.shape[0] - 1):
        i = bptr[b]
        if bptr[b + 1] - i == 1:
            best = min(best, x[i])
        else:
            best = min(best, x[i] - math.sqrt(x[i + 1] * x[i + 1] + x[i + 2] * x[i + 2]))
    return best


@njit(cache=True)
def add_identity(bptr: IVec, x: Vec, t: float) -> None:
    """``x += t e`` (``e = (1, 0, 0)`` per Lorentz block, ``1`` per line)."""
    for b in range(bptr.shape[0] - 1):
        x[bptr[b]] += t


@njit(cache=True)
def push_interior(bptr: IVec, x: Vec, t: float) -> None:
    """Per block ``x += (max(0, -margin) + t) e``: every block ``t`` inside its cone."""
    for b in range(bptr.shape[0] - 1):
        i = bptr[b]
        if bptr[b + 1] - i == 1:
            x[i] += max(0.0, -x[i]) + t
        else:
            norm = math.sqrt(x[i + 1] * x[i + 1] + x[i + 2] * x[i + 2])
            x[i] += max(0.0, norm - x[i]) + t


@njit(cache=True)
def recentre(bptr: IVec, s: Vec, z: Vec, mu: float, wdiag: float) -> None:
    """An iterate that rounding left on a cone's boundary pushed back inside: ``s`` and
    ``z`` by the square root of the mean gap per block ``mu``, split by the mean diagonal
    ``wdiag`` of ``W`` (``s`` about ``W z``), with :func:`push_interior`."""
    t = math.sqrt(max(mu, 1e-300))
    push_interior(bptr, s, t * math.sqrt(max(wdiag, 1e-300)))
    push_interior(bptr, z, t / math.sqrt(max(wdiag, 1e-300)))


@njit(cache=True)
def dot(x: Vec, y: Vec) -> float:
    """``x' y`` (compiled: no BLAS thread start-up on a busy machine)."""
    acc = 0.0
    for i in range(x.shape[0]):
        acc += x[i] * y[i]
    return acc


@njit(cache=True)
def abs_max(x: Vec) -> float:
    """``max |x|`` (0 for an empty ``x``)."""
    acc = 0.0
    for i in range(x.shape[0]):
        a = abs(x[i])
        if a > acc or a != a:  # a NaN stays (as numpy's max)
            acc = a
    return acc


@njit(cache=True)
def gap_after(s: Vec, ds: Vec, z: Vec, dz: Vec, alpha: float) -> float:
    """``(s + alpha ds)' (z + alpha dz)``."""
    acc = 0.0
    for i in range(s.shape[0]):
        acc += (s[i] + alpha * ds[i]) * (z[i] + alpha * dz[i])
    return acc
