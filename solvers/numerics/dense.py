"""Cholesky factor and solve of a small dense symmetric positive definite matrix (numba).

Plain loops in a fixed order (column by column for the factor, forward then back
substitution for the solve), so every kernel that factors a small matrix this way
gets the same numbers: the proximal ADMM's dense ``W + σ I``
(:mod:`solvers.backends.fc_padmm`), the wide-cone local solve
(:mod:`solvers.numerics.fc_wide`) and the forward-dynamics derivatives of
:mod:`contactlab.reduced._derivative_kernels`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = None

Mat = NDArray[np.float64]
Vec = NDArray[np.float64]


@njit(cache=True)
def cholesky(M: Mat, L: Mat) -> bool:
    """The lower factor ``L L' = M`` into the lower triangle of ``L`` (its upper triangle is
    left as it is; ``L`` may be ``M`` itself: the factor then overwrites ``M``'s lower
    triangle); ``False`` when a pivot is not positive (``M`` not positive definite)."""
    n = M.shape[0]
    for j in range(n):
        s = M[j, j]
        for k in range(j):
            s -= L[j, k] * L[j, k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        L[j, j] = d
        for i in range(j + 1, n):
            s = M[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    return True


@njit(cache=True)
def cholesky_solve(L: Mat, b: Vec, out: Vec) -> None:
    """``out = (L L')^{-1} b`` from the lower factor ``L`` (:func:`cholesky`): ``L y = b``,
    then ``L' out = y``; ``out`` may be ``b`` itself."""
    n = b.shape[0]
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * out[k]
        out[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = out[i]
        for k in range(i + 1, n):
            s -= L[k, i] * out[k]
        out[i] = s / L[i, i]
