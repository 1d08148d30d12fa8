"""Broad phase: sweep-and-prune on axis-aligned boxes, vectorized.

The boxes are sorted by their lower bound along the axis on which their
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


def brute_force_pairs(lo: Array, hi: Array) -> tuple[IntArray, IntArray]:
    """Reference ``O(n^2)`` version of :func:`sweep_and_prune` (for tests)."""
    n = lo.shape[0]
    i, j = np.triu_indices(n, k=1)
    keep = np.all((lo[i] <= hi[j]) & (lo[j] <= hi[i]), axis=1)
    return i[keep].astype(np.int64), j[keep].astype(np.int64)
