"""The trusted sparse constructors build the matrices scipy's checked constructors build.

:mod:`contactlab.csr` skips scipy's checks for arrays the step's kernels produce in
canonical form; on such arrays the result must be the same matrix: class, shape,
index dtype (int32 when it fits, scipy's choice) and the same numbers, exactly.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from contactlab import csr as trusted


def _canonical(rng: np.random.Generator, rows: int, cols: int) -> sp.csr_matrix:
    dense = rng.standard_normal((rows, cols)) * (rng.random((rows, cols)) < 0.3)
    return sp.csr_matrix(dense)


def _same(a: sp.spmatrix, b: sp.spmatrix) -> None:
    assert type(a) is type(b) and a.shape == b.shape
    for name in ("indptr", "indices", "data"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y)
    assert a.maxprint == b.maxprint


def test_trusted_csr_and_csc_equal_scipys_constructor() -> None:
    rng = np.random.default_rng(3)
    for rows, cols in ((5, 7), (1, 30), (40, 3)):
        A = _canonical(rng, rows, cols)
        arrays = (A.data, A.indices.astype(np.int64), A.indptr.astype(np.int64))
        _same(trusted.csr(*arrays, (rows, cols)), sp.csr_matrix(arrays, shape=(rows, cols)))
        _same(trusted.csc(*arrays, (cols, rows)), sp.csc_matrix(arrays, shape=(cols, rows)))
        wide = trusted.csr(*arrays, (rows, cols), wide=True)
        assert wide.indices.dtype == np.int64 and (wide != A).nnz == 0


def test_trusted_empty_rows_equal_scipys() -> None:
    for n in (0, 6, 1200):
        _same(trusted.empty_csr(n), sp.csr_matrix((0, n)))
