"""Joint reactions and the local solves for the joint contact multipliers (seed 000, §2.11).

**Backward traversal** (Alg. 8, lines 11–13).  ``p_i`` (body frame) is the
sum of the impulses of all tree joints acting on body ``i``: its own joint's
reaction ``r_i`` and, for each child ``c``, the opposite of ``r_c``
transported to ``i``'s frame by the wrench transform ``X_c^T`` (``X_c =
Ad(E_c^{-1} E_i)`` carries ``i``'s twist to ``c``'s frame).  Leaves first:

.. math::  r_i = p_i + \\sum_{c \\in children(i)} X_c^T r_c ,

the recursion of seed 000, eq. 2.108 / Alg. 6 without the final ``S^T``.

**Local solves** (eq. 2.114), one per joint, batched over joints with the same
number of contacts: with the child blocks ``B`` (k, 6) of the normal rows and
the child's inverse spatial inertia ``W``,

.. math::  \\alpha = (B W B^T + \\epsilon I)^{-1} B W r ,

the minimiser of ``||B^T alpha - r||_W^2 + eps ||alpha||^2``: as ``eps -> 0``
the least-norm ``alpha`` that reproduces the part of ``r`` the contacts can
carry (a joint torque about a revolute axis, say, is dropped).  The seed
prints ``alpha = h (...)^{-1} N M^{-1} f_alpha`` with ``f_alpha = -N^T alpha/h``,
whose signs contradict each other; this module works with impulses ``r`` [N s]
and ``B^T alpha = r``.  ``eps`` is relative to the mean diagonal of ``B W B^T``
so that it does not depend on units (the seed's absolute 1e-6 is in g-cm-s).
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numpy.typing import NDArray

Array = NDArray[np.float64]


@njit(cache=True)
def _distribute(parent, X, p):  # noqa: ANN001, ANN202
    r = p.copy()
    for i in range(r.shape[0] - 1, -1, -1):
        k = parent[i]
        if k >= 0:
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += X[i, b, a] * r[i, b]
                r[k, a] += s
    return r


def distribute_reactions(parent: NDArray[np.int64], X: Array, p: Array) -> Array:
    """Joint reactions ``r`` (n, 6) from per-body joint impulses ``p`` (n, 6), tree order.

    ``parent`` (n,) tree parents (``-1`` for the world), ``X`` (n, 6, 6) the
    parent-to-child twist transforms; parents come before children.
    """
    return np.asarray(_distribute(parent, X, np.ascontiguousarray(p, dtype=float)))


def local_multipliers(
    B: Array, offsets: NDArray[np.int64], W: Array, r: Array, eps: float = 1e-6
) -> Array:
    """Joint contact multipliers ``alpha`` (K,) from joint reactions ``r`` (nj, 6).

    ``B`` (K, 6) child blocks of the normal rows, ``offsets`` (nj + 1,) the
    contact range of every joint, ``W`` (nj, 6) the children's inverse
    spatial inertia diagonals.  Joints with the same contact count are
    solved together by one batched ``numpy.linalg.solve``.
    """
    alpha = np.zeros(B.shape[0])
    ks = np.diff(offsets)
    for k in np.unique(ks):
        if k == 0:
            continue
        js = np.flatnonzero(ks == k)
        idx = offsets[js][:, None] + np.arange(k)
        Bj = B[idx]  # (g, k, 6)
        BW = Bj * W[js][:, None, :]
        A = np.einsum("gka,gla->gkl", BW, Bj)
        scale = np.einsum("gkk->g", A) / k
        A = A + (eps * np.maximum(scale, 1e-300))[:, None, None] * np.eye(k)
        rhs = np.einsum("gka,ga->gk", BW, r[js])
        alpha[idx] = np.linalg.solve(A, rhs[..., None])[..., 0]
    return alpha
