"""Products of a CSR matrix given by its arrays, compiled: ``A x`` and ``A' x``, and the
search of a sorted index range.

The interior point (:mod:`solvers.backends.fc_ipm`), proximal ADMM
(:mod:`solvers.backends.fc_padmm`) and the IPM backend's Newton steps keep their
sparse matrices as CSR arrays ``(indptr, indices, data)`` inside compiled loops;
these are the two products they share.  :func:`find_sorted` finds an entry among a
row's (or column's) sorted indices: the block Cholesky's and the IPM's patterns
(:mod:`solvers.backends.block_cholesky`, :mod:`solvers.backends.ipm_patterns`) and the
symmetry test of :mod:`solvers.numerics.fc_kernels`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]


@njit(cache=True)
def find_sorted(a: IVec, lo: int, hi: int, x: int) -> int:
    """Position of ``x`` in the sorted ``a[lo:hi]`` (where it is, or would be inserted)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True)
def csr_mul(indptr: IVec, indices: IVec, data: Vec, x: Vec, out: Vec) -> None:
    """``out = A x``."""
    for i in range(indptr.shape[0] - 1):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        out[i] = acc


@njit(cache=True)
def csr_tmul(indptr: IVec, indices: IVec, data: Vec, x: Vec, out: Vec) -> None:
    """``out = A' x``."""
    out[:] = 0.0
    for i in range(indptr.shape[0] - 1):
        xi = x[i]
        for k in range(indptr[i], indptr[i + 1]):
            out[indices[k]] += data[k] * xi
