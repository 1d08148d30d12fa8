"""Broad phase: overlapping pairs of axis-aligned boxes, vectorized (grid or sweep-and-prune).

:func:`grid_pairs` (the default of :class:`~contactlab.collision.Collider`)
hashes every box into the cells of a uniform grid whose cell is as large as
the largest "small" box, so a box covers at most 2 x 2 x 2 cells and only
boxes sharing a cell are compared: ``O(n + k)`` for ``k`` overlapping pairs
whatever the shape of the pile.  Boxes larger than a cell (static tables,
long bodies) are few and are compared with every other box directly.

:func:`sweep_and_prune`: the boxes are sorted by their lower bound along the axis on which their
centres spread most.  After sorting, box ``i`` can only overlap the boxes
``j > i`` whose lower bound lies below ``hi[i]`` — a contiguous run found by
one ``searchsorted``.  The runs are expanded into candidate pairs with array
arithmetic (no Python loop over boxes) and filtered on the other two axes.
The cost is ``O(n log n + k)`` with ``k`` the number of pairs overlapping
along the sweep axis, instead of the ``n^2 / 2`` tests of the brute force.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]


def _expand_runs(start: IntArray, count: IntArray) -> tuple[IntArray, IntArray]:
    """Pairs ``(r, start[r] + k)`` for every ``r`` and ``0 <= k < count[r]``."""
    total = int(count.sum())
    rows = np.repeat(np.arange(start.shape[0]), count)
    if total == 0:
        return rows, rows.copy()
    # position within each run: global arange minus the run's first position
    first = np.cumsum(count) - count
    offset = np.arange(total) - np.repeat(first, count)
    return rows, np.repeat(start, count) + offset


def sweep_and_prune(lo: Array, hi: Array) -> tuple[IntArray, IntArray]:
    """All pairs ``(i, j)``, ``i < j``, of boxes that overlap (closed intervals).

    Parameters
    ----------
    lo, hi : (n, 3) lower and upper corners [m].

    Returns
    -------
    i, j : (k,) index arrays with ``i < j``, sorted lexicographically.
    """
    n = lo.shape[0]
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    axis = int(np.argmax(np.var(lo + hi, axis=0)))
    order = np.argsort(lo[:, axis], kind="stable")
    lo_s, hi_s = lo[order], hi[order]
    end = np.searchsorted(lo_s[:, axis], hi_s[:, axis], side="right")
    start = np.arange(n) + 1
    count = np.maximum(end - start, 0)
    a, b = _expand_runs(start, count)
    keep = np.all((lo_s[a] <= hi_s[b]) & (lo_s[b] <= hi_s[a]), axis=1)
    i, j = order[a[keep]], order[b[keep]]
    i, j = np.minimum(i, j), np.maximum(i, j)
    sort = np.lexsort((j, i))
    return i[sort].astype(np.int64), j[sort].astype(np.int64)


def _unique_pairs(i: IntArray, j: IntArray, n: int) -> tuple[IntArray, IntArray]:
    i, j = np.minimum(i, j), np.maximum(i, j)
    key = np.unique(i * n + j)
    return (key // n).astype(np.int64), (key % n).astype(np.int64)


def _overlap(lo: Array, hi: Array, i: IntArray, j: IntArray) -> NDArray[np.bool_]:
    return np.all((lo[i] <= hi[j]) & (lo[j] <= hi[i]), axis=1)


#: A box is "large" (tested against all others) when its extent exceeds this
#: multiple of the median extent; the grid cell fits every other box.
LARGE_FACTOR = 4.0


def grid_pairs(lo: Array, hi: Array) -> tuple[IntArray, IntArray]:
    """All pairs ``(i, j)``, ``i < j``, of boxes that overlap, by a uniform hash grid.

    Same result as :func:`sweep_and_prune` (closed intervals, pairs sorted).
    """
    n = lo.shape[0]
    if n < 2:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    # every box small: one compiled pass (same grid, same pairs)
    done, i, j = _grid_small(lo, hi, LARGE_FACTOR)
    if done:
        return i, j
    ext = (hi - lo).max(axis=1)
    large = ext > LARGE_FACTOR * max(float(np.median(ext)), 1e-12)
    small = np.flatnonzero(~large)
    parts_i, parts_j = [], []
    if small.size > 1:
        cell = max(float(ext[small].max()), 1e-12)
        c0 = np.floor(lo[small] / cell).astype(np.int64)
        c1 = np.floor(hi[small] / cell).astype(np.int64)
        base = c0.min(axis=0)
        c0 -= base
        c1 -= base
        dims = c1.max(axis=0) + 2
        offsets = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)])
        cells = c0[:, None, :] + offsets[None, :, :]  # (m, 8, 3)
        inside = np.all(cells <= c1[:, None, :], axis=2)
        key = (cells[..., 0] * dims[1] + cells[..., 1]) * dims[2] + cells[..., 2]
        owner = np.broadcast_to(small[:, None], key.shape)[inside]
        key = key[inside]
        order = np.argsort(key, kind="stable")
        key, owner = key[order], owner[order]
        # each entry pairs with the later entries of its cell
        end = np.searchsorted(key, key, side="right")
        start = np.arange(key.size) + 1
        a, b = _expand_runs(start, np.maximum(end - start, 0))
        parts_i.append(owner[a])
        parts_j.append(owner[b])
    for big in np.flatnonzero(large):
        others = np.delete(np.arange(n), big)
        parts_i.append(np.full(others.size, big))
        parts_j.append(others)
    if not parts_i:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    i, j = _unique_pairs(np.concatenate(parts_i), np.concatenate(parts_j), n)
    keep = (i != j) & _overlap(lo, hi, i, j)
    return i[keep], j[keep]


@njit(cache=True)
def _grid_small(lo, hi, factor):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`grid_pairs` when no box is large: ``(True, i, j)``, else ``(False, -, -)``.

    The same test as the general path: a box is large when its extent exceeds
    ``factor`` times the median extent (at least 1e-12); the cell is the
    largest extent.
    """
    n = lo.shape[0]
    ext = np.empty(n)
    for k in range(n):
        e = hi[k, 0] - lo[k, 0]
        for d in range(1, 3):
            e = max(e, hi[k, d] - lo[k, d])
        ext[k] = e
    limit = factor * max(np.median(ext), 1e-12)
    cell = 0.0
    for k in range(n):
        if ext[k] > limit:
            empty = np.zeros(0, dtype=np.int64)
            return False, empty, empty.copy()
        cell = max(cell, ext[k])
    i, j = _grid_kernel(lo, hi, max(cell, 1e-12))
    return True, i, j


@njit(cache=True)
def _grid_kernel(lo, hi, cell):  # type: ignore[no-untyped-def]  # pragma: no cover
    """:func:`grid_pairs` when every box fits a cell of size ``cell``: sorted pairs.

    Each box is hashed into the cells from its lower corner's cell, at most two
    per axis.  A pair is reported once, in the first cell the two share (the
    cell of the larger lower corner on each axis), so no pair needs removing
    twice; the entries are grouped by cell with a counting sort when the grid
    has few cells, else with a stable sort of the cell keys.
    """
    n = lo.shape[0]
    c0 = np.empty((n, 3), dtype=np.int64)
    c1 = np.empty((n, 3), dtype=np.int64)
    for k in range(n):
        for d in range(3):
            c0[k, d] = np.int64(np.floor(lo[k, d] / cell))
            c1[k, d] = np.int64(np.floor(hi[k, d] / cell))
    base = np.empty(3, dtype=np.int64)
    dims = np.empty(3, dtype=np.int64)
    for d in range(3):
        base[d] = c0[:, d].min()
        dims[d] = c1[:, d].max() - base[d] + 2
    for k in range(n):
        for d in range(3):
            c0[k, d] -= base[d]
            c1[k, d] -= base[d]
    # every cell a box covers (at most 2 x 2 x 2), hashed
    key = np.empty(8 * n, dtype=np.int64)
    owner = np.empty(8 * n, dtype=np.int64)
    e = 0
    for k in range(n):
        for a in range(2):
            x = c0[k, 0] + a
            if x > c1[k, 0]:
                continue
            for b in range(2):
                y = c0[k, 1] + b
                if y > c1[k, 1]:
                    continue
                for c in range(2):
                    z = c0[k, 2] + c
                    if z > c1[k, 2]:
                        continue
                    key[e] = (x * dims[1] + y) * dims[2] + z
                    owner[e] = k
                    e += 1
    # group the entries by cell
    cells = float(dims[0]) * float(dims[1]) * float(dims[2])
    if cells <= 4.0 * e + 1024.0:
        ncell = dims[0] * dims[1] * dims[2]
        first = np.zeros(ncell + 1, dtype=np.int64)
        for p in range(e):
            first[key[p] + 1] += 1
        for q in range(ncell):
            first[q + 1] += first[q]
        fill = first[:ncell].copy()
        skey = np.empty(e, dtype=np.int64)
        sowner = np.empty(e, dtype=np.int64)
        for p in range(e):
            slot = fill[key[p]]
            fill[key[p]] += 1
            skey[slot] = key[p]
            sowner[slot] = owner[p]
        key, owner = skey, sowner
    else:
        order = np.argsort(key[:e], kind="mergesort")
        key, owner = key[order], owner[order]
    # boxes sharing a cell: the overlapping ones, as keys i n + j (i < j)
    total = 0
    start = 0
    while start < e:
        end = start + 1
        while end < e and key[end] == key[start]:
            end += 1
        total += (end - start) * (end - start - 1) // 2
        start = end
    found = np.empty(total, dtype=np.int64)
    f = 0
    start = 0
    while start < e:
        end = start + 1
        while end < e and key[end] == key[start]:
            end += 1
        here = key[start]
        for p in range(start, end):
            for q in range(p + 1, end):
                i, j = min(owner[p], owner[q]), max(owner[p], owner[q])
                if i == j:
                    continue
                # the first shared cell: the larger lower-corner cell on each axis
                first_shared = (max(c0[i, 0], c0[j, 0]) * dims[1] + max(c0[i, 1], c0[j, 1])) * dims[
                    2
                ] + max(c0[i, 2], c0[j, 2])
                if first_shared != here:
                    continue
                hit = True
                for d in range(3):
                    if lo[i, d] > hi[j, d] or lo[j, d] > hi[i, d]:
                        hit = False
                        break
                if hit:
                    found[f] = i * n + j
                    f += 1
        start = end
    pairs = np.sort(found[:f])
    return pairs // n, pairs % n


def brute_force_pairs(lo: Array, hi: Array) -> tuple[IntArray, IntArray]:
    """Reference ``O(n^2)`` version of :func:`sweep_and_prune` (for tests)."""
    n = lo.shape[0]
    i, j = np.triu_indices(n, k=1)
    keep = np.all((lo[i] <= hi[j]) & (lo[j] <= hi[i]), axis=1)
    return i[keep].astype(np.int64), j[keep].astype(np.int64)
