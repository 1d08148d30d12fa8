"""Natural map of the friction of a step: is a friction impulse maximally dissipative?

For contact ``i`` with tangential velocity ``u_i = T_i v`` [m/s] (two rows, the
``T`` basis), friction impulse ``y_i`` [N s] and cone radius ``r_i = mu_i
lambda_N,i`` [N s], the principle of maximal dissipation asks that ``y_i``
minimise ``y . u_i`` over the friction set ``F(r_i)`` (the disc, the box
``|y_1|, |y_2| <= r_i`` or the ``k``-direction pyramid's polygon
``r_i conv{d_j}``).  Its fixed-point (natural-map) form, for any ``rho_i > 0``,

.. math::

    y_i = \\Pi_{F(r_i)}(y_i - \\rho_i u_i),

is the projected-gradient condition of the friction QP of Sueda's notes,
eq. (2.110) (its gradient in ``y`` is ``T v``).  With ``rho_i = 1 / w_i``,
``w_i`` the contact's tangential Delassus diagonal ``T_i M^-1 T_i^T`` [1/kg]
(one scalar per contact, so that the disc and the polygon stay round), the
residual ``e_i = w_i (y_i - Pi(y_i - u_i / w_i))`` is a velocity [m/s]: the
sliding left where the friction is inside its set, or the friction's excess
over its set times ``w_i``.  It is reported in the ``M^-1``-like norm
``sqrt(sum_i |e_i|^2 / w_i)`` [sqrt(kg) m/s], the unit of
:meth:`~contactlab.models.common.MassInverse.norm`, so that it compares with
an impulse scale.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from contactlab.contact.friction_cone import pyramid_directions
from contactlab.models.common import Array, MassInverse


def tangent_weight(T: sp.csr_matrix, minv: MassInverse) -> Array:
    """``w_i`` (nc,) [1/kg]: mean of the two diagonal entries of ``T M^-1 T^T`` per contact."""
    if T.shape[0] == 0:
        return np.zeros(0)
    MiT = minv.apply(sp.csc_matrix(T.T))
    diag = np.asarray(sp.csr_matrix(T).multiply(sp.csr_matrix(MiT).T).sum(axis=1)).ravel()
    return np.maximum(diag.reshape(-1, 2).mean(axis=1), np.finfo(float).tiny)


def project(z: Array, radius: Array, cone: str, k: int = 4) -> Array:
    """Projection of the 2-vectors ``z`` (nc, 2) onto ``F(radius)`` of ``cone`` per row."""
    r = np.maximum(radius, 0.0)[:, None]
    if cone == "box":
        return np.clip(z, -r, r)
    if cone == "soc":
        norm = np.linalg.norm(z, axis=1, keepdims=True)
        return np.where(norm > r, z * (r / np.maximum(norm, np.finfo(float).tiny)), z)
    # the polygon r conv{d_j}: inside if every edge's half-plane holds, else the nearest
    # point of the nearest edge (vectorised over contacts and edges)
    d = pyramid_directions(k)
    a = r[:, :, None] * d.T[None]  # (nc, 2, k) vertices
    b = np.roll(a, -1, axis=2)
    e = b - a
    t = np.clip(
        np.einsum("nik,nik->nk", z[:, :, None] - a, e)
        / np.maximum(np.einsum("nik,nik->nk", e, e), np.finfo(float).tiny),
        0.0,
        1.0,
    )
    p = a + t[:, None, :] * e  # (nc, 2, k) nearest points of the edges
    dist = np.linalg.norm(z[:, :, None] - p, axis=1)
    near = p[np.arange(z.shape[0]), :, np.argmin(dist, axis=1)]
    normal = np.stack([e[:, 1], -e[:, 0]], axis=1)  # outward for counter-clockwise vertices
    # a zero radius collapses the polygon to its centre (its edges have no normal)
    inside = np.all(np.einsum("nik,nik->nk", z[:, :, None] - a, normal) <= 0.0, axis=1)
    inside &= r[:, 0] > 0.0
    return np.where(inside[:, None], z, near)


def natural_map(y: Array, u: Array, radius: Array, w: Array, cone: str, k: int = 4) -> Array:
    """``e_i = w_i (y_i - Pi(y_i - u_i / w_i))`` (nc, 2) [m/s] (module docstring).

    ``y``, ``u``: (2 nc,) friction impulse [N s] and tangential velocity [m/s]
    in the ``T`` basis; ``radius`` (nc,) [N s]; ``w`` (nc,) [1/kg].
    """
    Y, U = y.reshape(-1, 2), u.reshape(-1, 2)
    return w[:, None] * (Y - project(Y - U / w[:, None], radius, cone, k))


def natural_norm(e: Array, w: Array) -> float:
    """``sqrt(sum_i |e_i|^2 / w_i)`` [sqrt(kg) m/s] of a natural map ``e`` (nc, 2)."""
    return float(np.sqrt(np.sum(np.sum(e * e, axis=1) / w)))
