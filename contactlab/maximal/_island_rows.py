"""The copy of one island's contact rows and bodies into arrays of its own, which the
compiled maximal steps that solve island by island share (the box-friction step of
:mod:`contactlab.maximal._pile_kernels`, the cone steps of
:mod:`contactlab.maximal._cone_kernels` and :mod:`contactlab.maximal._cone_fom_kernels`).
"""

from __future__ import annotations

import numpy as np

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None


@njit(cache=True)
def island_rows(pick, a, b, J, DJ, A, rhs, mu, z, f, dinv, slot):  # noqa: ANN001, ANN201, PLR0913
    """The arrays of the island whose contacts are the rows ``pick`` (entry ``j`` of the
    island stands for row ``pick[j]`` of the step's arrays, on bodies ``a[pick[j]]`` and
    ``b[pick[j]]``): its rows ``J``, ``M^-1 J^T`` (``DJ``; skipped when it has no rows),
    diagonal blocks ``A``, right-hand sides, friction coefficients and impulses ``z``, its
    bodies (numbered in order of appearance, the world's zero slot last) with their free
    momentum ``f`` and inverse mass ``dinv``, and the two first twist slots of each row.
    The island's data are those of the same contacts in a scene of their own.  ``slot``
    (nb, all ``-1``) is work space, left as given."""
    m = pick.shape[0]
    m3 = 3 * m
    bodies = np.empty(2 * m, dtype=np.int64)
    nbk = 0
    for j in range(m):
        i = pick[j]
        for g in (a[i], b[i]):
            if g >= 0 and slot[g] < 0:
                slot[g] = nbk
                bodies[nbk] = g
                nbk += 1
    nk = 6 * nbk
    fk = np.empty(nk)
    dk = np.empty(nk)
    for q in range(nbk):
        for d in range(6):
            fk[6 * q + d] = f[6 * bodies[q] + d]
            dk[6 * q + d] = dinv[6 * bodies[q] + d]
    with_dj = DJ.shape[0] > 0
    Jk = np.empty((m3, 12))
    DJk = np.empty((m3 if with_dj else 0, 12))
    Ak = np.empty((m, 9))
    rk = np.empty(m3)
    zk = np.empty(m3)
    muk = np.empty(m)
    cak = np.empty(m3, dtype=np.int64)
    cbk = np.empty(m3, dtype=np.int64)
    for j in range(m):
        i = pick[j]
        muk[j] = mu[i]
        for e in range(9):
            Ak[j, e] = A[i, e]
        for d in range(3):
            r, s = 3 * i + d, 3 * j + d
            for e in range(12):
                Jk[s, e] = J[r, e]
            if with_dj:
                for e in range(12):
                    DJk[s, e] = DJ[r, e]
            rk[s], zk[s] = rhs[r], z[r]
            cak[s] = 6 * slot[a[i]]
            cbk[s] = 6 * slot[b[i]] if b[i] >= 0 else nk  # the world's zero slot
    for q in range(nbk):
        slot[bodies[q]] = -1
    return Jk, DJk, Ak, rk, muk, zk, fk, dk, cak, cbk


__all__ = ["COMPILE_SECONDS", "island_rows"]
