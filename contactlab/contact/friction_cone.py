"""Friction-cone data built from the tangent rows: pyramid rows, the matrix E, box bounds.

The step problem carries two orthonormal tangent rows per contact
(``T``, rows ``2i`` and ``2i+1``).  The models build from them

* the ``k``-direction pyramid rows ``D`` (Sueda's notes §1.13): row ``i k + j``
  is ``d_ij = cos(a_j) t_i1 + sin(a_j) t_i2`` with ``a_j = 2 pi j / k``,
  ``k`` even and ``>= 4`` so that ``d_{i, j + k/2} = -d_ij`` (every
  direction has its opposite and friction can act both ways);
* the pyramid matrix ``E`` of eq. 1.85–1.86: ``E [alpha; beta] >= 0`` says
  ``sum_j beta_ij <= mu_i alpha_i`` for every contact, with
  ``beta_ij >= 0`` the impulse along ``d_ij``;
* the per-contact summation ``S`` (``nc k`` by ``nc``, ones in the ``k``
  rows of each contact) — Stewart's ``E`` in the Anitescu/Stewart system of
  ArtiSynth notes §0.10, where ``E_ij = 1`` for the directions of contact ``j``;
  the Sueda's notes matrix is ``[diag(mu), -S^T]``;
* box bounds (ArtiSynth notes eq. 0.5–0.6): ``|lambda_T| <= mu lambda_N`` on each
  of the two tangent rows separately, from an estimate of the normal impulse.

For ``k = 4`` the pyramid is the "diamond" ``|f_1| + |f_2| <= mu f_n``,
inscribed in the Coulomb cone and touching it along ``t1`` and ``t2`` only:
sliding along a diagonal meets only ``mu / sqrt(2)`` of friction.  Larger
``k`` approaches the cone (the inscribed polygon's inradius is
``mu cos(pi / k)``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError

Array = NDArray[np.float64]


def _check_k(k: int) -> int:
    if int(k) != k or k < 4 or k % 2:
        raise ConfigurationError(
            f"the friction pyramid needs an even number of directions >= 4, got k={k}"
        )
    return int(k)


def pyramid_directions(k: int) -> Array:
    """(k, 2) coefficients ``(cos a_j, sin a_j)`` of the directions in the ``(t1, t2)`` basis."""
    a = 2.0 * np.pi * np.arange(_check_k(k)) / k
    return np.stack([np.cos(a), np.sin(a)], axis=1)


def pyramid_rows(T: sp.spmatrix, k: int) -> sp.csr_matrix:
    """Pyramid rows ``D`` (nc k, n) from tangent rows ``T`` (2 nc, n).

    Row ``i k + j`` is ``d_ij = cos(a_j) t_i1 + sin(a_j) t_i2``.
    """
    T = sp.csr_matrix(T)
    if T.shape[0] % 2:
        raise ConfigurationError(
            f"tangent rows must come in pairs (2 per contact), got {T.shape[0]} rows"
        )
    nc = T.shape[0] // 2
    P = sp.kron(sp.identity(nc, format="csr"), sp.csr_matrix(pyramid_directions(k)))
    return sp.csr_matrix(P @ T)


def direction_sum(nc: int, k: int) -> sp.csr_matrix:
    """(nc k, nc) matrix with ones in the ``k`` rows of each contact (Stewart's E)."""
    return sp.kron(sp.identity(nc, format="csr"), np.ones((_check_k(k), 1)), format="csr")


def pyramid_matrix(mu: Array, k: int) -> sp.csr_matrix:
    """Sueda's notes eq. 1.86: ``E = [diag(mu), -S^T]`` acting on ``[alpha (nc); beta (nc k)]``."""
    mu = np.asarray(mu, dtype=float).reshape(-1)
    if np.any(mu < 0) or not np.all(np.isfinite(mu)):
        raise ConfigurationError("friction coefficients mu must be finite and >= 0")
    return sp.hstack([sp.diags(mu), -direction_sum(mu.shape[0], k).T], format="csr")


def box_bounds(mu: Array, lambda_n: Array) -> tuple[Array, Array]:
    """Box bounds ``(lo, hi)`` (2 nc,): ``-mu lambda_n <= lambda_T <= mu lambda_n`` per row.

    ``lambda_n`` (nc,) is the estimate of the normal impulses [N s]
    (negative estimates count as zero: a separating contact carries no friction).
    """
    mu = np.asarray(mu, dtype=float).reshape(-1)
    lam = np.maximum(np.asarray(lambda_n, dtype=float).reshape(-1), 0.0)
    if mu.shape != lam.shape:
        raise ConfigurationError(
            f"box_bounds: mu has {mu.shape[0]} entries but lambda_n has {lam.shape[0]}"
        )
    hi = np.repeat(mu * lam, 2)
    return -hi, hi
