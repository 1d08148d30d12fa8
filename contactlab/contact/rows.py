"""Contact constraint rows in maximal coordinates (seed 000 §1.11).

A contact at world point ``x`` with unit normal ``n`` (from body B toward
body A, see :mod:`contactlab.collision.contacts`) constrains the relative
velocity of the two material points that coincide at ``x``.  The world
velocity of body ``i``'s material point with local coordinates
``x_i = R_i^T (x - p_i)`` is ``R_i Gamma(x_i) phi_i`` (seed 000, eq. 1.75), so

.. math::

    n^T v_{rel} = n^T R_a \\Gamma(x_a) \\phi_a - n^T R_b \\Gamma(x_b) \\phi_b
    \\ge c \\qquad \\text{(eq. 1.77-1.78)}

Since ``Gamma(x) = [[x]^T, I]``, the 1x6 block of body ``i`` for a world
direction ``d`` is ``[x_i x m, m]`` with ``m = R_i^T d`` (``d^T R [x]^T =
(x x R^T d)^T``).  The same blocks with the two tangent directions give the
friction rows ``T``.  Columns are 6 per body, twists angular first in body
coordinates; the world (``-1``) has no columns.

Right-hand side (gap-aware, with penetration feedback)
------------------------------------------------------
For a contact at signed distance ``d``:

* ``d > 0`` (inside the margin, not touching): ``c = -d / h``; the surfaces
  may approach by at most the gap in one step, so a falling body lands
  exactly on the surface instead of stopping short at the margin.
* ``d <= 0`` (touching or penetrating): ``c = min(beta (-d), max_correction)``,
  Baumgarte feedback (seed 000, eq. 1.82, velocity-level form with
  ``gamma = beta``) that removes a fraction ``beta h`` of the penetration per
  step, capped at ``max_correction`` [m/s] so deep overlaps are not resolved
  explosively.

``beta = params.stabilization`` [1/s] when set, else ``0.2 / h``: 20 % of
the penetration per step is fast enough that resting bodies do not sink
(the depth decays geometrically, by 0.8 per step) and slow enough that the
correction velocity ``0.2 d / h`` stays small, so they do not jitter.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.collision.contacts import ContactSet
from contactlab.errors import ConfigurationError, StateError
from contactlab.scene import ContactParams

Array = NDArray[np.float64]

#: Fraction of the penetration removed per step when ``stabilization`` is None.
DEFAULT_FEEDBACK_FRACTION = 0.2


def tangent_basis(normal: Array) -> tuple[Array, Array]:
    """Orthonormal tangents ``(t1, t2)`` with ``t1 x t2 = n`` for unit normals (m, 3).

    The branch-free construction of Duff et al. (2017, "Building an
    orthonormal basis, revisited") is smooth in ``n`` except at
    ``n = (0, 0, -1)`` and gives ``t1 = e_x, t2 = e_y`` for ``n = e_z``, so on
    level ground the friction pyramid's directions are the world x and y axes
    (and on a plane tilted about y, ``t1`` points along the slope).
    """
    n = np.asarray(normal, dtype=float)
    nx, ny, nz = n[:, 0], n[:, 1], n[:, 2]
    s = np.where(nz >= 0.0, 1.0, -1.0)
    a = -1.0 / (s + nz)
    b = nx * ny * a
    t1 = np.stack([1.0 + s * nx * nx * a, s * b, -s * nx], axis=1)
    t2 = np.stack([b, s + ny * ny * a, -ny], axis=1)
    return t1, t2


def contact_rhs(distance: Array, h: float, params: ContactParams) -> Array:
    """Right-hand side ``c`` of ``N v >= c`` (see the module docstring) [m/s]."""
    d = np.asarray(distance, dtype=float)
    beta = (
        params.stabilization
        if params.stabilization is not None
        else (DEFAULT_FEEDBACK_FRACTION / h)
    )
    if not (np.isfinite(beta) and beta >= 0.0):
        raise ConfigurationError(
            f"contact stabilization must be a finite rate >= 0 [1/s], got {beta}"
        )
    if not (params.max_correction >= 0.0):
        raise ConfigurationError(
            f"contact max_correction must be >= 0 [m/s], got {params.max_correction}"
        )
    return np.where(d > 0.0, -d / h, np.minimum(beta * (-d), params.max_correction))


def _blocks(body: NDArray[np.int64], E: Array, point: Array, dirs: Array) -> Array:
    """(nc, 3, 6) blocks ``[x x m, m]`` of the directions ``dirs`` (nc, 3, 3) on ``body``.

    Rows of the world (``body = -1``) are computed with body 0 and masked by the caller.
    """
    Eb = E[np.maximum(body, 0)]
    R, p = Eb[:, :3, :3], Eb[:, :3, 3]
    x = (np.swapaxes(R, 1, 2) @ (point - p)[:, :, None])[:, None, :, 0]  # body coordinates
    m = dirs @ R  # m[n, d] = R_n^T dirs[n, d]
    out = np.empty(dirs.shape[:2] + (6,))
    out[..., 0] = x[..., 1] * m[..., 2] - x[..., 2] * m[..., 1]
    out[..., 1] = x[..., 2] * m[..., 0] - x[..., 0] * m[..., 2]
    out[..., 2] = x[..., 0] * m[..., 1] - x[..., 1] * m[..., 0]
    out[..., 3:] = m
    return out


def _csr(
    values: Array, cols: NDArray[np.int64], keep: NDArray[np.bool_], n_cols: int
) -> sp.csr_matrix:
    """CSR matrix whose row ``r`` holds ``values[r, keep[r]]`` at columns ``cols[r, keep[r]]``."""
    indptr = np.zeros(values.shape[0] + 1, dtype=np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    return sp.csr_matrix((values[keep], cols[keep], indptr), shape=(values.shape[0], n_cols))


def contact_rows(
    contacts: ContactSet, E: Array, nb: int, h: float, params: ContactParams
) -> tuple[sp.csr_matrix, Array, sp.csr_matrix, Array]:
    """Normal rows, right-hand side, tangent rows and friction coefficients.

    Parameters
    ----------
    contacts : the contact set (normals from B toward A).
    E : (nb, 4, 4) body transforms.
    nb : number of bodies (6 columns each).
    h : step size [s].
    params : the scene's contact parameters (stabilization, max_correction).

    Returns
    -------
    N : (nc, 6 nb) normal rows, seed 000 eq. 1.78.
    c : (nc,) right-hand side of ``N Phi >= c`` [m/s].
    T : (2 nc, 6 nb) tangent rows; rows ``2i, 2i+1`` are contact ``i``'s
        ``t1, t2`` from :func:`tangent_basis`.
    mu : (nc,) friction coefficients.
    """
    if not (np.isfinite(h) and h > 0):
        raise ConfigurationError(f"contact_rows: step size h must be positive [s], got {h}")
    E = np.asarray(E, dtype=float)
    if E.shape != (nb, 4, 4):
        raise StateError(f"contact_rows: E must have shape ({nb}, 4, 4), got {E.shape}")
    nc = len(contacts)
    n_cols = 6 * nb
    if nc == 0:
        empty = sp.csr_matrix((0, n_cols))
        return empty, np.zeros(0), sp.csr_matrix((0, n_cols)), np.zeros(0)
    for name, body in (("body_a", contacts.body_a), ("body_b", contacts.body_b)):
        if body.max(initial=-1) >= nb or body.min(initial=0) < -1:
            raise ConfigurationError(
                f"contact_rows: contacts.{name} holds indices outside [-1, {nb - 1}]"
            )
    n = contacts.normal
    t1, t2 = tangent_basis(n)
    dirs = np.stack([n, t1, t2], axis=1)  # (nc, 3, 3)
    a, b = contacts.body_a, contacts.body_b
    # 12 slots per row: body a's 6 columns then body b's, lower body index first
    # so that column indices are sorted within each row.
    values = np.concatenate(
        [_blocks(a, E, contacts.point, dirs), -_blocks(b, E, contacts.point, dirs)], axis=2
    )
    six = np.arange(6)
    cols = np.concatenate([6 * a[:, None] + six, 6 * b[:, None] + six], axis=1)
    keep = np.concatenate(
        [np.ones((nc, 6), dtype=bool), np.broadcast_to((b >= 0)[:, None], (nc, 6))], axis=1
    )
    swap = (b >= 0) & (b < a)
    if np.any(swap):
        order = np.r_[6:12, 0:6]
        values[swap] = values[swap][:, :, order]
        cols[swap] = cols[swap][:, order]
        keep[swap] = keep[swap][:, order]
    N = _csr(values[:, 0], cols, keep, n_cols)
    T = _csr(
        values[:, 1:].reshape(2 * nc, 12),
        np.repeat(cols, 2, axis=0),
        np.repeat(keep, 2, axis=0),
        n_cols,
    )
    c = contact_rhs(contacts.distance, h, params)
    return N, c, T, np.asarray(contacts.mu, dtype=float).copy()
