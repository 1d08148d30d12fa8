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
from their CSR arrays by one pass (:func:`stack_rows_csr`, with their right-hand sides
and bounds; :func:`stack_csr` for the frictionless rows).  The velocity-form route
takes the rows in the local order with ``q`` from :func:`ordered_rows`, the local order
with the friction coefficients from :func:`local_order`, the warm start from
:func:`local_warm_start`; each does numpy's or scipy's operations in their order, so
the local problem is the same to the bit as the array construction it replaces.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 3.0

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


@njit(cache=True)
def diagonal_inverse(indptr, indices, data):  # type: ignore[no-untyped-def]  # pragma: no cover
    """``(True, 1 / diag(M))`` when the compressed matrix ``M`` (n columns or rows) is
    diagonal with a positive diagonal (its stored entries are the non-zero diagonal),
    else ``(False, _)``; the diagonal summed over duplicate entries as scipy's."""
    n = indptr.shape[0] - 1
    diag = np.zeros(n)
    for j in range(n):
        for k in range(indptr[j], indptr[j + 1]):
            if indices[k] == j:
                diag[j] += data[k]
    nonzero = 0
    positive = True
    for j in range(n):
        if diag[j] != 0.0:
            nonzero += 1
        if not diag[j] > 0.0:
            positive = False
    ok = positive and nonzero == indptr[n]
    out = np.empty(n)
    if ok:
        for j in range(n):
            out[j] = 1.0 / diag[j]
    return ok, out


@njit(cache=True)
def _copy_rows(bp, bi, bv, low, ptr, idx, val, lo, row, pos):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Append the CSR rows ``(bp, bi, bv)`` at row ``row`` and entry ``pos`` of the stack."""
    rows = bp.shape[0] - 1
    for k in range(bp[rows]):
        idx[pos + k] = bi[k]
        val[pos + k] = bv[k]
    for r in range(rows):
        ptr[row + r + 1] = pos + bp[r + 1]
        lo[row + r] = low
    return row + rows, pos + bp[rows]


@njit(cache=True)
def stack_rows_csr(  # type: ignore[no-untyped-def]  # pragma: no cover
    g_ptr, g_idx, g_val, n_ptr, n_idx, n_val, t_ptr, t_idx, t_val, l_ptr, l_idx, l_val, g, c, l
):
    """CSR arrays (int64 indices) of ``C = [G; N; T; L]``, its right-hand side
    ``b = [g; c; 0; l]`` and impulse lower bounds ``[-inf; 0; -inf; 0]``."""
    mg, nc, mt, ml = g_ptr.shape[0] - 1, n_ptr.shape[0] - 1, t_ptr.shape[0] - 1, l_ptr.shape[0] - 1
    m = mg + nc + mt + ml
    nnz = g_ptr[mg] + n_ptr[nc] + t_ptr[mt] + l_ptr[ml]
    ptr = np.empty(m + 1, np.int64)
    idx = np.empty(nnz, np.int64)
    val = np.empty(nnz)
    lo = np.empty(m)
    ptr[0] = 0
    row, pos = _copy_rows(g_ptr, g_idx, g_val, -np.inf, ptr, idx, val, lo, 0, 0)
    row, pos = _copy_rows(n_ptr, n_idx, n_val, 0.0, ptr, idx, val, lo, row, pos)
    row, pos = _copy_rows(t_ptr, t_idx, t_val, -np.inf, ptr, idx, val, lo, row, pos)
    _copy_rows(l_ptr, l_idx, l_val, 0.0, ptr, idx, val, lo, row, pos)
    b = np.zeros(m)
    for r in range(mg):
        b[r] = g[r]
    for r in range(nc):
        b[mg + r] = c[r]
    for r in range(ml):
        b[mg + nc + mt + r] = l[r]
    return ptr, idx, val, b, lo


@njit(cache=True)
def local_order(mg, nc, ml, up, mu):  # type: ignore[no-untyped-def]  # pragma: no cover
    """The local order of the rows of ``[G; N; T; L]`` (``mg, nc, 2 nc, ml`` rows): per
    contact ``up[k]`` its normal and two tangent rows, then ``G``, then ``L``; with the
    friction coefficients ``mu[up]`` and the scalar rows' bounds (``-inf`` for ``G``,
    ``0`` for ``L``) in that order."""
    m = mg + 3 * nc + ml
    order = np.empty(m, np.int64)
    for k in range(nc):
        i = up[k]
        order[3 * k] = mg + i
        order[3 * k + 1] = mg + nc + 2 * i
        order[3 * k + 2] = mg + nc + 2 * i + 1
    for r in range(mg):
        order[3 * nc + r] = r
    for r in range(ml):
        order[3 * nc + mg + r] = mg + 3 * nc + r
    mu_local = np.empty(nc)
    for k in range(nc):
        mu_local[k] = mu[up[k]]
    row_lo = np.zeros(mg + ml)
    row_lo[:mg] = -np.inf
    return order, mu_local, row_lo


@njit(cache=True)
def ordered_rows(indptr, indices, data, order, dinv, f, b, index):  # type: ignore[no-untyped-def]  # pragma: no cover
    """CSR arrays of ``C_o = C[order]`` (index arrays of dtype ``index``) and
    ``q = C_o (D f) - b_o`` (``D = diag(dinv)``), each entry of ``q`` summed over its row
    in column order from zero."""
    m = order.shape[0]
    ptr = np.empty(m + 1, index)
    ptr[0] = 0
    for i in range(m):
        ptr[i + 1] = ptr[i] + indptr[order[i] + 1] - indptr[order[i]]
    val = np.empty(ptr[m])
    idx = np.empty(ptr[m], index)
    x = dinv * f
    q = np.empty(m)
    for i in range(m):
        src = indptr[order[i]]
        acc = 0.0
        for k in range(ptr[i + 1] - ptr[i]):
            a = data[src + k]
            j = indices[src + k]
            val[ptr[i] + k] = a
            idx[ptr[i] + k] = j
            acc += a * x[j]
        q[i] = acc - b[order[i]]
    return val, idx, ptr, q


@njit(cache=True)
def _positions(old_ids, order, ids):  # type: ignore[no-untyped-def]  # pragma: no cover
    """For each of ``ids``, its position in ``old_ids`` (the first in the stable sort
    ``order`` of ``old_ids``), or ``-1``."""
    n_old = old_ids.shape[0]
    out = np.full(ids.shape[0], -1, np.int64)
    if n_old == 0:
        return out
    sorted_ids = old_ids[order]
    pos = np.searchsorted(sorted_ids, ids)
    for i in range(ids.shape[0]):
        p = min(pos[i], n_old - 1)
        if sorted_ids[p] == ids[i]:
            out[i] = order[p]
    return out


@njit(cache=True)
def carried_impulses(old_ids, order, normal_impulse, friction, ids, origin, t1, t2):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Normal ``(nc,)`` and tangent ``(2 nc,)`` impulses carried over from the recorded
    contacts ``old_ids`` (``order`` their stable sort;
    :func:`contactlab.models.box_rows.carried_over`): each contact from the one of its
    own id, else of its origin; friction (world vectors) projected on the tangents
    ``t1, t2`` (nc, 3)."""
    nc = ids.shape[0]
    src = _positions(old_ids, order, ids)
    back = _positions(old_ids, order, origin)
    zn = np.zeros(nc)
    zt = np.zeros(2 * nc)
    for i in range(nc):
        s = src[i] if src[i] >= 0 else back[i]
        f0, f1, f2 = 0.0, 0.0, 0.0  # a new contact: zero friction (projected as such)
        if s >= 0:
            zn[i] = normal_impulse[s]
            f0, f1, f2 = friction[s, 0], friction[s, 1], friction[s, 2]
        zt[2 * i] = f0 * t1[i, 0] + f1 * t1[i, 1] + f2 * t1[i, 2]
        zt[2 * i + 1] = f0 * t2[i, 0] + f1 * t2[i, 1] + f2 * t2[i, 2]
    return zn, zt


@njit(cache=True)
def friction_vectors(lam_t, t1, t2):  # type: ignore[no-untyped-def]  # pragma: no cover
    """Friction impulses ``(2 nc,)`` in the bases ``t1, t2`` (nc, 3) as world vectors (nc, 3)."""
    nc = t1.shape[0]
    out = np.empty((nc, 3))
    for i in range(nc):
        a, b = lam_t[2 * i], lam_t[2 * i + 1]
        for k in range(3):
            out[i, k] = a * t1[i, k] + b * t2[i, k]
    return out


@njit(cache=True)
def local_warm_start(  # type: ignore[no-untyped-def]  # pragma: no cover
    old_z, old_g, old_l, same_g, same_l, carry, old_ids, order_ids, normal_impulse,
    friction, ids, origin, t1, t2, mg, ml, order,
):  # fmt: skip
    """The warm start of :func:`contactlab.models.box_rows.warm_impulses` on the rows
    ``[G; N; T; L]`` (``mg``, ``nc``, ``2 nc``, ``ml`` rows), in the local ``order``.

    ``old_z`` the recorded impulses with ``old_g``, ``old_l`` the starts of its ``G``
    and ``L`` blocks, copied when ``same_g``/``same_l`` (unchanged row counts); the
    contacts' impulses by :func:`carried_impulses` from the recorded ``old_ids``
    (``order_ids`` their stable sort) when ``carry``, else zero.
    """
    nc = ids.shape[0]
    m = mg + 3 * nc + ml
    z = np.zeros(m)
    if same_g:
        for r in range(mg):
            z[r] = old_z[old_g + r]
    if same_l:
        for r in range(ml):
            z[mg + 3 * nc + r] = old_z[old_l + r]
    if carry:
        zn, zt = carried_impulses(old_ids, order_ids, normal_impulse, friction, ids, origin, t1, t2)
        for i in range(nc):
            z[mg + i] = zn[i]
        for i in range(2 * nc):
            z[mg + nc + i] = zt[i]
    out = np.empty(order.shape[0])
    for k in range(order.shape[0]):
        out[k] = z[order[k]]
    return out
