"""Lemke's complementary pivoting for the standard LCP ``0 <= z ⟂ w = Mz + q >= 0``.

The walk is compiled: :func:`solvers.numerics.lemke_kernel.lemke_lcp`, the one
implementation of the rules below, which the compiled contact steps call too.  This
backend checks the settings, densifies ``M``, calls it and turns its codes into the
status and message.

Dense tableau on ``I w - M z - d z0 = q`` with covering vector ``d = 1`` and
the lexicographic minimum-ratio rule (ties broken by the rows of ``B^-1``),
which rules out cycling.  The method ends when ``z0`` leaves the basis (a
solution) or when the entering column has no positive entry (a secondary ray:
status ``ray_termination``, no solution found).  For P-matrices, and for
copositive-plus ``M`` with a feasible LCP, Lemke's method always finds a
solution.  Mixed and box LCPs are reduced to standard form by the
layer (``mixed_lcp_to_lcp``, ``box_lcp_to_standard``).

Floating point and degeneracy
-----------------------------
The theory assumes the basic values ``b = B^-1 q`` stay ``>= 0`` and that
ties in the ratio test are exact.  Contact problems are highly degenerate
(redundant contact points make ``N M^-1 N^T`` singular, the pyramid holds
``d`` and ``-d``, a body at rest leaves right-hand sides that are rounding
noise around zero), so ties are everywhere and they are never exact in
floating point.  Three rules keep the float method on the exact method's path:

- the rows that tie in the ratio test are those whose ratio ``b_i / col_i``
  is at most Harris's bound ``min_j (b_j + zero_tol) / col_j``: pivoting on
  any of them leaves every basic value ``>= -zero_tol`` (a tolerance on the
  basic values, not on the ratios), and the lexicographic rule chooses among
  them;
- a tied row whose pivot entry is below ``1e-6`` times the largest tied
  entry is dropped (Harris's stability rule): such an entry is the rounding
  of an exact zero, and pivoting on it makes the basis nearly singular;
- after each pivot, basic values in ``[-zero_tol, 0)`` are set to zero.

Without them a near tie picked the "wrong" row or a noise-sized pivot, a
basic value went negative by rounding, and the walk reached a secondary ray
on a solvable problem (a cube coming to rest under Stewart--Trinkle
friction; ``tests/solvers/test_lemke_regressions.py``).  ``zero_tol`` is
``zero_rtol`` (default ``1e-11``) times the largest of ``|q|`` and ``|b|``.

Ending when ``z0`` reaches zero.  Since ``w = M z + q + z0``, a complementary
basis in which ``z0`` is basic at value ``<= zero_tol`` already solves the
LCP to ``zero_tol``.  In a degenerate walk ``z0`` reaches 0 while another row
ties with its own; the lexicographic rule may pick the other, and the walk
then pivots on at zero step length.  In exact arithmetic it ends when ``z0``
finally leaves; in floating point those degenerate pivots ended on a
secondary ray (the stacked-cube and pile step LCPs of
``tests/solvers/test_lemke_regressions.py``: ``z0`` at 0, 2e-15 and 2e-14 at
the ray, in well-conditioned bases).  So ``z0``'s row is chosen whenever it
is in the tied set, and the walk stops as soon as ``z0``'s basic value is at
most ``zero_tol``; for the final re-solve, either variable of the
complementary pair then missing from the basis takes ``z0``'s place.  A ray
met while ``z0`` is still within the declared tolerance (below) ends the
walk the same way: the point reached solves the LCP to ``z0`` (a resting
mass-ratio stack: ``z0`` = 5.3e-13 against ``zero_tol`` = 5e-13).

Re-solving the tableau.  Each pivot updates ``B^-1`` by a rank-one change,
so the tableau carries the rounding of every basis on the way: after a run
of bases with condition number 1e12, an entry that is exactly zero for a
later basis of condition number 5e3 read 3e-8 and was pivoted on (the pile
step LCP at step 100).  The tableau and basic values are therefore re-solved
from the data (LU of the basis columns of ``[I, -M, -1]``) before a pivot
whose entry is below ``1e-6`` of its column's largest, before a ray is
declared, once ``max |B^-1|`` has fallen 1e3 below its peak since the last
re-solve (the updates still carry the peak's rounding, a fresh solve only
the present basis's) and every ``max(32, n)`` pivots.  The re-solve uses the effective
right-hand side ``q_eff``, ``q`` plus every rounding clamp made so far
(``B b = q_eff`` holds throughout), so it reproduces the walk's own problem;
negative basic values it reveals are clamped the same way.  The message
counts the re-solves.

When ``z0`` leaves, the basic values are recomputed from the original data
(one dense solve with the final basis), which removes the rounding the
pivots accumulated and the clamps; the recomputed point is kept when its LCP
residual is smaller.

A walk that ends on a secondary ray is restarted with ``zero_rtol`` times
10, 1/10 and 100 (setting ``restarts``, default on); the first solution
whose natural-map residual is within the declared tolerance (``1e-9`` times
``max(1, |q|)``) is returned, else the best solution found, else the ray.
The message names the restart used; ``iterations`` counts the pivots of
every walk.

Measured on Stewart--Trinkle step LCPs (k = 4) of 15 runs: ``box-pile``
with 4 cubes (seeds 0-3, 2 s) and 6 cubes (seeds 0-1, 1 s),
``mass-ratio-stack`` with ratios 10, 100, 1000 and 10,000 at h = 5 and 10
ms (2 s), ``box-stack`` with 3 cubes (2 s): all 4,800 steps are solved; 3
(ratio 10,000 at h = 10 ms) need a restart; 7 to 44 pivots per LCP on
average, at most 121.  Without the two rules above (ending at ``z0 = 0``,
re-solving the tableau) 12 of those runs stopped on a ray (after 2 to 192
steps), and 148 of the 1,603 LCPs they reached needed a restart.

Settings: ``pivot_tol`` (default ``1e-12``, relative to the entering
column's largest entry: smaller entries are not pivot candidates),
``zero_rtol`` (default ``1e-11``), ``restarts`` (default ``True``).
``max_iter`` caps the pivots of each walk (default ``50 n``).
"""

from __future__ import annotations

import time

import numpy as np

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.problems import LCP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance

_MAX_DENSE = 3000


class LemkeBackend(Backend):
    """Lemke's method with lexicographic pivoting (dense, exact reference for small LCPs)."""

    name = "lemke"
    description = "Lemke complementary pivoting, lexicographic (standard/mixed LCP, dense)"
    kind = "pivoting"
    required_modules = ("numba",)
    accepts_lcp = True
    supports_box_lcp = False
    supports_zero_diagonal = True
    tolerance = Tolerance(1e-9)

    def solve_lcp(self, lcp: LCP, opts: SolveOptions) -> RawSolution:
        # the compiled walk loads numba: imported on first use, as every backend's library
        from solvers.numerics import lemke_kernel as LK

        settings = dict(opts.settings)
        pivot_tol = float(settings.pop("pivot_tol", 1e-12))
        zero_rtol = float(settings.pop("zero_rtol", 1e-11))
        restarts = bool(settings.pop("restarts", True))
        if settings:
            raise ProblemError("backend_settings", f"lemke does not know {sorted(settings)}")
        if not (np.isfinite(zero_rtol) and 0.0 <= zero_rtol < 1e-3):
            raise ProblemError(
                "backend_settings", f"lemke zero_rtol must be in [0, 1e-3), got {zero_rtol}"
            )
        n = lcp.n
        if n > _MAX_DENSE:
            raise IncompatibleProblem(
                f"lemke works on dense tableaux and is meant for small "
                f"problems (n <= {_MAX_DENSE}, got {n}); use 'pgs' or a QP "
                "backend"
            )
        max_iter = 50 * max(n, 1) if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        q = np.ascontiguousarray(lcp.q, dtype=np.float64)
        if np.all(q >= 0):
            return RawSolution(
                np.zeros(n), None, "optimal", "lemke: q >= 0, z = 0", 0,
                time.perf_counter() - t0, 0.0,
            )  # fmt: skip
        M = np.ascontiguousarray(lcp.M.toarray(), dtype=np.float64)
        t1 = time.perf_counter()
        z, info = LK.solve_dense(M, q, zero_rtol, pivot_tol, max_iter, restarts)
        t2 = time.perf_counter()
        status = LK.STATUS_NAMES[int(info[LK.I_STATUS])]
        pivots = int(info[LK.I_PIVOTS])
        return RawSolution(z, None, status, LK.message(info), pivots, t1 - t0, t2 - t1)
