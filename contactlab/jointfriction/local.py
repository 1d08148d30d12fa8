"""Joint reactions and the local solves for the joint contact multipliers (Sueda's notes, §2.11).

**Backward traversal** (Alg. 8, lines 11–13).  ``p_i`` (body frame) is the
sum of the impulses of all tree joints acting on body ``i``: its own joint's
reaction ``r_i`` and, for each child ``c``, the opposite of ``r_c``
transported to ``i``'s frame by the wrench transform ``X_c^T`` (``X_c =
Ad(E_c^{-1} E_i)`` carries ``i``'s twist to ``c``'s frame).  Leaves first:

.. math::  r_i = p_i + \\sum_{c \\in children(i)} X_c^T r_c ,

the recursion of Sueda's notes, eq. 2.108 / Alg. 6 without the final ``S^T``.

**Local solves** (eq. 2.114), one per joint, batched over joints with the same
number of contacts: with the child blocks ``B`` (k, 6) of the normal rows and
the child's inverse spatial inertia ``W``,

.. math::  \\alpha = (B W B^T + \\epsilon I)^{-1} B W r ,

the minimiser of ``||B^T alpha - r||_W^2 + eps ||alpha||^2``: as ``eps -> 0``
the least-norm ``alpha`` with ``B^T alpha = r`` when ``r`` is a pure reaction
(workless on the joint's motion; :func:`remove_joint_forces` makes it so).  The seed
prints ``alpha = h (...)^{-1} N M^{-1} f_alpha`` with ``f_alpha = -N^T alpha/h``,
whose signs contradict each other; this module works with impulses ``r`` [N s]
and ``B^T alpha = r``.  ``eps`` is relative to the mean diagonal of ``B W B^T``
so that it does not depend on units (the seed's absolute 1e-6 is in g-cm-s).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 2.0

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


def remove_joint_forces(r: Array, S: Array, rotational: NDArray[np.bool_]) -> Array:
    """Reactions without the generalized forces done on the joints' own motion.

    A joint's reaction recovered from velocities also holds what the joint
    itself applies along its free directions (a motor, a joint spring, a
    coupling or prescribed-motion multiplier): ``tau = S^T r`` for the joint's
    body-frame motion subspace ``S`` (6, d).  It is a pure torque ``(S_w tau,
    0)`` for revolute/spherical joints (unit rotation axes) and a pure force
    ``(0, S_v tau)`` for prismatic ones; removing it leaves a workless
    wrench, ``S^T r' = 0``, which the joint contact normals carry exactly.

    r : (nj, 6); S : (nj, 6, d) zero-padded; rotational : (nj,) kind flags.
    """
    tau = np.einsum("jad,ja->jd", S, r)
    D = S.copy()
    D[rotational, 3:, :] = 0.0
    D[~rotational, :3, :] = 0.0
    return r - np.einsum("jad,jd->ja", D, tau)


def local_multipliers(
    B: Array, offsets: NDArray[np.int64], W: Array, r: Array, eps: float = 1e-6
) -> Array:
    """Joint contact multipliers ``alpha`` (K,) from joint reactions ``r`` (nj, 6).

    ``B`` (K, 6) child blocks of the normal rows, ``offsets`` (nj + 1,) the
    contact range of every joint, ``W`` (nj, 6) the children's inverse
    spatial inertia diagonals.  With ``A = B W^{1/2}`` the push-through
    identity ``(A A^T + eps I)^{-1} A = A (A^T A + eps I)^{-1}`` turns the
    k x k system of eq. 2.114 into a 6 x 6 one per joint, solved for all
    joints by one batched ``numpy.linalg.solve`` (and better conditioned:
    the k x k matrix has rank at most 6).
    """
    nj = offsets.size - 1
    K = B.shape[0]
    if nj == 0 or K == 0:
        return np.zeros(K)
    joint = np.repeat(np.arange(nj), np.diff(offsets))
    Wh = np.sqrt(W)
    A = B * Wh[joint]  # (K, 6)
    outer = A[:, :, None] * A[:, None, :]
    G = np.add.reduceat(outer, offsets[:-1], axis=0)  # contacts of a joint are contiguous
    k = np.maximum(np.diff(offsets), 1)
    scale = np.maximum(np.einsum("gii->g", G) / k, 1e-300)
    G += (eps * scale)[:, None, None] * np.eye(6)
    y = np.linalg.solve(G, (Wh * r)[..., None])[..., 0]
    return np.einsum("ka,ka->k", A, y[joint])
