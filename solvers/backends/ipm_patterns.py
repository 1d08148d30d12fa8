"""Sparse structure of the interior point's normal matrix, and row selection.

The normal matrix ``K = D^{-1} + Ĉ'ΘĈ`` of :mod:`solvers.backends.fc_ipm` couples
the unknowns that share a cone block's rows.  Its pattern is the union, over
blocks, of each block's column set (:func:`block_columns`, :func:`normal_pattern`,
one call: :func:`normal_setup`); its values are scattered into that pattern per
iteration by :func:`fill_normal`.  Row selection (:func:`select_rows`,
:func:`select_soc`) builds ``Ĉ = T' C`` and the bilateral rows from the CSR
arrays of ``C`` without scipy.  Nothing here knows cones beyond their block pointers.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit
from solvers.numerics.csr import find_sorted

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured on its own: included in :mod:`solvers.backends.fc_ipm`'s, which
#: was measured with these kernels in that module), for the first-use message of
#: :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]
BVec = NDArray[np.bool_]


@njit(cache=True)
def _sort_range(a: IVec, lo: int, hi: int) -> None:
    """Sort ``a[lo:hi]`` in place (insertion sort: the ranges are short, no allocation)."""
    for i in range(lo + 1, hi):
        x = a[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True)
def block_columns(bptr: IVec, indptr: IVec, indices: IVec, data: Vec, nv: int) -> tuple:
    """Per cone block: the sorted union of its rows' columns and the dense rows on them.

    Returns ``(cptr, cols, jptr, jval)``: block ``b`` has columns
    ``cols[cptr[b]:cptr[b+1]]`` and its ``d x nb`` dense rows at
    ``jval[jptr[b]:jptr[b+1]]`` (row-major).
    """
    nb = bptr.shape[0] - 1
    mark = np.full(nv, -1, dtype=np.int64)
    cptr = np.zeros(nb + 1, dtype=np.int64)
    total = 0
    for b in range(nb):
        cnt = 0
        for row in range(bptr[b], bptr[b + 1]):
            for k in range(indptr[row], indptr[row + 1]):
                c = indices[k]
                if mark[c] != b:
                    mark[c] = b
                    cnt += 1
        total += cnt
        cptr[b + 1] = total
    cols = np.empty(total, dtype=np.int64)
    mark[:] = -1
    jptr = np.zeros(nb + 1, dtype=np.int64)
    for b in range(nb):
        pos = cptr[b]
        for row in range(bptr[b], bptr[b + 1]):
            for k in range(indptr[row], indptr[row + 1]):
                c = indices[k]
                if mark[c] != b:
                    mark[c] = b
                    cols[pos] = c
                    pos += 1
        _sort_range(cols, cptr[b], cptr[b + 1])
        jptr[b + 1] = jptr[b] + (bptr[b + 1] - bptr[b]) * (cptr[b + 1] - cptr[b])
    jval = np.zeros(jptr[nb])
    where = np.full(nv, -1, dtype=np.int64)
    for b in range(nb):
        ncol = cptr[b + 1] - cptr[b]
        for p in range(ncol):
            where[cols[cptr[b] + p]] = p
        for a, row in enumerate(range(bptr[b], bptr[b + 1])):
            for k in range(indptr[row], indptr[row + 1]):
                jval[jptr[b] + a * ncol + where[indices[k]]] += data[k]
    return cptr, cols, jptr, jval


def pattern_keys(cptr: IVec, cols: IVec, nv: int, size: int) -> IVec:
    """Keys ``col * size + row`` (``row <= col``) of the upper normal matrix, diagonal first.

    The reference order of :func:`normal_pattern`'s slots: the diagonal, then per block
    its column pairs ``(q, p)``, ``p <= q``, in position order.  Not used on the solve
    path (the pattern is built by marking), so it is plain numpy.
    """
    parts = [np.arange(nv, dtype=np.int64) * (size + 1)]
    for b in range(cptr.shape[0] - 1):
        c = np.asarray(cols[cptr[b] : cptr[b + 1]], dtype=np.int64)
        q, p = np.tril_indices(c.shape[0])
        parts.append(c[q] * size + c[p])
    return np.concatenate(parts)


@njit(cache=True)
def normal_pattern(cptr: IVec, cols: IVec, nv: int, gbp: IVec, gbi: IVec) -> tuple:
    """CSC pattern of the upper normal matrix and the slot of every key of :func:`pattern_keys`.

    Column ``j < nv`` holds ``j`` and every column ``<= j`` of the blocks that
    touch ``j``; column ``nv + i`` (bilateral row ``i``, CSR ``gbp, gbi``) its
    row's columns and itself.  Returns ``(colptr, rows, slot, extra_slot)``:
    ``slot`` in the order of :func:`pattern_keys`, ``extra_slot`` of the
    bilateral entries (CSR order) then of the border's diagonal.
    """
    nb = cptr.shape[0] - 1
    mb = gbp.shape[0] - 1
    size = nv + mb
    # blocks touching each column
    cnt = np.zeros(nv + 1, dtype=np.int64)
    for k in range(cols.shape[0]):
        cnt[cols[k] + 1] += 1
    for j in range(nv):
        cnt[j + 1] += cnt[j]
    fill = cnt[:-1].copy()
    blk = np.empty(cols.shape[0], dtype=np.int64)
    for b in range(nb):
        for k in range(cptr[b], cptr[b + 1]):
            blk[fill[cols[k]]] = b
            fill[cols[k]] += 1
    bound = nv + mb + gbi.shape[0]
    for b in range(nb):
        m = cptr[b + 1] - cptr[b]
        bound += m * (m + 1) // 2
    rows = np.empty(bound, dtype=np.int64)
    colptr = np.zeros(size + 1, dtype=np.int64)
    mark = np.full(nv, -1, dtype=np.int64)
    pos = 0
    for j in range(nv):
        start = pos
        mark[j] = j
        rows[pos] = j
        pos += 1
        for t in range(cnt[j], cnt[j + 1]):
            b = blk[t]
            for k in range(cptr[b], cptr[b + 1]):
                c = cols[k]
                if c < j and mark[c] != j:
                    mark[c] = j
                    rows[pos] = c
                    pos += 1
        _sort_range(rows, start, pos)
        colptr[j + 1] = pos
    for i in range(mb):
        start = pos
        for k in range(gbp[i], gbp[i + 1]):
            rows[pos] = gbi[k]
            pos += 1
        _sort_range(rows, start, pos)
        rows[pos] = nv + i
        pos += 1
        colptr[nv + i + 1] = pos
    rows = rows[:pos].copy()
    count = nv
    for b in range(nb):
        m = cptr[b + 1] - cptr[b]
        count += m * (m + 1) // 2
    slot = np.empty(count, dtype=np.int64)
    for j in range(nv):
        slot[j] = find_sorted(rows, colptr[j], colptr[j + 1], j)
    q_pos = nv
    for b in range(nb):
        for q in range(cptr[b], cptr[b + 1]):
            cq = cols[q]
            for p in range(cptr[b], q + 1):
                slot[q_pos] = find_sorted(rows, colptr[cq], colptr[cq + 1], cols[p])
                q_pos += 1
    extra = np.empty(gbi.shape[0] + mb, dtype=np.int64)
    e = 0
    for i in range(mb):
        for k in range(gbp[i], gbp[i + 1]):
            extra[e] = find_sorted(rows, colptr[nv + i], colptr[nv + i + 1], gbi[k])
            e += 1
    for i in range(mb):
        extra[e] = colptr[nv + i + 1] - 1
        e += 1
    return colptr, rows, slot, extra


@njit(cache=True)
def fill_normal(
    nv: int,
    dinv_inv: Vec,
    gptr: IVec,
    gsoc: BVec,
    rowblk: IVec,
    cptr: IVec,
    jptr: IVec,
    jval: Vec,
    theta: Vec,
    slot: IVec,
    out: Vec,
) -> None:
    """Values of ``K = D^{-1} + Ĉ'ΘĈ`` (upper, in the pattern of :func:`pattern_keys`).

    Rows are grouped per contact (``gptr``): a Lorentz block (``gsoc``, full
    3x3 ``Θ``) or the ``k`` linear rows of a polyhedral cone (diagonal ``Θ``),
    which share their columns.
    """
    out[:] = 0.0
    for j in range(nv):
        out[slot[j]] += dinv_inv[j]
    pos = nv
    ng = gptr.shape[0] - 1
    size = 0
    tri = 0
    for g in range(ng):
        m = cptr[g + 1] - cptr[g]
        size = max(size, (gptr[g + 1] - gptr[g]) * m)
        tri = max(tri, m * (m + 1) // 2)
    tj = np.empty(size)  # Θ_g J_g, row-major d x m
    buf = np.empty(tri)  # the group's upper triangle J_g'Θ_g J_g, column pairs (q, p <= q)
    for g in range(ng):
        d = gptr[g + 1] - gptr[g]
        m = cptr[g + 1] - cptr[g]
        base = jptr[g]
        if gsoc[g]:
            b9 = 9 * rowblk[gptr[g]]
            for a in range(3):
                t0, t1, t2 = theta[b9 + 3 * a], theta[b9 + 3 * a + 1], theta[b9 + 3 * a + 2]
                for q in range(m):
                    tj[a * m + q] = (
                        t0 * jval[base + q] + t1 * jval[base + m + q] + t2 * jval[base + 2 * m + q]
                    )
        else:
            for a in range(d):
                ta = theta[9 * rowblk[gptr[g] + a]]
                for q in range(m):
                    tj[a * m + q] = ta * jval[base + a * m + q]
        nn = m * (m + 1) // 2
        for i in range(nn):
            buf[i] = 0.0
        # row by row, the innermost loop runs along contiguous columns (vectorised)
        for a in range(d):
            ja = base + a * m
            k = 0
            for q in range(m):
                t = tj[a * m + q]
                for p in range(q + 1):
                    buf[k + p] += jval[ja + p] * t
                k += q + 1
        for i in range(nn):
            out[slot[pos + i]] += buf[i]
        pos += nn


def _rows_of(C, sel: IVec, scale: Vec):  # type: ignore[no-untyped-def]
    """The rows ``sel`` of the CSR ``C``, row ``k`` times ``scale[k]`` (CSR, compiled)."""
    import scipy.sparse as sp

    data, indices, ptr = select_rows(
        C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data, sel, scale
    )
    return sp.csr_matrix((data, indices, ptr), shape=(sel.size, C.shape[1]))


@njit(cache=True)
def select_rows(indptr, indices, data, sel, scale):  # type: ignore[no-untyped-def]  # pragma: no cover
    """CSR arrays of the rows ``sel`` of a CSR matrix, row ``k`` times ``scale[k]``."""
    ptr = np.zeros(sel.shape[0] + 1, dtype=np.int64)
    for k in range(sel.shape[0]):
        ptr[k + 1] = ptr[k] + indptr[sel[k] + 1] - indptr[sel[k]]
    out = np.empty(ptr[-1])
    cols = np.empty(ptr[-1], dtype=np.int64)
    for k in range(sel.shape[0]):
        src = indptr[sel[k]]
        for q in range(ptr[k + 1] - ptr[k]):
            out[ptr[k] + q] = data[src + q] * scale[k]
            cols[ptr[k] + q] = indices[src + q]
    return out, cols, ptr


@njit(cache=True)
def selection_transpose(sel, vals, n):  # type: ignore[no-untyped-def]  # pragma: no cover
    """CSR arrays of the (n x len(sel)) matrix whose row ``sel[k]`` holds ``vals[k]`` at
    column ``k`` (each row selected at most once)."""
    ptr = np.zeros(n + 1, dtype=np.int64)
    for k in range(sel.shape[0]):
        ptr[sel[k] + 1] = 1
    for i in range(n):
        ptr[i + 1] += ptr[i]
    out = np.empty(sel.shape[0])
    cols = np.empty(sel.shape[0], dtype=np.int64)
    for k in range(sel.shape[0]):
        out[ptr[sel[k]]] = vals[k]
        cols[ptr[sel[k]]] = k
    return out, cols, ptr


@njit(cache=True)
def select_soc(indptr, indices, data, mu, row_lo, nc):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`_lift` for the exact cone on the CSR arrays of ``C``, in one call.

    ``T`` has one entry per row, so ``Ĉ = T' C`` selects and scales rows of ``C``
    (contacts' rows by ``(1, mu, mu)``, then the unilateral rows); the bilateral rows
    ``G_b`` are selected unscaled.  Returns the CSR arrays ``(ptr, indices, data)`` of
    ``Ĉ``, ``G_b``, ``T`` (``n x m``) and ``E'`` (``n x mb``), the blocks ``bptr``
    (``gsoc``: which are Lorentz blocks) and the selection ``(rows, scale, bil)``.
    """
    n = 3 * nc + row_lo.shape[0]
    nu = 0
    nbil = 0
    for k in range(row_lo.shape[0]):
        if row_lo[k] == 0.0:
            nu += 1
        elif np.isinf(row_lo[k]):
            nbil += 1
    m = 3 * nc + nu
    rows = np.empty(m, dtype=np.int64)
    scale = np.empty(m)
    bil = np.empty(nbil, dtype=np.int64)
    for i in range(nc):
        rows[3 * i], rows[3 * i + 1], rows[3 * i + 2] = 3 * i, 3 * i + 1, 3 * i + 2
        scale[3 * i], scale[3 * i + 1], scale[3 * i + 2] = 1.0, mu[i], mu[i]
    a = 3 * nc
    b = 0
    for k in range(row_lo.shape[0]):
        if row_lo[k] == 0.0:
            rows[a] = 3 * nc + k
            scale[a] = 1.0
            a += 1
        elif np.isinf(row_lo[k]):
            bil[b] = 3 * nc + k
            b += 1
    cd, ci, cp = select_rows(indptr, indices, data, rows, scale)
    ones = np.ones(nbil)
    gd, gi, gp = select_rows(indptr, indices, data, bil, ones)
    td, ti, tp = selection_transpose(rows, scale, n)
    ed, ei, ep = selection_transpose(bil, ones, n)
    bptr = np.empty(nc + nu + 1, dtype=np.int64)
    for i in range(nc + 1):
        bptr[i] = 3 * i
    for k in range(nu):
        bptr[nc + 1 + k] = 3 * nc + 1 + k
    gsoc = np.zeros(nc + nu, dtype=np.bool_)
    gsoc[:nc] = True
    return (cp, ci, cd), (gp, gi, gd), (tp, ti, td), (ep, ei, ed), bptr, gsoc, rows, scale, bil


def csr_of(arrays, shape):  # type: ignore[no-untyped-def]
    """The scipy CSR matrix of ``(ptr, indices, data)`` (the arrays shared)."""
    import scipy.sparse as sp

    ptr, idx, val = arrays
    return sp.csr_matrix((val, idx, ptr), shape=shape)


def arrays_of(A):  # type: ignore[no-untyped-def]
    """``(ptr, indices, data)`` of a CSR matrix, indices as int64."""
    return A.indptr.astype(np.int64), A.indices.astype(np.int64), A.data


@njit(cache=True)
def same_ints(a: IVec, b: IVec) -> bool:
    """Whether two integer arrays are equal (lengths and entries)."""
    if a.shape[0] != b.shape[0]:
        return False
    for i in range(a.shape[0]):
        if a[i] != b[i]:
            return False
    return True


def same_pattern(a: tuple[IVec, IVec], b: tuple[IVec, IVec]) -> bool:
    return all(same_ints(x, y) for x, y in zip(a, b, strict=True))


@njit(cache=True)
def row_blocks(bptr: IVec, m: int) -> IVec:
    """The block of every row (``bptr[b] <= i < bptr[b+1]``)."""
    out = np.empty(m, dtype=np.int64)
    for b in range(bptr.shape[0] - 1):
        for i in range(bptr[b], bptr[b + 1]):
            out[i] = b
    return out


@njit(cache=True)
def normal_setup(  # type: ignore[no-untyped-def]  # pragma: no cover
    bptr, gptr, ptr, idx, val, nv, gbp, gbi
):
    """:class:`Normal`'s structures in one call: :func:`row_blocks`, :func:`block_columns`
    and :func:`normal_pattern`."""
    rowblk = row_blocks(bptr, ptr.shape[0] - 1)
    cptr, cols, jptr, jval = block_columns(gptr, ptr, idx, val, nv)
    colptr, row, slot, extra = normal_pattern(cptr, cols, nv, gbp, gbi)
    return rowblk, cptr, jptr, jval, colptr, row, slot, extra
