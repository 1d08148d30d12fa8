"""``padmm``: proximal ADMM on De Saxcé's law, with a spectral penalty rule (numba).

The Coulomb law in De Saxcé's form, ``K ∋ r ⟂ û ∈ K*`` with ``u = W r + q`` and
``û = u + s(u)``, ``s = (h(u_t), 0, 0)`` per contact, is solved directly, after
Carpentier, Le Lidec and Montaut (2024, "From compliant to rigid contact
simulation: a unified and efficient approach"): the splitting ``r = z``,
``z ∈ K``, of the problem ``min 1/2 r'Wr + (q + s)'r`` whose shift ``s`` is
updated from the current iterate at every iteration (no inner solve to a
tolerance), with a proximal term ``η/2 ||r - r_k||²`` that keeps the linear
system definite whatever the rank of ``W``.  One iteration, with ``σ = ρ + η``:

.. math::

    (W + σ I)\\, r_{k+1} = -(q + s_k) - y_k + ρ z_k + η r_k, \\qquad
    z_{k+1} = P_K(r_{k+1} + y_k / ρ), \\qquad
    y_{k+1} = y_k + ρ (r_{k+1} - z_{k+1}),

then ``u = W z_{k+1} + q`` and ``s_{k+1} = s(u)``.  At a fixed point ``r = z``,
``y = -û`` and ``z = P_K(z - û / ρ)``: the natural map of the law vanishes.  The
multiplier starts at ``y_0 = -û(z_0)``, so a warm start that solves the problem is
a fixed point from the first iteration.

The linear system: with the factor ``W = C diag(d) C'`` of maximal coordinates
(``FrictionalContact.factor``, six unknowns per body), by the Woodbury identity

.. math:: (W + σ I)^{-1} b = \\tfrac{1}{σ} \\bigl(b - C (σ D^{-1} + C'C)^{-1} C' b\\bigr),

one block Cholesky of the bodies' ``6 x 6`` blocks
(:mod:`solvers.backends.block_cholesky`, refactored only when ``ρ`` changes), and
one step of iterative refinement (the subtraction loses ``log10(|W| / σ)`` digits);
without a factor, a dense Cholesky of ``W + σ I``.

Penalty (the spectral rule of the paper): ``ρ_0 = sqrt(L m) κ^{p}`` with ``L`` the
largest eigenvalue of ``W`` (power iteration), ``m = η`` the proximal floor and
``κ = L / m``; every ``period`` iterations, when the relative primal residual
``||r - z|| / ||z||`` and the relative dual residual ``ρ ||z - z_old|| / ||y||``
differ by more than ``ratio``, ``ρ`` is multiplied (primal larger) or divided by
``κ^τ``, within ``[1e-4 L, 1e4 L]``.  Settings: ``eta`` (default ``1e-6 L``), ``rho``
(the first penalty), ``power`` ``p`` (0.2), ``tau`` (0.05), ``ratio`` (10), ``period`` (5).

Wide cones (torsional and rolling rows, :class:`~solvers.frictional_wide.WideFrictionalContact`):
the same iteration with the projection, shift and natural map of
:mod:`solvers.numerics.fc_wide`, on the dense ``W`` (no factor is given).

Stopping test: the natural map of :func:`~solvers.numerics.fc_kernels.natural_map` on
``z`` (every iterate is checked); the iterate returned is the best one seen.  Status:
``optimal`` within ``tol``; ``max_iterations`` at the cap; ``stalled`` when the best
residual has not dropped by 10 % in ``stall`` iterations (setting, default 500).
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from solvers.backends.base import SolveOptions
from solvers.backends.block_cholesky import factor_shifted, solve
from solvers.backends.fc_base import (
    FrictionBackend,
    _codes,
    _cones,
    _no_settings,
    _start,
    floored,
    rounding_floor,
)
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.frictional import FrictionalContact
from solvers.jit import njit
from solvers.numerics.csr import csr_mul, csr_tmul
from solvers.numerics.dense import cholesky, cholesky_solve
from solvers.numerics.fc_methods import (
    admm_z_step,
    natural_map_cones,
    project_cones,
    shift_cones,
)
from solvers.result import RawSolution

#: CPU seconds of a cold compilation of these kernels (not measured).
COMPILE_SECONDS: float | None = None

Vec = NDArray[np.float64]
IVec = NDArray[np.int64]

#: Rows up to which a problem without a factor is solved with a dense Cholesky of ``W``.
DENSE_ROWS = 1500


@njit(cache=True)
def _wmul(
    dense: bool, Wd: Vec, ptr: IVec, idx: IVec, val: Vec, d: Vec, x: Vec, tv: Vec, out: Vec
) -> None:
    """``out = W x`` (dense ``W``, or ``C (d * (C' x))``)."""
    if dense:
        n = x.shape[0]
        for i in range(n):
            acc = 0.0
            for j in range(n):
                acc += Wd[i, j] * x[j]
            out[i] = acc
        return
    csr_tmul(ptr, idx, val, x, tv)
    for j in range(tv.shape[0]):
        tv[j] *= d[j]
    csr_mul(ptr, idx, val, tv, out)


@njit(cache=True)
def _refactor(
    dense: bool,
    Wd: Vec,
    Ld: Vec,
    sigma: float,
    d: Vec,
    base: Vec,
    diag_slot: IVec,
    blocks: tuple[Vec, IVec, IVec, IVec, IVec, IVec, IVec, IVec, Vec],
) -> bool:
    """Factor ``W + σ I`` (dense) or ``σ D^{-1} + C'C`` (blocks: ``blocks`` the values,
    pattern, symbolic analysis and factor arrays of
    :func:`~solvers.backends.block_cholesky.factor_shifted`); ``False`` if it fails."""
    if dense:
        n = Wd.shape[0]
        for i in range(n):
            for j in range(n):
                Ld[i, j] = Wd[i, j]
            Ld[i, i] += sigma
        return cholesky(Ld, Ld)
    values = blocks[0]
    for k in range(values.shape[0]):
        values[k] = base[k]
    for j in range(diag_slot.shape[0]):
        values[diag_slot[j]] += sigma / d[j]
    used = factor_shifted(*blocks, 0.0)
    return used >= 0.0


@njit(cache=True)
def _shifted_solve(
    dense: bool,
    Ld: Vec,
    sigma: float,
    ptr: IVec,
    idx: IVec,
    val: Vec,
    L: Vec,
    perm: IVec,
    lptr: IVec,
    lrows: IVec,
    b: Vec,
    out: Vec,
    tv: Vec,
    tv2: Vec,
) -> None:
    """``out = (W + σ I)^{-1} b`` from the factor of :func:`_refactor`."""
    if dense:
        cholesky_solve(Ld, b, out)
        return
    csr_tmul(ptr, idx, val, b, tv)
    solve(L, 6, perm, lptr, lrows, tv, tv2)
    csr_mul(ptr, idx, val, tv2, out)
    for i in range(b.shape[0]):
        out[i] = (b[i] - out[i]) / sigma


@njit(cache=True)
def _power(dense: bool, Wd: Vec, ptr: IVec, idx: IVec, val: Vec, d: Vec, n: int) -> float:
    """Largest eigenvalue of ``W`` by 30 power iterations from a fixed start (an upper
    estimate: the Rayleigh quotient's last ratio, times 1.05)."""
    x = np.empty(n)
    for i in range(n):
        x[i] = 1.0 + 0.1 * ((i * 7919) % 13)
    nrm = math.sqrt(np.sum(x * x))
    for i in range(n):
        x[i] /= nrm
    y = np.empty(n)
    tv = np.empty(d.shape[0])
    lam = 0.0
    for _ in range(30):
        _wmul(dense, Wd, ptr, idx, val, d, x, tv, y)
        nrm = math.sqrt(np.sum(y * y))
        if nrm == 0.0:
            return 0.0
        lam = nrm
        for i in range(n):
            x[i] = y[i] / nrm
    return 1.05 * lam


@njit(cache=True)
def padmm(  # type: ignore[no-untyped-def]  # pragma: no cover
    dense, Wd, ptr, idx, val, d, base, diag_slot, values, first, second, lptr, lrows,
    rptr, rcols, rslot, L, perm, q, law, cones, r, tol, max_iter, eta, rho, tau, ratio,
    period, stall, floor, lmax,
):  # fmt: skip
    """The iteration of the module docstring; ``r`` (warm start in, solution out).

    Returns ``(iterations, residual, final ρ, reason)`` with ``reason`` 0: met ``tol``,
    1: the cap, 2: stalled, 3: a factorisation failed, 4: not finite.  ``cones``: the
    contacts' feasible set in either layout (:class:`~solvers.numerics.fc_methods.Cones`).
    """
    n = q.shape[0]
    nv = d.shape[0]
    qnorm = math.sqrt(np.sum(q * q))
    tv = np.empty(nv)
    tv2 = np.empty(nv)
    Ld = np.empty(Wd.shape)
    z = np.empty(n)
    project_cones(cones, r, z)
    u = np.empty(n)
    _wmul(dense, Wd, ptr, idx, val, d, z, tv, u)
    for i in range(n):
        u[i] += q[i]
    res = natural_map_cones(cones, law, z, u, qnorm)
    res = max(res, floor * np.max(np.abs(z)))
    best = z.copy()
    best_res = res
    if res <= tol or not math.isfinite(res):
        r[:] = z
        return 0, res, rho, 0 if res <= tol else 4
    qs = q.copy()
    if law == 1:
        shift_cones(cones, q, u, qs)
    y = np.empty(n)
    for i in range(n):
        y[i] = -(u[i] + qs[i] - q[i])
    x = z.copy()
    rhs = np.empty(n)
    corr = np.empty(n)
    wx = np.empty(n)
    zold = np.empty(n)
    xy = np.empty(n)
    kappa_step = lmax / eta
    rho_lo, rho_hi = 1e-4 * lmax, 1e4 * lmax
    sigma = rho + eta
    blocks = (values, first, second, lptr, lrows, rptr, rcols, rslot, L)
    if not _refactor(dense, Wd, Ld, sigma, d, base, diag_slot, blocks):
        r[:] = best
        return 0, best_res, rho, 3
    it = 0
    last_gain = 0
    mark = best_res
    reason = 1
    while it < max_iter:
        it += 1
        for i in range(n):
            rhs[i] = -qs[i] - y[i] + rho * z[i] + eta * x[i]
        _shifted_solve(dense, Ld, sigma, ptr, idx, val, L, perm, lptr, lrows, rhs, x, tv, tv2)
        if not dense:
            # one step of iterative refinement on (W + σ I) x = rhs
            _wmul(dense, Wd, ptr, idx, val, d, x, tv, wx)
            for i in range(n):
                wx[i] = rhs[i] - wx[i] - sigma * x[i]
            _shifted_solve(dense, Ld, sigma, ptr, idx, val, L, perm, lptr, lrows, wx, corr,
                           tv, tv2)  # fmt: skip
            for i in range(n):
                x[i] += corr[i]
        prim, dual, zn, yn = admm_z_step(cones, x, y, rho, rho, z, zold, xy)
        _wmul(dense, Wd, ptr, idx, val, d, z, tv, u)
        for i in range(n):
            u[i] += q[i]
        res = natural_map_cones(cones, law, z, u, qnorm)
        res = max(res, floor * np.max(np.abs(z)))
        if not math.isfinite(res):
            reason = 4
            break
        if res < best_res:
            best_res = res
            best[:] = z
        if best_res <= tol:
            reason = 0
            break
        if best_res < 0.9 * mark:
            mark = best_res
            last_gain = it
        elif it - last_gain >= stall:
            reason = 2
            break
        if law == 1:
            shift_cones(cones, q, u, qs)
        if it % period == 0:
            p_rel = math.sqrt(prim) / max(math.sqrt(zn), 1e-300)
            d_rel = math.sqrt(dual) / max(math.sqrt(yn), 1e-300)
            factor = 1.0
            if p_rel > ratio * d_rel:
                factor = kappa_step**tau
            elif d_rel > ratio * p_rel:
                factor = kappa_step ** (-tau)
            if factor != 1.0 and rho_lo <= rho * factor <= rho_hi:
                rho *= factor
                sigma = rho + eta
                if not _refactor(dense, Wd, Ld, sigma, d, base, diag_slot, blocks):
                    reason = 3
                    break
    r[:] = best
    return it, best_res, rho, reason


def _structure(problem: FrictionalContact) -> tuple[Any, ...]:
    """The linear-system data of :func:`padmm`: dense ``W`` or the block pattern of
    ``σ D^{-1} + C'C`` with its symbolic analysis."""
    from solvers.backends.block_cholesky import BlockCholesky

    i64 = np.zeros(1, dtype=np.int64)
    f64 = np.zeros(1)
    if problem.factor is not None and problem.factor_arrays[3].shape[0] % 6 == 0:
        ptr, idx, val, d = problem.factor_arrays
        C = sp.csr_matrix((val, idx, ptr), shape=(problem.n, d.shape[0]))
        nv = d.shape[0]
        ctc = (C.T @ C).tocsc()
        K = sp.triu(ctc + sp.identity(nv, format="csc"), format="csc")
        K.sort_indices()
        col = np.repeat(np.arange(nv), np.diff(K.indptr))
        diag_slot = np.flatnonzero(K.indices == col).astype(np.int64)
        base = np.ascontiguousarray(K.data, dtype=np.float64)
        base[diag_slot] = np.asarray(C.multiply(C).sum(axis=0)).ravel()
        chol = BlockCholesky(K.indptr.astype(np.int64), K.indices.astype(np.int64), 6)
        return (
            False, np.zeros((0, 0)), ptr, idx, val, d, base, diag_slot, np.empty(base.size),
            chol.first, chol.second, chol.lptr, chol.lrows, chol.rptr, chol.rcols, chol.rslot,
            chol.L, chol.perm,
        )  # fmt: skip
    if problem.n > DENSE_ROWS:
        raise IncompatibleProblem(
            f"padmm needs FrictionalContact.factor (maximal coordinates) or a W of at most "
            f"{DENSE_ROWS} rows; this one has {problem.n}: use 'ipm' or 'nsgs'"
        )
    Wd = np.ascontiguousarray(problem.W.toarray())
    Wd = 0.5 * (Wd + Wd.T)
    return (
        True, Wd, i64, i64, f64, np.ones(1), f64, i64, f64, i64, i64, i64, i64, i64, i64, i64,
        f64, i64,
    )  # fmt: skip


class PADMMBackend(FrictionBackend):
    """Proximal ADMM with a spectral penalty rule on the Coulomb law (De Saxcé) directly."""

    name = "padmm"
    kind = "admm"
    description = "proximal ADMM, spectral penalty, De Saxce's law directly (CCP and Coulomb)"
    #: The models pass ``W = C diag(d) C'`` as its factor (maximal coordinates).
    uses_fc_factor = True
    #: Wide cones (torsional and rolling rows) with the dense ``W`` (up to ``DENSE_ROWS``).
    accepts_fc_wide = True

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        settings = dict(opts.settings)
        known = ("eta", "rho", "power", "tau", "ratio", "period", "stall")
        eta_in = settings.pop("eta", None)
        rho_in = settings.pop("rho", None)
        power = float(settings.pop("power", 0.2))
        tau = float(settings.pop("tau", 0.05))
        ratio = float(settings.pop("ratio", 10.0))
        period = int(settings.pop("period", 5))
        stall = int(settings.pop("stall", 500))
        _no_settings(self.name, settings, known)
        for label, value in (("tau", tau), ("ratio", ratio), ("period", period)):
            if not value > 0:
                raise ProblemError(label, f"must be positive, got {value}")
        cap = 5000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, _ = _codes(problem)
        r = _start(problem, opts)
        if problem.n == 0:
            return RawSolution(r, None, "optimal", "padmm: no rows", 0, 0.0, 0.0)
        data = _structure(problem)
        Lmax = _power(data[0], data[1], data[2], data[3], data[4], data[5], problem.n)
        Lmax = Lmax if Lmax > 0.0 else 1.0
        eta = 1e-6 * Lmax if eta_in is None else float(eta_in)
        if not eta > 0.0:
            raise ProblemError("eta", f"the proximal parameter must be positive, got {eta}")
        kappa = Lmax / eta
        rho = math.sqrt(Lmax * eta) * kappa**power if rho_in is None else float(rho_in)
        if not rho > 0.0:
            raise ProblemError("rho", f"the penalty must be positive, got {rho}")
        qnorm = float(np.linalg.norm(problem.q))
        floor = rounding_floor(problem, qnorm)
        t1 = time.perf_counter()
        it, res, rho_end, reason = padmm(
            *data, problem.q, law, _cones(problem), r, float(opts.tol), cap, eta, rho, tau,
            ratio, period, stall, floor, Lmax,
        )  # fmt: skip
        t2 = time.perf_counter()
        res = floored(float(res), r, floor)
        why = {0: "", 1: "", 2: ", stalled", 3: ", factorisation failed", 4: ", not finite"}
        msg = (
            f"padmm: natural-map residual {res:.3e} after {it} iterations "
            f"(tol {opts.tol:g}, final rho {rho_end:.3g}{why[int(reason)]})"
        )
        if not math.isfinite(res) or reason == 3:
            status = "numerical_error"
        elif res <= opts.tol:
            status = "optimal"
        elif reason == 1:
            status = "max_iterations"
        else:
            status = "stalled"
        return RawSolution(r, None, status, msg, int(it), t1 - t0, t2 - t1)
