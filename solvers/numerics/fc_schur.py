"""The free scalar rows of a frictional-contact problem eliminated by their Schur complement.

A scalar row with ``row_lo = -inf`` (a joint's bilateral row) has a free impulse and a zero
velocity.  Split the rows into the free ones ``F`` and the kept ones ``K`` (the contacts and
the bounded scalar rows, in their order): ``u_F = 0`` reads ``W_FF r_F + W_FK r_K + q_F = 0``,
so with ``W_FF = L L'`` (Cholesky)

.. math::

    r_F = -L^{-T} (Y r_K + y), \\quad Y = L^{-1} W_{FK}, \\quad y = L^{-1} q_F, \\qquad
    u_K = (W_{KK} - Y'Y) r_K + (q_K - Y'y),

the Schur complement ``S = W_KK - Y'Y`` and the free velocity ``q_K - Y'y`` of the contacts
and bounded rows alone (ArtiSynth notes §0.7, the elimination of
:func:`solvers.conversions.mixed_lcp_to_lcp`).  The kept rows' problem has the same cones, so
its solutions are the whole problem's restricted to ``K`` and :func:`recover_free` gives
back ``r_F``.  With ``W = C M^{-1} C'`` and ``F`` the joint rows ``G`` of independent rows,
``S = C_K P C_K'`` with ``P`` the inverse mass of the joints' tangent space: the Delassus
matrix of reduced coordinates, whose conditioning a first-order method sees instead of the
joints' stiffness.

Only the kept rows a free row touches (``J``, the contacts on jointed bodies) change: ``Y``
has their columns alone and ``S`` is ``W_KK`` with the dense block ``W_JJ - Y_J' Y_J``, so a
pile of free bodies beside a jointed robot keeps its sparse rows.  The factorisation is
dense, ``nf^3 / 3`` products for ``nf`` free rows.

Rows that are dependent (a closed loop's redundant joint rows) make ``W_FF`` singular: a
pivot below ``pivot_rtol`` times its row's diagonal (the share of the row not spanned by the
rows before it) stops :func:`schur_free_rows`, which then says so (``ok`` false) and the
caller keeps the free rows in its iteration.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.dense import cholesky

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 2.5

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]
Mat = NDArray[np.float64]


@njit(cache=True)
def split_rows(row_lo: Vec, first: int) -> tuple[IVec, IVec]:
    """The free rows (scalar rows from ``first`` on with ``row_lo = -inf``) and the kept
    rows (the contacts' ``first`` rows and the bounded scalar rows), each in order."""
    ms = row_lo.shape[0]
    nf = 0
    for k in range(ms):
        if row_lo[k] == -np.inf:
            nf += 1
    free = np.empty(nf, np.int64)
    keep = np.empty(first + ms - nf, np.int64)
    a = 0
    b = 0
    for i in range(first):
        keep[b] = i
        b += 1
    for k in range(ms):
        if row_lo[k] == -np.inf:
            free[a] = first + k
            a += 1
        else:
            keep[b] = first + k
            b += 1
    return free, keep


@njit(cache=True)
def _factor(A: Mat, pivot_rtol: float) -> bool:
    """``A = L L'`` in place (:func:`solvers.numerics.dense.cholesky`, ``L`` in the lower
    triangle); false when a pivot is at most ``pivot_rtol`` times its diagonal entry (a row
    dependent on the rows before it, to that share)."""
    diag = np.diag(A).copy()
    if not cholesky(A, A):
        return False
    for j in range(diag.shape[0]):
        if not A[j, j] * A[j, j] > pivot_rtol * diag[j]:
            return False
    return True


@njit(cache=True)
def _forward(L: Mat, B: Mat) -> None:
    """``B = L^{-1} B`` in place (``L`` lower triangular)."""
    n, m = B.shape
    for a in range(n):
        for b in range(a):
            lab = L[a, b]
            if lab != 0.0:
                for t in range(m):
                    B[a, t] -= lab * B[b, t]
        inv = 1.0 / L[a, a]
        for t in range(m):
            B[a, t] *= inv


@njit(cache=True)
def schur_free_rows(
    indptr: IVec, indices: IVec, data: Vec, q: Vec, free: IVec, keep: IVec, pivot_rtol: float
) -> tuple[bool, IVec, IVec, Vec, Vec, Mat, Mat, IVec]:
    """The kept rows' problem once the ``free`` rows of ``u = W r + q`` are eliminated
    (module docstring): ``(ok, indptr, indices, data, q_K, L, Y, J)`` with ``S`` in CSR over
    the kept rows' positions, ``L`` the Cholesky factor of ``W_FF``, ``Y = L^{-1} [W_FJ |
    q_F]`` (its last column ``y``) and ``J`` the kept positions of the coupled rows (the
    columns of ``Y``).  ``ok`` false (and the other arrays empty) when ``W_FF`` has a pivot
    at most ``pivot_rtol`` times its diagonal entry."""
    n = q.shape[0]
    nf = free.shape[0]
    nk = keep.shape[0]
    pos_f = np.full(n, -1, np.int64)
    pos_k = np.full(n, -1, np.int64)
    for a in range(nf):
        pos_f[free[a]] = a
    for b in range(nk):
        pos_k[keep[b]] = b
    # the kept rows a free row touches, in the kept order
    pos_j = np.full(n, -1, np.int64)
    for a in range(nf):
        i = free[a]
        for e in range(indptr[i], indptr[i + 1]):
            c = indices[e]
            if pos_k[c] >= 0 and data[e] != 0.0:
                pos_j[c] = 0
    nj = 0
    for b in range(nk):
        if pos_j[keep[b]] == 0:
            nj += 1
    J = np.empty(nj, np.int64)
    t = 0
    for b in range(nk):
        if pos_j[keep[b]] == 0:
            pos_j[keep[b]] = t
            J[t] = b
            t += 1
    A = np.zeros((nf, nf))
    Y = np.zeros((nf, nj + 1))
    for a in range(nf):
        i = free[a]
        for e in range(indptr[i], indptr[i + 1]):
            c = indices[e]
            if pos_f[c] >= 0:
                A[a, pos_f[c]] += data[e]
            elif pos_j[c] >= 0:
                Y[a, pos_j[c]] += data[e]
        Y[a, nj] = q[i]
    if not _factor(A, pivot_rtol):
        empty = np.zeros(0, np.int64)
        return (False, empty, empty, np.zeros(0), np.zeros(0), np.zeros((0, 0)),
                np.zeros((0, 0)), empty)  # fmt: skip
    _forward(A, Y)
    # D = Y_J' [Y_J | y]: the correction of the coupled block and of their free velocity
    D = np.zeros((nj, nj + 1))
    for s in range(nj):
        for u in range(s, nj + 1):
            acc = 0.0
            for a in range(nf):
                acc += Y[a, s] * Y[a, u]
            D[s, u] = acc
            if u < nj:
                D[u, s] = acc
    qk = np.empty(nk)
    for b in range(nk):
        qk[b] = q[keep[b]]
    for s in range(nj):
        qk[J[s]] -= D[s, nj]
    ptr = np.zeros(nk + 1, np.int64)
    for b in range(nk):
        i = keep[b]
        cnt = 0
        for e in range(indptr[i], indptr[i + 1]):
            c = indices[e]
            if pos_k[c] >= 0 and not (pos_j[i] >= 0 and pos_j[c] >= 0):
                cnt += 1
        if pos_j[i] >= 0:
            cnt += nj
        ptr[b + 1] = ptr[b] + cnt
    idx = np.empty(ptr[nk], np.int64)
    val = np.empty(ptr[nk])
    row = np.empty(nj)
    for b in range(nk):
        i = keep[b]
        p = ptr[b]
        coupled = pos_j[i] >= 0
        if coupled:
            s = pos_j[i]
            for u in range(nj):
                row[u] = -D[s, u]
        for e in range(indptr[i], indptr[i + 1]):
            c = indices[e]
            if pos_k[c] < 0:
                continue
            if coupled and pos_j[c] >= 0:
                row[pos_j[c]] += data[e]
            else:
                idx[p] = pos_k[c]
                val[p] = data[e]
                p += 1
        if coupled:
            for u in range(nj):
                idx[p] = J[u]
                val[p] = row[u]
                p += 1
    return True, ptr, idx, val, qk, A, Y, J


@njit(cache=True)
def recover_free(L: Mat, Y: Mat, J: IVec, rk: Vec, free: IVec, keep: IVec, r: Vec) -> None:
    """The whole problem's impulses ``r`` from the kept rows' ``rk``: ``r_K = rk`` and
    ``r_F = -L^{-T} (Y_J rk_J + y)`` (:func:`schur_free_rows`'s ``L``, ``Y``, ``J``)."""
    nf = free.shape[0]
    nj = J.shape[0]
    x = np.empty(nf)
    for a in range(nf):
        acc = Y[a, nj]
        for s in range(nj):
            acc += Y[a, s] * rk[J[s]]
        x[a] = acc
    for a in range(nf - 1, -1, -1):
        acc = x[a]
        for b in range(a + 1, nf):
            acc -= L[b, a] * x[b]
        x[a] = acc / L[a, a]
    for b in range(keep.shape[0]):
        r[keep[b]] = rk[b]
    for a in range(nf):
        r[free[a]] = -x[a]
