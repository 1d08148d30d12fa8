"""Sparse matrices from arrays the caller vouches for, without scipy's checks.

``scipy.sparse.csr_matrix((data, indices, indptr), shape)`` inspects its arrays
on every call (index dtype from their contents, shape checks, ``prune``), about
25 µs of Python each; a step builds several.  The arrays of the step's rows
come from compiled kernels that produce them in canonical form, so the
constructors here set them directly.  The result is the matrix scipy's
constructor builds from the same arrays: the same class and shape, the same
values, and indices stored as int32 when the shape and the number of entries
fit (scipy's choice), else as int64.

The caller guarantees: ``indptr`` (rows + 1,) non-decreasing from 0 to
``data.size``, ``indices`` (data.size,) within the columns, both integer
arrays, ``data`` a float64 array.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray
from scipy.sparse._base import MAXPRINT

#: scipy's limit for int32 index arrays.
_INT32_MAX = np.iinfo(np.int32).max


def index_dtype(largest: int) -> type[np.signedinteger]:  # type: ignore[type-arg]
    """The index dtype scipy picks for a matrix whose shape and entry count are at most
    ``largest``: int32 when it fits, else int64 (for kernels that write indices)."""
    return np.int64 if largest > _INT32_MAX else np.int32


def _index(a: NDArray[np.integer], wide: bool) -> NDArray[np.integer]:
    """``a`` as int64 when ``wide``, else as int32 (no copy when it already is)."""
    return a.astype(np.int64 if wide else np.int32, copy=False)


def _fill(out, data, indices, indptr, shape, wide):  # type: ignore[no-untyped-def]
    if wide is None:
        wide = max(shape[0], shape[1], int(data.shape[0])) > _INT32_MAX
    out._shape = (int(shape[0]), int(shape[1]))
    out.maxprint = MAXPRINT
    out.data = data
    out.indices = _index(indices, wide)
    out.indptr = _index(indptr, wide)
    return out


def csr(
    data: NDArray[np.float64],
    indices: NDArray[np.integer],
    indptr: NDArray[np.integer],
    shape: tuple[int, int],
    wide: bool | None = None,
) -> sp.csr_matrix:
    """The CSR matrix of canonical arrays (module docstring), built without checks.

    ``wide``: int64 indices (``True``), int32 (``False``), or scipy's choice (``None``).
    """
    return _fill(sp.csr_matrix.__new__(sp.csr_matrix), data, indices, indptr, shape, wide)  # type: ignore[no-any-return]


def csc(
    data: NDArray[np.float64],
    indices: NDArray[np.integer],
    indptr: NDArray[np.integer],
    shape: tuple[int, int],
    wide: bool | None = None,
) -> sp.csc_matrix:
    """The CSC matrix of canonical arrays (module docstring), built without checks.

    ``wide``: int64 indices (``True``), int32 (``False``), or scipy's choice (``None``).
    """
    return _fill(sp.csc_matrix.__new__(sp.csc_matrix), data, indices, indptr, shape, wide)  # type: ignore[no-any-return]


def empty_csr(n: int) -> sp.csr_matrix:
    """The ``(0, n)`` CSR matrix ``scipy.sparse.csr_matrix((0, n))`` builds."""
    return csr(np.zeros(0), np.zeros(0, np.int32), np.zeros(1, np.int32), (0, n))
