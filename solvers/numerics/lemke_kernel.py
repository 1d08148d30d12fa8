"""Lemke's method for the standard LCP in compiled code: the one walk of the ``lemke`` backend.

:func:`lemke_lcp` is the walk of :class:`solvers.backends.lemke.LemkeBackend` (which calls
it) and of the compiled contact steps, over a dense matrix in one compiled call: the
tableau ``T = B^-1 [I, -M, -1]`` with the covering vector ``d = 1``, the lexicographic
minimum-ratio rule with Harris's bound on the basic values and Harris's stability filter
on the tied pivot entries, the clamp of basic values in ``[-zero_tol, 0)`` (carried into
the effective right-hand side ``q_eff``), the end at ``z0 <= zero_tol``, the re-solves of
the tableau from the data (before a pivot entry below ``1e-6`` of its column's largest,
before a ray, after ``|B^-1|`` has fallen 1e3 below its peak and every ``max(32, n)``
pivots; a basis whose LU has a pivot below ``1e-14`` of the largest is not re-solved), a
ray met with ``z0`` within the declared tolerance taken as the solution, the final basic
values re-solved from the data, and the restarts with ``zero_rtol`` times 10, 1/10 and
100 after a ray.  The backend's docstring gives the reasons and the measurements behind
each rule.

The rank-one updates of the tableau, the LU that judges whether a basis is singular
(partial pivoting, as LAPACK's ``getrf``) and the re-solves are loops (a re-solve's many
right-hand sides are solved on the factors that judged the basis, not handed to a
threaded LAPACK, whose threads on a busy machine cost many times the arithmetic).  The
function returns codes; the backend's message is built by :func:`message`.
"""

from __future__ import annotations

import numpy as np

from solvers.jit import njit

#: CPU seconds a cold compilation of this module's kernels takes (2-core 2026 machine;
#: ``None``: not measured), for the first-use message of :mod:`solvers.jit`.
COMPILE_SECONDS: float | None = 15.0

#: statuses of :func:`lemke_lcp`
OPTIMAL, MAX_ITERATIONS, RAY = 0, 1, 4
#: the solver layer's names of those statuses (the backend's ``RawSolution.status``)
STATUS_NAMES = {OPTIMAL: "optimal", MAX_ITERATIONS: "max_iterations", RAY: "ray_termination"}
#: how the walk that gave the answer ended
END_TRIVIAL, END_LEFT, END_ZERO, END_RAY_WITHIN, END_RAY, END_CAP = range(6)
#: entries of the ``info`` array of :func:`lemke_lcp`
I_STATUS, I_PIVOTS, I_WALK_PIVOTS, I_END, I_REFRESHES, I_RESTART, I_RTOL, I_Z0, I_REFINED = range(9)
N_INFO = 9

#: smallest pivot entry among tied rows, relative to the largest tied entry
STABLE = 1e-6
#: a chosen pivot entry below this fraction of its column's largest is checked on a
#: tableau re-solved from the data before it is used
SUSPECT = 1e-6
#: fewest pivots between two periodic re-solves; the walk uses ``max(32, n)``: a re-solve
#: costs about ``3 n^3`` flops, ``n`` rank-one updates about ``4 n^3``, so the periodic
#: re-solves at most double the cost of a long walk
REFRESH_EVERY = 32
#: re-solve once ``|B^-1|`` has fallen this many times below its peak since the last
#: re-solve: the updates carry the peak's rounding, a fresh solve only the present basis's
RECOVERED = 1e3
#: the backend's declared accuracy (``LemkeBackend.tolerance``)
ACCURACY = 1e-9


@njit(cache=True)
def _lexmin_row(b, T, col, rows, nrows, zero_tol, prefer, cand):  # noqa: ANN001, ANN202
    """Row among ``rows[:nrows]`` minimising ``[b_i, B^-1_i] / col_i`` lexicographically,
    with Harris's bound and stability filter; ``cand`` is work space."""
    n = b.shape[0]
    theta_max = np.inf
    for t in range(nrows):
        i = rows[t]
        theta_max = min(theta_max, (b[i] + zero_tol) / col[i])
    nc = 0
    for t in range(nrows):
        i = rows[t]
        if b[i] / col[i] <= theta_max:
            cand[nc] = i
            nc += 1
    if nc == 0:  # theta_max bounds the minimum ratio; rounding aside
        best = np.inf
        arg = rows[0]
        for t in range(nrows):
            i = rows[t]
            ratio = b[i] / col[i]
            if ratio < best:
                best, arg = ratio, i
        cand[0] = arg
        nc = 1
    top = 0.0
    for t in range(nc):
        top = max(top, col[cand[t]])
    kept = 0
    for t in range(nc):
        i = cand[t]
        if col[i] >= STABLE * top:
            cand[kept] = i
            kept += 1
    nc = kept
    for t in range(nc):
        if cand[t] == prefer:  # z0's row ties: z0 leaves, which ends the walk
            return prefer
    for j in range(n):
        if nc == 1:
            break
        best = np.inf
        for t in range(nc):
            i = cand[t]
            best = min(best, T[i, j] / col[i])
        bound = best + 1e-12 * max(1.0, abs(best))
        kept = 0
        for t in range(nc):
            i = cand[t]
            if T[i, j] / col[i] <= bound:
                cand[kept] = i
                kept += 1
        nc = kept
    return cand[0]


@njit(cache=True)
def _clamp(A, basis, b, q_eff, zero_tol, clamp_all):  # noqa: ANN001, ANN202
    """Set negative basic values to zero (those ``>= -zero_tol`` unless ``clamp_all``),
    keeping ``B b = q_eff``."""
    n = b.shape[0]
    for i in range(n):
        if b[i] < 0.0 and (clamp_all or b[i] >= -zero_tol):
            c = basis[i]
            for r in range(n):
                q_eff[r] -= A[r, c] * b[i]
            b[i] = 0.0


@njit(cache=True)
def _lu(a, perm):  # noqa: ANN001, ANN202
    """LU with partial pivoting of ``a`` in place (``perm`` the row swaps); returns the
    smallest and largest ``|U_ii|``."""
    n = a.shape[0]
    for k in range(n):
        p = k
        big = abs(a[k, k])
        for i in range(k + 1, n):
            if abs(a[i, k]) > big:
                big, p = abs(a[i, k]), i
        perm[k] = p
        if p != k:
            for j in range(n):
                a[k, j], a[p, j] = a[p, j], a[k, j]
        piv = a[k, k]
        if piv == 0.0:
            continue
        for i in range(k + 1, n):
            m = a[i, k] / piv
            a[i, k] = m
            if m != 0.0:
                for j in range(k + 1, n):
                    a[i, j] -= m * a[k, j]
    lo = np.inf
    hi = 0.0
    for k in range(n):
        d = abs(a[k, k])
        lo = min(lo, d)
        hi = max(hi, d)
    return lo, hi


@njit(cache=True)
def _lu_solve(lu, perm, x):  # noqa: ANN001, ANN202
    """Solve in place ``A X = x`` (``x`` (n, r)) with the factors of :func:`_lu`."""
    n = lu.shape[0]
    r = x.shape[1]
    for k in range(n):
        p = perm[k]
        if p != k:
            for j in range(r):
                x[k, j], x[p, j] = x[p, j], x[k, j]
    for i in range(n):
        for k in range(i):
            m = lu[i, k]
            if m != 0.0:
                for j in range(r):
                    x[i, j] -= m * x[k, j]
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            m = lu[i, k]
            if m != 0.0:
                for j in range(r):
                    x[i, j] -= m * x[k, j]
        d = lu[i, i]
        for j in range(r):
            x[i, j] /= d


@njit(cache=True)
def _refresh(A, basis, q_eff, T, b):  # noqa: ANN001, ANN202
    """Re-solve ``T = B^-1 A`` and ``b = B^-1 q_eff`` from the data; ``False`` (tableau
    untouched) when the basis is singular to working precision."""
    n = b.shape[0]
    lu = np.empty((n, n))
    for r in range(n):
        for i in range(n):
            lu[r, i] = A[r, basis[i]]
    perm = np.empty(n, dtype=np.int64)
    lo, hi = _lu(lu, perm)
    if not (np.all(np.isfinite(lu)) and lo > 1e-14 * hi):
        return False
    # the solves with many right-hand sides on the same factors, in place: no second
    # factorization, and no call into a threaded BLAS, whose threads on a busy machine
    # cost many times the arithmetic (a 315-row re-solve: 9 ms on one thread, 175 ms
    # with two at a load of 8)
    x = np.empty((n, A.shape[1] + 1))
    x[:, : A.shape[1]] = A
    x[:, A.shape[1]] = q_eff
    _lu_solve(lu, perm, x)
    if not np.all(np.isfinite(x)):
        return False
    T[:, :] = x[:, : A.shape[1]]
    b[:] = x[:, A.shape[1]]
    return True


@njit(cache=True)
def natural_residual(M, q, z):  # noqa: ANN001, ANN201
    """``max_i |min(z_i, (M z + q)_i)|`` (the backend's acceptance test)."""
    n = q.shape[0]
    worst = 0.0
    for i in range(n):
        w = q[i]
        for j in range(n):
            w += M[i, j] * z[j]
        worst = max(worst, abs(min(z[i], w)))
    return worst


@njit(cache=True)
def _refine(M, q, basis):  # noqa: ANN001, ANN202
    """``z`` from the final complementary basis, solved from the original data; an empty
    array when the basis matrix is singular or the solution not finite."""
    n = q.shape[0]
    cols = np.zeros((n, n))
    for i in range(n):
        c = basis[i]
        if c < n:
            cols[c, i] = 1.0
        else:
            for r in range(n):
                cols[r, i] = -M[r, c - n]
    perm = np.empty(n, dtype=np.int64)
    lo, _ = _lu(cols, perm)
    if not lo > 0.0:
        return np.empty(0)
    xb = np.empty((n, 1))
    xb[:, 0] = q
    _lu_solve(cols, perm, xb)
    x = np.zeros(2 * n)
    for i in range(n):
        x[basis[i]] = xb[i, 0]
    z = np.empty(n)
    for i in range(n):
        z[i] = max(x[n + i], 0.0)
    if not np.all(np.isfinite(z)):
        return np.empty(0)
    return z


@njit(cache=True)
def _walk(M, q, zero_rtol, pivot_tol, max_iter, ray_tol, out):  # noqa: ANN001, ANN202, PLR0912, PLR0915
    """One complementary-pivoting walk.  Returns ``(status, z, pivots)``; ``out`` receives
    the end (``END_*``), the re-solves, ``z0``'s value at the end and whether the final
    basic values were re-solved from the data.  A secondary ray met with ``z0 <= ray_tol``
    ends the walk at the current point, which solves the LCP to ``z0`` (``w = Mz + q + z0``)."""
    n = q.shape[0]
    q_scale = 0.0
    for i in range(n):
        q_scale = max(q_scale, abs(q[i]))
    # Columns: w (0..n-1), z (n..2n-1), z0 (2n).  Tableau T = B^-1 A with A = [I, -M, -1],
    # rhs b = B^-1 q_eff, where q_eff is q plus the rounding clamps made so far.
    w_cols = 2 * n + 1
    A = np.zeros((n, w_cols))
    for i in range(n):
        A[i, i] = 1.0
        for j in range(n):
            A[i, n + j] = -M[i, j]
        A[i, 2 * n] = -1.0
    T = A.copy()
    b = q.copy()
    q_eff = q.copy()
    basis = np.arange(n)
    entering = 2 * n
    zero_tol = zero_rtol * q_scale
    rows = np.arange(n)
    cand = np.empty(n, dtype=np.int64)
    col = np.ones(n)
    # first pivot: z0 enters at the lexicographically smallest row [q_i, B^-1_i]
    r = _lexmin_row(b, T, col, rows, n, zero_tol, -1, cand)
    z0_row = r
    it = 0
    since_refresh = 0
    refreshes = 0
    peak = 1.0  # largest |B^-1| entry since the last re-solve
    refresh_every = max(REFRESH_EVERY, n)
    status = MAX_ITERATIONS
    end = END_CAP
    leaving = 0
    trow = np.empty(w_cols)
    while it < max_iter:
        it += 1
        since_refresh += 1
        piv = T[r, entering]
        for j in range(w_cols):
            T[r, j] /= piv
        b[r] /= piv
        for i in range(n):
            col[i] = T[i, entering]
        col[r] = 0.0
        for j in range(w_cols):
            trow[j] = T[r, j]
        binv = 0.0
        for i in range(n):
            ci = col[i]
            if ci != 0.0:
                for j in range(w_cols):
                    T[i, j] -= ci * trow[j]
            for j in range(n):
                binv = max(binv, abs(T[i, j]))
        br = b[r]
        for i in range(n):
            b[i] -= col[i] * br
        leaving = basis[r]
        basis[r] = entering
        bmax = 0.0
        for i in range(n):
            bmax = max(bmax, abs(b[i]))
        zero_tol = zero_rtol * max(q_scale, bmax)
        _clamp(A, basis, b, q_eff, zero_tol, False)
        peak = max(peak, binv)
        if leaving == 2 * n:
            status, end = OPTIMAL, END_LEFT
            break
        if entering == 2 * n:
            z0_row = r
        entering = leaving + n if leaving < n else leaving - n
        if b[z0_row] <= zero_tol:
            # z0 is basic at a rounding-level value: the current complementary point
            # solves the LCP with w = Mz + q >= -z0 >= -zero_tol; no further pivot needed
            status, end = OPTIMAL, END_ZERO
            break
        scale = 1e-300
        for fresh in range(2):
            if fresh:
                if since_refresh == 0 or not _refresh(A, basis, q_eff, T, b):
                    break
                since_refresh = 0
                refreshes += 1
                binv = 0.0
                for i in range(n):
                    for j in range(n):
                        binv = max(binv, abs(T[i, j]))
                peak = binv
                bmax = 0.0
                for i in range(n):
                    bmax = max(bmax, abs(b[i]))
                zero_tol = zero_rtol * max(q_scale, bmax)
                _clamp(A, basis, b, q_eff, zero_tol, True)
            scale = 0.0
            for i in range(n):
                col[i] = T[i, entering]
                scale = max(scale, abs(col[i]))
            scale = max(scale, 1e-300)
            nrows = 0
            for i in range(n):
                if col[i] > pivot_tol * scale:
                    rows[nrows] = i
                    nrows += 1
            r = -1 if nrows == 0 else _lexmin_row(b, T, col, rows, nrows, zero_tol, z0_row, cand)
            # a ray, a small pivot entry or a long run of updates: re-solve the tableau
            # from the data before trusting the choice (the backend's docstring)
            if (
                r >= 0
                and col[r] >= SUSPECT * scale
                and since_refresh < refresh_every
                and peak <= RECOVERED * binv
            ):
                break
        if r < 0:
            if b[z0_row] <= ray_tol:
                status, end = OPTIMAL, END_RAY_WITHIN
            else:
                status, end = RAY, END_RAY
            break
    out[0] = end
    out[1] = refreshes
    out[2] = b[z0_row]
    out[3] = 0.0
    x = np.zeros(2 * n + 1)
    for i in range(n):
        x[basis[i]] = b[i]
    z = x[n : 2 * n].copy()
    if status == RAY:
        z[:] = np.nan
    elif status == OPTIMAL:
        for i in range(n):
            z[i] = max(z[i], 0.0)
        best = natural_residual(M, q, z)
        n_finals = 1
        finals = np.empty((2, n), dtype=np.int64)
        finals[0] = basis
        if basis[z0_row] == 2 * n:  # z0 stayed basic at 0: either of the missing pair
            n_finals = 2
            finals[1] = basis
            finals[0, z0_row] = entering
            finals[1, z0_row] = leaving
        for f in range(n_finals):
            refined = _refine(M, q, finals[f])
            if refined.shape[0] == n:
                res = natural_residual(M, q, refined)
                if res < best:
                    z, best = refined, res
                    out[3] = 1.0
    return status, z, it


@njit(cache=True)
def lemke_lcp(M, q, zero_rtol, pivot_tol, max_iter, restarts, z_out, info):  # noqa: ANN001, ANN201, PLR0913
    """Solve ``0 <= z ⟂ M z + q >= 0`` (``M`` dense (n, n)) by Lemke's method with the
    backend's rules and restarts (module docstring).  ``max_iter`` caps each walk's pivots.

    Writes ``z`` into ``z_out`` (n,) (NaN on a ray) and ``info`` (:data:`N_INFO`,): the
    entries ``I_*``: status, pivots of every walk, of the walk kept, its end, its re-solves
    of the tableau, the restart (0: the first walk) and its ``zero_rtol``, ``z0`` at the
    end, whether the final basic values were re-solved from the data.  (Outputs, not
    returned arrays: the kernel is called from Python and from the compiled step, and an
    array returned by a kernel that a cached caller has linked in could not be boxed.)
    """
    n = q.shape[0]
    info[:] = 0.0
    if np.all(q >= 0.0):
        info[I_STATUS] = OPTIMAL
        info[I_END] = END_TRIVIAL
        z_out[:] = 0.0
        return
    ladder = np.empty(4)
    ladder[0] = zero_rtol
    count = 1
    if restarts:
        for r in (10.0 * zero_rtol, zero_rtol / 10.0, 100.0 * zero_rtol):
            if r < 1e-3:
                seen = False
                for t in range(count):
                    if ladder[t] == r:
                        seen = True
                if not seen:
                    ladder[count] = r
                    count += 1
    q_scale = 0.0
    for i in range(n):
        q_scale = max(q_scale, abs(q[i]))
    accept = ACCURACY * max(1.0, q_scale)
    total = 0
    have_best = False
    best_res = np.inf
    best_z = np.zeros(n)
    best_out = np.zeros(4)
    best_attempt = 0
    best_it = 0
    out = np.zeros(4)
    last_status = RAY
    last_z = np.zeros(n)
    last_out = np.zeros(4)
    last_attempt = 0
    last_it = 0
    for attempt in range(count):
        status, z, it = _walk(M, q, ladder[attempt], pivot_tol, max_iter, accept, out)
        total += it
        last_status, last_z, last_attempt, last_it = status, z, attempt, it
        last_out[:] = out
        if status == OPTIMAL:
            res = natural_residual(M, q, z)
            if not have_best or res < best_res:
                have_best = True
                best_res, best_z, best_attempt, best_it = res, z, attempt, it
                best_out[:] = out
            if res <= accept:
                break
        elif status != RAY:
            break  # the pivot cap: restarting would exceed it
    if have_best:
        last_status, last_z, last_attempt, last_it = OPTIMAL, best_z, best_attempt, best_it
        last_out[:] = best_out
    info[I_STATUS] = last_status
    info[I_PIVOTS] = total
    info[I_WALK_PIVOTS] = last_it
    info[I_END] = last_out[0]
    info[I_REFRESHES] = last_out[1]
    info[I_RESTART] = last_attempt
    info[I_RTOL] = ladder[last_attempt]
    info[I_Z0] = last_out[2]
    info[I_REFINED] = last_out[3]
    z_out[:] = last_z


def solve_dense(
    M: np.ndarray,
    q: np.ndarray,
    zero_rtol: float = 1e-11,
    pivot_tol: float = 1e-12,
    max_iter: int | None = None,
    restarts: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`lemke_lcp` on ``(M, q)`` with the backend's defaults (``max_iter``: ``50 n``):
    ``(z, info)``."""
    q = np.ascontiguousarray(q, dtype=np.float64)
    z = np.empty(q.shape[0])
    info = np.empty(N_INFO)
    cap = 50 * max(q.shape[0], 1) if max_iter is None else int(max_iter)
    lemke_lcp(
        np.ascontiguousarray(M, dtype=np.float64), q, float(zero_rtol), float(pivot_tol), cap,
        bool(restarts), z, info,
    )  # fmt: skip
    return z, info


def message(info: np.ndarray) -> str:
    """The backend's message for the ``info`` of :func:`lemke_lcp`."""
    end = int(info[I_END])
    it = int(info[I_WALK_PIVOTS])
    if end == END_TRIVIAL:
        return "lemke: q >= 0, z = 0"
    text = {
        END_LEFT: f"lemke: z0 left the basis after {it} pivots",
        END_ZERO: f"lemke: z0 reached 0 (degenerate) after {it} pivots",
        END_RAY_WITHIN: (
            f"lemke: secondary ray after {it} pivots with z0 = {info[I_Z0]:.1e}, "
            "within the tolerance: the current point"
        ),
        END_RAY: f"lemke: secondary ray after {it} pivots (no solution found)",
        END_CAP: f"lemke: pivot cap {it} reached",
    }[end]
    if int(info[I_REFRESHES]):
        text += f"; tableau re-solved from the data {int(info[I_REFRESHES])} times"
    elif info[I_REFINED]:
        text += " (basic values re-solved from the data)"
    if int(info[I_RESTART]):
        text += f" (restart {int(info[I_RESTART])} with zero_rtol = {info[I_RTOL]:g})"
    return text


__all__ = [
    "COMPILE_SECONDS",
    "RAY",
    "STATUS_NAMES",
    "lemke_lcp",
    "message",
    "natural_residual",
    "solve_dense",
]
