"""Principal pivoting on the mixed LCP of a QP, with LCP columns formed on demand.

A QP with SPD (or KKT-nonsingular) cost ``P`` and rows ``l <= A x <= u`` is the
mixed LCP of ArtiSynth notes §0.7

.. math::

    P x - G^T \\lambda - N^T z = -q,\\qquad G x = g,\\qquad
    0 \\le z \\perp w = N x - n \\ge 0,

with ``G`` the equality rows (``l == u``) and ``N`` the one-sided inequality
rows (a lower bound ``A_i x >= l_i`` as it is, an upper bound as
``-A_i x >= -u_i``).  Eliminating ``(x, lambda)`` through the KKT matrix
``K = [[P, -G^T], [G, 0]]`` gives the regular LCP

.. math::

    w = \\bar N K^{-1} \\bar N^T z + \\bar N K^{-1} b - n,\\qquad
    \\bar N = (N\\; 0),\\; b = (-q, g)

(§0.7).  Its matrix ``W = N̄ K^{-1} N̄^T`` is symmetric positive semi-definite
(the upper-left block of ``K^{-1}`` is the constrained inverse mass), and is
never formed: column ``j`` costs one solve with the factorised ``K`` and is
computed the first time ``z_j`` enters the basis (§0.8, on-demand pivoting),
so a step whose active set is small costs few solves whatever the number of
rows.

The pivoting is the symmetric principal pivoting method of Cottle and Dantzig
(finite for positive semi-definite matrices): with the active set ``a`` (rows
with ``z > 0`` and ``w = 0``) kept solved, ``W_aa z_a = -q_a``, a row ``r``
with ``w_r < 0`` drives ``z_r`` up while ``w_a`` stays zero; the step ends
when ``w_r`` reaches zero (``r`` joins the active set) or when an active
``z_i`` reaches zero first (``i`` leaves; ``r`` keeps driving).  Each active
set's ``W_aa`` is nonsingular by construction, also for redundant contacts
whose full ``W`` is singular.  No driving step that is blocked by nothing
means the LCP is infeasible (reported as ``infeasible``).

The multipliers returned carry the OSQP sign (``P x + q + A^T y = 0``):
``y = -lambda`` on equality rows, ``-z`` on lower-bound rows and ``+z`` on
upper-bound rows.  ``iterations`` counts pivots; the message gives the number
of KKT solves (columns formed) beside the number of rows.
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from solvers.backends.base import Backend, SolveOptions
from solvers.problems import QP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance

Vec = NDArray[np.float64]


class _Columns:
    """Columns of ``W = N̄ K^{-1} N̄^T`` and of ``K^{-1} N̄^T``, formed on first use."""

    def __init__(self, lu: spla.SuperLU, N: sp.csr_matrix, n: int, size: int) -> None:
        self.lu, self.N, self.n, self.size = lu, N, n, size
        self.NT = sp.csc_matrix(N.T)
        self.W: dict[int, Vec] = {}
        self.sol: dict[int, Vec] = {}

    def __call__(self, j: int) -> Vec:
        col = self.W.get(j)
        if col is None:
            rhs = np.zeros(self.size)
            rhs[: self.n] = self.NT[:, j].toarray().ravel()
            sol = self.lu.solve(rhs)
            col = self.N @ sol[: self.n]
            self.W[j], self.sol[j] = col, sol
        return col

    def matrix(self, rows: list[int], cols: list[int]) -> NDArray[np.float64]:
        if not rows or not cols:
            return np.zeros((len(rows), len(cols)))
        return np.column_stack([self(j)[rows] for j in cols])


def _pivot(cols: _Columns, q: Vec, tol: float, max_iter: int) -> tuple[str, str, int, Vec]:
    """Symmetric principal pivoting (module docstring): ``(status, message, pivots, z)``."""
    m = q.size
    z = np.zeros(m)
    active: list[int] = []
    pivots = 0

    def residual() -> Vec:
        w = q.copy()
        for j in active:
            w += cols(j) * z[j]
        return w

    def driving_w(w: Vec, r: int, zr: float) -> float:
        return float(w[r] + cols(r)[r] * zr) if zr else float(w[r])

    while pivots < max_iter:
        w = residual()
        free = np.ones(m, dtype=bool)
        free[active] = False
        candidates = np.flatnonzero(free & (w < -tol))
        if candidates.size == 0:
            return "optimal", f"ppivot: solved after {pivots} pivots", pivots, z
        r = int(candidates[np.argmin(w[candidates])])  # most violated row drives
        while pivots < max_iter:
            pivots += 1
            col_r = cols(r)
            W_aa = cols.matrix(active, active)
            W_ar = col_r[active]
            d = -np.linalg.solve(W_aa, W_ar) if active else np.zeros(0)
            s = float(col_r[r] + W_ar @ d)
            w_r = float(q[r] + sum(cols(j)[r] * z[j] for j in active) + col_r[r] * z[r])
            t_r = -w_r / s if s > 1e-14 * max(1.0, abs(float(col_r[r]))) else np.inf
            t_block, leave = np.inf, -1
            for k, i in enumerate(active):  # ascending index order breaks ties (Bland)
                if d[k] < -1e-14:
                    t = z[i] / -d[k]
                    if t < t_block:
                        t_block, leave = t, k
            if not np.isfinite(t_r) and leave < 0:
                return (
                    "infeasible",
                    f"ppivot: row {r} cannot be satisfied (no blocking variable): the "
                    "constraints are infeasible",
                    pivots,
                    np.full(m, np.nan),
                )
            t = min(t_r, t_block)
            for k, i in enumerate(active):
                z[i] = max(z[i] + t * d[k], 0.0)
            z[r] += t
            if t_r <= t_block:
                active.append(r)
                active.sort()
                # re-solve the active block from the data: no drift over many pivots
                z_a = np.linalg.solve(cols.matrix(active, active), -q[active])
                z[active] = np.maximum(z_a, 0.0)
                break
            z[active[leave]] = 0.0
            del active[leave]
    return "max_iterations", f"ppivot: pivot cap {max_iter} reached", pivots, z


class PrincipalPivotingBackend(Backend):
    """On-demand principal pivoting on a QP's mixed LCP (ArtiSynth notes §0.7–0.8)."""

    name = "ppivot"
    description = (
        "principal pivoting on the QP's mixed LCP, LCP columns formed on demand by KKT solves"
    )
    kind = "pivoting"
    accepts_qp = True
    requires_definite = True
    tolerance = Tolerance(1e-9)

    def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
        t0 = time.perf_counter()
        n = qp.n
        A = sp.csr_matrix(qp.A)
        eq = np.flatnonzero(np.isfinite(qp.l) & (qp.l == qp.u))
        low = np.flatnonzero(np.isfinite(qp.l) & (qp.l != qp.u))
        up = np.flatnonzero(np.isfinite(qp.u) & (qp.l != qp.u))
        G = A[eq]
        N = sp.vstack([A[low], -A[up]], format="csr")
        n_vec = np.concatenate([qp.l[low], -qp.u[up]])
        K = sp.bmat([[sp.csc_matrix(qp.P), -G.T], [G, None]], format="csc")
        try:
            lu = spla.splu(K)
        except RuntimeError as err:
            return RawSolution(
                np.full(n, np.nan),
                np.full(qp.m, np.nan),
                "numerical_error",
                f"ppivot: the KKT matrix [[P, -G'], [G, 0]] is singular ({err}); P must be "
                "positive definite on the null space of the equality rows, which must be "
                "independent",
            )
        base = lu.solve(np.concatenate([-qp.q, qp.l[eq]]))
        cols = _Columns(lu, N, n, K.shape[0])
        q_lcp = N @ base[:n] - n_vec
        t1 = time.perf_counter()
        cap = opts.max_iter if opts.max_iter is not None else 10 * max(N.shape[0], 10)
        status, message, pivots, z = _pivot(cols, q_lcp, opts.tol, cap)
        t2 = time.perf_counter()
        if not np.all(np.isfinite(z)):
            return RawSolution(np.full(n, np.nan), None, status, message, pivots, t1 - t0, t2 - t1)
        sol = base.copy()
        for j, col in cols.sol.items():
            if z[j] != 0.0:
                sol += z[j] * col
        y = np.zeros(qp.m)
        y[eq] = -sol[n:]
        y[low] = -z[: low.size]
        y[up] += z[low.size :]
        message += f"; {len(cols.W)} of {N.shape[0]} LCP columns formed"
        return RawSolution(sol[:n], y, status, message, pivots, t1 - t0, t2 - t1)
