"""Lemke's complementary pivoting for the standard LCP ``0 <= z ⟂ w = Mz + q >= 0``.

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
from numpy.typing import NDArray
from scipy.linalg import lu_factor, lu_solve
from scipy.linalg.blas import dger

from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.problems import LCP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance

_MAX_DENSE = 3000
#: Smallest pivot entry among tied rows, relative to the largest tied entry.
_STABLE = 1e-6
#: A chosen pivot entry below this fraction of its column's largest entry is checked on a
#: tableau re-solved from the data before it is used.
_SUSPECT = 1e-6
#: Fewest pivots between two periodic re-solves of the tableau; the walk uses ``max(32, n)``:
#: a re-solve costs about ``3 n^3`` flops, ``n`` rank-one updates about ``4 n^3``, so the
#: periodic re-solves at most double the cost of a long walk.
_REFRESH_EVERY = 32
#: Re-solve once ``|B^-1|`` has fallen this many times below its peak since the last
#: re-solve: the updates carry the peak's rounding, a fresh solve only the present basis's.
_RECOVERED = 1e3


def _clamp(
    A: NDArray[np.float64],
    basis: NDArray[np.int64],
    b: NDArray[np.float64],
    q_eff: NDArray[np.float64],
    zero_tol: float,
    clamp_all: bool = False,
) -> None:
    """Set negative basic values to zero (those ``>= -zero_tol`` unless ``clamp_all``).

    The walk then follows the exact path of a perturbed right-hand side:
    ``q_eff`` is updated in place so that ``B b = q_eff`` still holds.
    """
    neg = (b < 0.0) if clamp_all else (b < 0.0) & (b >= -zero_tol)
    if neg.any():
        q_eff -= A[:, basis[neg]] @ b[neg]
        b[neg] = 0.0


def _refresh(
    A: NDArray[np.float64],
    basis: NDArray[np.int64],
    q_eff: NDArray[np.float64],
    T: NDArray[np.float64],
    b: NDArray[np.float64],
) -> bool:
    """Re-solve ``T = B^-1 A`` and ``b = B^-1 q_eff`` from the data (LU of the basis).

    Returns ``False`` (tableau untouched) when the basis is singular to working precision.
    """
    lu, perm = lu_factor(A[:, basis], check_finite=False)
    d = np.abs(np.diag(lu))
    if not np.all(np.isfinite(lu)) or d.min() <= 1e-14 * d.max():
        return False
    T[:] = lu_solve((lu, perm), A, check_finite=False)
    b[:] = lu_solve((lu, perm), q_eff, check_finite=False)
    return True


def _lexmin_row(
    b: NDArray[np.float64],
    Binv: NDArray[np.float64],
    col: NDArray[np.float64],
    rows: NDArray[np.int64],
    zero_tol: float,
    prefer: int = -1,
) -> int:
    """Row among ``rows`` minimising ``[b_i, Binv_i] / col_i`` lexicographically.

    The first key uses Harris's two-pass bound: ``theta_max = min_j (b_j +
    zero_tol) / col_j`` is the largest step that keeps every basic value
    ``>= -zero_tol``, and the rows with ``b_i / col_i <= theta_max`` tie.
    The later keys (rows of ``B^-1``) tie within ``1e-12`` relative.
    """
    ratio = b[rows] / col[rows]
    theta_max = float(np.min((b[rows] + zero_tol) / col[rows]))
    cand = rows[ratio <= theta_max]
    if cand.size == 0:  # theta_max bounds the minimum ratio; rounding aside
        cand = rows[[int(np.argmin(ratio))]]
    # Harris's stability rule: a tie with a pivot entry a million times smaller than
    # another tied row's is rounding of an exact zero (pivoting on it would lose six
    # digits), not a candidate.
    cand = cand[col[cand] >= _STABLE * col[cand].max()]
    if prefer in cand:  # z0's row ties: let z0 leave, which ends the walk at a solution
        return prefer
    for j in range(Binv.shape[1]):
        if cand.size == 1:
            break
        key = Binv[cand, j] / col[cand]
        best = key.min()
        cand = cand[key <= best + 1e-12 * max(1.0, abs(best))]
    return int(cand[0])


def _lcp_residual(M: NDArray[np.float64], q: NDArray[np.float64], z: NDArray[np.float64]) -> float:
    """``max_i |min(z_i, w_i)|`` with ``w = M z + q`` (natural-map residual)."""
    return float(np.max(np.abs(np.minimum(z, M @ z + q)), initial=0.0))


def _refine(
    M: NDArray[np.float64], q: NDArray[np.float64], basis: NDArray[np.int64]
) -> NDArray[np.float64] | None:
    """``z`` from the final complementary basis, solved from the original data."""
    n = q.size
    cols = np.zeros((n, n))
    is_w = basis < n
    cols[basis[is_w], np.flatnonzero(is_w)] = 1.0
    cols[:, ~is_w] = -M[:, basis[~is_w] - n]
    try:
        xb = np.linalg.solve(cols, q)
    except np.linalg.LinAlgError:
        return None
    x = np.zeros(2 * n)
    x[basis] = xb
    z = np.maximum(x[n:], 0.0)
    return z if np.all(np.isfinite(z)) else None


class LemkeBackend(Backend):
    """Lemke's method with lexicographic pivoting (dense, exact reference for small LCPs)."""

    name = "lemke"
    description = "Lemke complementary pivoting, lexicographic (standard/mixed LCP, dense)"
    kind = "pivoting"
    accepts_lcp = True
    supports_box_lcp = False
    supports_zero_diagonal = True
    tolerance = Tolerance(1e-9)

    def solve_lcp(self, lcp: LCP, opts: SolveOptions) -> RawSolution:
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
        M = lcp.M.toarray()
        t1 = time.perf_counter()
        ladder = [zero_rtol]
        if restarts:
            ladder += [r for r in (10 * zero_rtol, zero_rtol / 10, 100 * zero_rtol) if r < 1e-3]
        ladder = list(dict.fromkeys(ladder))  # zero_rtol = 0: a single walk
        accept = self.tolerance.accuracy * max(1.0, float(np.abs(q).max()))
        total = 0
        best: tuple[float, str, str, NDArray[np.float64]] | None = None
        for attempt, rtol in enumerate(ladder):
            status, message, it, z = _walk(M, q, rtol, pivot_tol, max_iter, accept)
            total += it
            if attempt:
                message += f" (restart {attempt} with zero_rtol = {rtol:g})"
            if status == "optimal":
                res = _lcp_residual(M, q, z)
                if best is None or res < best[0]:
                    best = (res, status, message, z)
                if res <= accept:
                    break
            elif status != "ray_termination":
                break  # the pivot cap: restarting would exceed it
        if best is not None:
            _, status, message, z = best
        t2 = time.perf_counter()
        return RawSolution(z, None, status, message, total, t1 - t0, t2 - t1)


def _walk(
    M: NDArray[np.float64],
    q: NDArray[np.float64],
    zero_rtol: float,
    pivot_tol: float,
    max_iter: int,
    ray_tol: float = 0.0,
) -> tuple[str, str, int, NDArray[np.float64]]:
    """One complementary-pivoting walk: ``(status, message, pivots, z)``.

    A secondary ray met with ``z0 <= ray_tol`` ends the walk at the current point,
    which solves the LCP to ``z0`` (``w = Mz + q + z0``).
    """
    n = q.size
    q_scale = float(np.abs(q).max())
    # Columns: w (0..n-1), z (n..2n-1), z0 (2n).  Tableau T = B^-1 A with A = [I, -M, -1],
    # rhs b = B^-1 q_eff, where q_eff is q plus the rounding clamps made so far.
    A = np.hstack([np.eye(n), -M, -np.ones((n, 1))])
    T = A.copy()
    b = q.copy()
    q_eff = q.copy()
    basis = np.arange(n)
    entering = 2 * n
    zero_tol = zero_rtol * q_scale
    # First pivot: z0 enters at the lexicographically smallest row [q_i, B^-1_i].
    r = _lexmin_row(b, T[:, :n], np.ones(n), np.arange(n), zero_tol)
    z0_row = r
    it = since_refresh = refreshes = 0
    peak = 1.0  # largest |B^-1| entry since the last re-solve
    refresh_every = max(_REFRESH_EVERY, n)
    status, message = "max_iterations", f"lemke: pivot cap {max_iter} reached"
    while it < max_iter:
        it += 1
        since_refresh += 1
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
        zero_tol = zero_rtol * max(q_scale, float(np.abs(b).max()))
        _clamp(A, basis, b, q_eff, zero_tol)
        binv = float(np.abs(T[:, :n]).max())
        peak = max(peak, binv)
        if leaving == 2 * n:
            status, message = "optimal", f"lemke: z0 left the basis after {it} pivots"
            break
        if entering == 2 * n:
            z0_row = r
        entering = leaving + n if leaving < n else leaving - n
        if b[z0_row] <= zero_tol:
            # z0 is basic at a rounding-level value: the current complementary point
            # solves the LCP with w = Mz + q >= -z0 >= -zero_tol; no further pivot needed.
            status = "optimal"
            message = f"lemke: z0 reached 0 (degenerate) after {it} pivots"
            break
        for fresh in (False, True):
            if fresh:
                if since_refresh == 0 or not _refresh(A, basis, q_eff, T, b):
                    break
                since_refresh = 0
                refreshes += 1
                peak = binv = float(np.abs(T[:, :n]).max())
                zero_tol = zero_rtol * max(q_scale, float(np.abs(b).max()))
                _clamp(A, basis, b, q_eff, zero_tol, clamp_all=True)
            col = T[:, entering]
            scale = max(float(np.abs(col).max()), 1e-300)
            rows = np.flatnonzero(col > pivot_tol * scale)
            r = -1 if rows.size == 0 else _lexmin_row(b, T[:, :n], col, rows, zero_tol, z0_row)
            # A ray, a small pivot entry or a long run of updates: re-solve the tableau
            # from the data before trusting the choice (see the module docstring).
            if (
                r >= 0
                and col[r] >= _SUSPECT * scale
                and since_refresh < refresh_every
                and peak <= _RECOVERED * binv
            ):
                break
        if r < 0:
            if b[z0_row] <= ray_tol:
                status = "optimal"
                message = (
                    f"lemke: secondary ray after {it} pivots with z0 = {b[z0_row]:.1e}, "
                    "within the tolerance: the current point"
                )
            else:
                status = "ray_termination"
                message = f"lemke: secondary ray after {it} pivots (no solution found)"
            break
    if refreshes:
        message += f"; tableau re-solved from the data {refreshes} times"
    x = np.zeros(2 * n + 1)
    x[basis] = b
    z = x[n : 2 * n]
    if status == "ray_termination":
        z = np.full(n, np.nan)
    elif status == "optimal":
        z = np.maximum(z, 0.0)
        finals = [basis]
        if basis[z0_row] == 2 * n:  # z0 stayed basic at 0: either of the missing pair replaces it
            finals = [basis.copy(), basis.copy()]
            finals[0][z0_row], finals[1][z0_row] = entering, leaving
        best = _lcp_residual(M, q, z)
        for final in finals:
            refined = _refine(M, q, final)
            if refined is not None and (res := _lcp_residual(M, q, refined)) < best:
                z, best = refined, res
                if "re-solved" not in message:
                    message += " (basic values re-solved from the data)"
    return status, message, it, z
