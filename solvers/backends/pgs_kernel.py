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
    step: Vec,
    z: Vec,
    omega: float,
    sweeps: int,
) -> float:
    """Run ``sweeps`` projected Gauss--Seidel sweeps in place on ``z``.

    ``step[u]`` is the step length of a disc pair ``u``: ``1 / lambda_max`` of its
    2x2 diagonal block (bounded by Gershgorin), so the block step is a descent step.
    Returns the largest pre-update natural-map residual of a unit in the last sweep.
    """
    worst = 0.0
    for _ in range(sweeps):
        worst = 0.0
        for u in range(unit_a.shape[0]):
            a = unit_a[u]
            b = unit_b[u]
            if b < 0:
                if owner[a] >= 0 and mu_row[a] * z[owner[a]] <= 0.0:
                    worst = max(worst, abs(z[a]))
                    z[a] = 0.0
                    continue
                wa = _row_w(indptr, indices, data, q, z, a)
                lo_a, hi_a = _bounds(a, lo, hi, owner, mu_row, z)
                worst = max(worst, abs(z[a] - min(max(z[a] - wa, lo_a), hi_a)))
                za = z[a] - omega * wa / diag[a]
                z[a] = min(max(za, lo_a), hi_a)
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
                va = z[a] - wa
                vb = z[b] - wb
                norm = np.sqrt(va * va + vb * vb)
                if norm > radius:
                    va *= radius / norm
                    vb *= radius / norm
                worst = max(worst, np.sqrt((z[a] - va) ** 2 + (z[b] - vb) ** 2))
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
    worst = 0.0
    for u in range(unit_a.shape[0]):
        a = unit_a[u]
        b = unit_b[u]
        if b < 0:
            w = _row_w(indptr, indices, data, q, z, a)
            lo_a, hi_a = _bounds(a, lo, hi, owner, mu_row, z)
            worst = max(worst, abs(z[a] - min(max(z[a] - w, lo_a), hi_a)))
        else:
            va = z[a] - _row_w(indptr, indices, data, q, z, a)
            vb = z[b] - _row_w(indptr, indices, data, q, z, b)
            radius = mu_row[a] * max(z[owner[a]], 0.0)
            norm = np.sqrt(va * va + vb * vb)
            if norm > radius:
                va *= radius / norm
                vb *= radius / norm
            worst = max(worst, np.sqrt((z[a] - va) ** 2 + (z[b] - vb) ** 2))
    return worst
