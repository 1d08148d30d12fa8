"""The local frictional-contact problem of a step with a diagonal mass matrix, in compiled code.

In maximal coordinates on principal axes ``M`` is diagonal, ``M^{-1} = D``,
and every contact row of ``C = [G; N; T; L]`` touches at most two bodies
(twelve columns).  The Delassus matrix of the local problem,

.. math::

    W_{ij} = \\sum_c C_{ic} D_c C_{jc}, \\qquad q = C D f - b,

is then a sum over the bodies two rows share: the 3x3 block of two contacts
is non-zero only when they touch a common body.  :func:`local_problem_arrays`
builds ``W`` (CSR, sorted columns) and ``q`` straight from the CSR arrays of
the rows and the diagonal ``D`` with one sparse accumulator per row (the
rows of ``C`` that share a column are found through its transpose, built in
the same kernel), in the local order of the rows (contacts from the lowest
point up, then ``G`` and ``L``; :mod:`contactlab.models.fc_route`).  Each
entry is accumulated as ``D_c (C_ic C_jc)`` over the shared columns in
increasing order, the same operations for ``W_ij`` and ``W_ji``, so ``W`` is
exactly symmetric.  :func:`velocities` recovers ``v = D (f + C^T z)``.

No ``scipy.sparse`` matrix is formed: the rows of ``[G; N; T; L]`` are stacked
by concatenating their CSR arrays (:func:`stack_csr`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]


def stack_csr(*mats: Any) -> tuple[IVec, IVec, Vec]:
    """``(indptr, indices, data)`` of the CSR matrices ``mats`` stacked by rows (same columns)."""
    ptrs, idx, dat, offset = [np.zeros(1, dtype=np.int64)], [], [], 0
    for A in mats:
        ptrs.append(A.indptr[1:].astype(np.int64) + offset)
        idx.append(A.indices)
        dat.append(A.data)
        offset += int(A.indptr[-1])
    return (
        np.concatenate(ptrs),
        np.concatenate(idx).astype(np.int64) if idx else np.zeros(0, np.int64),
        np.concatenate(dat).astype(np.float64) if dat else np.zeros(0),
    )


@njit(cache=True)
def local_problem_arrays(
    indptr: IVec,
    indices: IVec,
    data: Vec,
    order: IVec,
    dinv: Vec,
    f: Vec,
    b: Vec,
) -> tuple[IVec, IVec, Vec, Vec]:
    """``W = C_o D C_o^T`` (CSR) and ``q = C_o D f - b_o`` for the rows ``C_o = C[order]``.

    ``indptr, indices, data``: CSR of ``C`` (m, n); ``order`` (m,): the row of
    ``C`` at each local position; ``dinv`` (n,): the diagonal of ``M^{-1}``;
    ``f`` (n,); ``b`` (m,) the right-hand sides of the rows of ``C``.
    """
    m = order.shape[0]
    n = dinv.shape[0]
    # local rows: start and end of each in the CSR of C
    start = np.empty(m, np.int64)
    stop = np.empty(m, np.int64)
    for i in range(m):
        start[i] = indptr[order[i]]
        stop[i] = indptr[order[i] + 1]
    # transpose: for every column, the local rows touching it, in increasing row order
    count = np.zeros(n + 1, np.int64)
    for i in range(m):
        for k in range(start[i], stop[i]):
            count[indices[k] + 1] += 1
    for c in range(n):
        count[c + 1] += count[c]
    fill = count[:-1].copy()
    t_rows = np.empty(count[n], np.int64)
    t_vals = np.empty(count[n])
    for i in range(m):
        for k in range(start[i], stop[i]):
            c = indices[k]
            t_rows[fill[c]] = i
            t_vals[fill[c]] = data[k]
            fill[c] += 1
    # symbolic pass: the number of entries of each row of W
    marker = np.full(m, -1, np.int64)
    w_ptr = np.zeros(m + 1, np.int64)
    for i in range(m):
        nnz = 0
        for k in range(start[i], stop[i]):
            c = indices[k]
            for kk in range(count[c], count[c + 1]):
                j = t_rows[kk]
                if marker[j] != i:
                    marker[j] = i
                    nnz += 1
        w_ptr[i + 1] = w_ptr[i] + nnz
    w_idx = np.empty(w_ptr[m], np.int64)
    w_val = np.empty(w_ptr[m])
    acc = np.zeros(m)
    marker[:] = -1
    q = np.empty(m)
    for i in range(m):
        pos = w_ptr[i]
        qi = 0.0
        for k in range(start[i], stop[i]):
            c = indices[k]
            cik = data[k]
            qi += cik * (dinv[c] * f[c])
            for kk in range(count[c], count[c + 1]):
                j = t_rows[kk]
                if marker[j] != i:
                    marker[j] = i
                    w_idx[pos] = j
                    pos += 1
                    acc[j] = 0.0
                acc[j] += dinv[c] * (cik * t_vals[kk])
        q[i] = qi - b[order[i]]
        # insertion sort of the row's columns in place (a few tens of entries)
        lo = w_ptr[i]
        for p in range(lo + 1, w_ptr[i + 1]):
            key = w_idx[p]
            k = p - 1
            while k >= lo and w_idx[k] > key:
                w_idx[k + 1] = w_idx[k]
                k -= 1
            w_idx[k + 1] = key
        for p in range(lo, w_ptr[i + 1]):
            w_val[p] = acc[w_idx[p]]
    return w_ptr, w_idx, w_val, q


@njit(cache=True)
def velocities(
    indptr: IVec, indices: IVec, data: Vec, order: IVec, dinv: Vec, f: Vec, z_local: Vec
) -> Vec:
    """``v = D (f + C_o^T z)`` for impulses ``z`` on the local rows ``C_o = C[order]``."""
    v = f.copy()
    for i in range(order.shape[0]):
        zi = z_local[i]
        if zi == 0.0:
            continue
        row = order[i]
        for k in range(indptr[row], indptr[row + 1]):
            v[indices[k]] += data[k] * zi
    for c in range(v.shape[0]):
        v[c] *= dinv[c]
    return v
