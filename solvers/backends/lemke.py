"""Lemke's complementary pivoting for the standard LCP ``0 <= z ⟂ w = Mz + q >= 0``.

Dense tableau on ``I w - M z - d z0 = q`` with covering vector ``d = 1`` and
the lexicographic minimum-ratio rule (ties broken by the rows of ``B^-1``),
which rules out cycling.  The method ends when ``z0`` leaves the basis (a
solution) or when the entering column has no positive entry (a secondary ray:
status ``ray_termination``, no solution found).  For P-matrices, and for
positive semidefinite ``M`` with a feasible LCP, Lemke's method always finds a
solution.  Mixed and box LCPs are reduced to standard form by the
layer (``mixed_lcp_to_lcp``, ``box_lcp_to_standard``).

Settings: ``pivot_tol`` (default ``1e-12``, relative to the column's largest
entry).  ``max_iter`` caps pivots (default ``50 n``).
"""

from __future__ import annotations

import time

import numpy as np
from numpy.typing import NDArray
from scipy.linalg.blas import dger

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.problems import LCP
from solvers.result import RawSolution

_MAX_DENSE = 3000


def _lexmin_row(
    b: NDArray[np.float64],
    Binv: NDArray[np.float64],
    col: NDArray[np.float64],
    rows: NDArray[np.int64],
) -> int:
    """Row among ``rows`` minimising ``[b_i, Binv_i] / col_i`` lexicographically."""
    cand = rows
    keys = [b] + [Binv[:, j] for j in range(Binv.shape[1])]
    for key in keys:
        ratio = key[cand] / col[cand]
        best = ratio.min()
        tol = 1e-12 * max(1.0, abs(best))
        cand = cand[ratio <= best + tol]
        if cand.size == 1:
            break
    return int(cand[0])


class LemkeBackend(Backend):
    """Lemke's method with lexicographic pivoting (dense, exact reference for small LCPs)."""

    name = "lemke"
    description = "Lemke complementary pivoting, lexicographic (standard/mixed LCP, dense)"
    kind = "pivoting"
    accepts_lcp = True
    supports_box_lcp = False
    tolerance = 1e-9

    def solve_lcp(self, lcp: LCP, opts: SolveOptions) -> RawSolution:
        settings = dict(opts.settings)
        pivot_tol = float(settings.pop("pivot_tol", 1e-12))
        if settings:
            raise ProblemError("backend_settings", f"lemke does not know {sorted(settings)}")
        n = lcp.n
        if n > _MAX_DENSE:
            raise IncompatibleProblem(
                f"lemke works on dense tableaux and is meant for small "
                f"problems (n <= {_MAX_DENSE}, got {n}); use 'pgs' or a QP "
                "backend"
            )
        max_iter = 50 * max(n, 1) if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        q = lcp.q.copy()
        if np.all(q >= 0):
            return RawSolution(
                np.zeros(n),
                None,
                "optimal",
                "lemke: q >= 0, z = 0",
                0,
                time.perf_counter() - t0,
                0.0,
            )
        # Columns: w (0..n-1), z (n..2n-1), z0 (2n).  Tableau T = B^-1 [I, -M, -1], rhs b = B^-1 q.
        T = np.hstack([np.eye(n), -lcp.M.toarray(), -np.ones((n, 1))])
        b = q.copy()
        basis = np.arange(n)
        t1 = time.perf_counter()
        entering = 2 * n
        # First pivot: z0 enters at the lexicographically smallest row [q_i, B^-1_i].
        r = _lexmin_row(b, T[:, :n], np.ones(n), np.arange(n))
        it = 0
        status, message = "max_iterations", f"lemke: pivot cap {max_iter} reached"
        while it < max_iter:
            it += 1
            piv = T[r, entering]
            T[r] /= piv
            b[r] /= piv
            col = T[:, entering].copy()
            col[r] = 0.0
            # In-place rank-1 update (BLAS dger on the Fortran view): no n x 2n temporary.
            dger(-1.0, T[r].copy(), col, a=T.T, overwrite_a=True)
            b -= col * b[r]
            leaving = basis[r]
            basis[r] = entering
            if leaving == 2 * n:
                status, message = "optimal", f"lemke: z0 left the basis after {it} pivots"
                break
            entering = leaving + n if leaving < n else leaving - n
            col = T[:, entering]
            scale = max(float(np.abs(col).max()), 1e-300)
            rows = np.flatnonzero(col > pivot_tol * scale)
            if rows.size == 0:
                status = "ray_termination"
                message = f"lemke: secondary ray after {it} pivots (no solution found)"
                break
            r = _lexmin_row(b, T[:, :n], col, rows)
        t2 = time.perf_counter()
        x = np.zeros(2 * n + 1)
        x[basis] = b
        z = x[n : 2 * n]
        if status == "ray_termination":
            z = np.full(n, np.nan)
        elif status == "optimal":
            z = np.maximum(z, 0.0)
        return RawSolution(z, None, status, message, it, t1 - t0, t2 - t1)
