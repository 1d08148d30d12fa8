"""Banded Gauss-Newton for the spacetime problem (projected for joint limits).

The cost of :class:`~contactlab.optimize.spacetime.SpacetimeProblem` is a sum
of squares, ``f = |r|^2`` with ``r_k = sqrt(h w_k) tau_k``.  Each torque
``tau_k`` depends on three knots only (``q_{k-1}, q_k, q_{k+1}``, the ghost
knots folded into their neighbours), so the residual Jacobian ``J`` is block
tridiagonal and the Gauss-Newton matrix ``J^T J`` is block pentadiagonal: a
banded matrix of half-bandwidth below ``3 nq`` in the free unknowns, whatever
the number of knots.  Each iteration builds ``J`` from the exact
inverse-dynamics derivatives, factors ``J^T J`` with a banded Cholesky
(``O(n nq^2)`` for ``n`` unknowns), and steps ``x <- P(x + a d)`` with an
Armijo backtracking on the cost; ``P`` projects on the joint limits.

Joint limits: the projected Newton method of Bertsekas (1982).  A variable
within ``eps`` of a bound whose gradient pushes it outward is held there
(its row and column of ``J^T J`` become the identity, its step 0); the other
variables take the Gauss-Newton step of the reduced system, and the
projection keeps every iterate inside the box.  At a solution the projected
gradient (the gradient with the outward components at active bounds
removed) is zero: the first-order (KKT) conditions with the bound
multipliers equal to the removed components.

End positions, end velocities and via-points are eliminated (fixed knots and
ghost knots), so they hold exactly at every iterate.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg
import scipy.sparse

from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.tree import Array

if TYPE_CHECKING:
    from contactlab.optimize.spacetime import SpacetimeProblem


def residuals(problem: SpacetimeProblem, x: Array) -> Array:
    """``r = sqrt(h w_k) tau_k`` stacked ((K+1) nq,); the cost is ``r @ r``."""
    tau = problem.torques(problem.positions(x))
    return (np.sqrt(problem.weights())[:, None] * tau).ravel()


def sparse_jacobian(problem: SpacetimeProblem, x: Array) -> tuple[Array, scipy.sparse.csc_matrix]:
    """The residuals and their exact sparse Jacobian ``dr/dx`` ((K+1) nq by n_free)."""
    Q = problem.positions(x)
    qdot, qddot = problem.rates(Q)
    model, h, K = problem.model, problem.h, problem.knots
    nq = model.nq
    s = np.sqrt(problem.weights())
    blocks = np.empty((K + 1, 3, nq, nq))
    r = np.empty((K + 1, nq))
    for k in range(K + 1):
        dq, dqd, M = inverse_dynamics_derivatives(model, Q[k], qdot[k], qddot[k])
        r[k] = s[k] * model.inverse_dynamics(Q[k], qdot[k], qddot[k])
        blocks[k, 0] = s[k] * (M / h**2 - dqd / (2 * h))  # d tau_k / d q_{k-1}
        blocks[k, 1] = s[k] * (dq - 2 * M / h**2)  # d tau_k / d q_k
        blocks[k, 2] = s[k] * (M / h**2 + dqd / (2 * h))  # d tau_k / d q_{k+1}
    knot = _knot_columns(K)  # the column knot of each block
    i = np.arange(nq)
    rows = np.broadcast_to((np.arange(K + 1)[:, None, None, None] * nq + i[:, None]), blocks.shape)
    cols = np.broadcast_to(knot[:, :, None, None] * nq + i[None, :], blocks.shape)
    full = scipy.sparse.csc_matrix(
        (blocks.ravel(), (rows.ravel(), cols.ravel())), shape=((K + 1) * nq, (K + 1) * nq)
    )
    free = np.flatnonzero(~problem._fixed.ravel())
    return r.ravel(), full[:, free].tocsc()


def _knot_columns(K: int) -> Array:
    """(K+1, 3) the knot of each of ``q_{k-1}, q_k, q_{k+1}``, ghost knots folded."""
    knot = np.arange(K + 1)[:, None] + np.array([-1, 0, 1])
    knot[0, 0] = 1  # q_{-1} = q_1 - 2h v_0
    knot[K, 2] = K - 1  # q_{K+1} = q_{K-1} + 2h v_T
    return knot


def residual_curvature(
    problem: SpacetimeProblem, x: Array, r: Array, step: float = 1e-7
) -> scipy.sparse.csc_matrix:
    """``sum_i r_i d^2 r_i / dx^2``: the term the Gauss-Newton matrix ``J^T J`` omits.

    At knot ``k`` it is the Hessian of ``phi = r_k . tau_k(q, qdot, qddot) s_k`` in
    ``(q, qdot, qddot)``, chained through the difference formulas (linear, so no
    other term).  ``tau`` is linear in ``qddot``; the ``(q, qdot)`` rows and the
    ``(q, qddot)`` block are forward differences of the exact gradient
    ``(dtau/dq^T l, dtau/dqdot^T l, M l)`` (``l = s_k r_k``), relative error about
    ``step`` (it steers the steps, not the solution); the result is symmetrized.
    Block pentadiagonal like ``J^T J``.
    """
    Q = problem.positions(x)
    qdot, qddot = problem.rates(Q)
    model, h, K = problem.model, problem.h, problem.knots
    nq = model.nq
    s = np.sqrt(problem.weights())
    lam = r.reshape(K + 1, nq) * s[:, None]
    eye = np.eye(nq)
    zero = np.zeros((nq, nq))
    # (q, qdot, qddot)_k = L (q_{k-1}, q_k, q_{k+1})
    L = np.block(
        [
            [zero, eye, zero],
            [-eye / (2 * h), zero, eye / (2 * h)],
            [eye / h**2, -2 * eye / h**2, eye / h**2],
        ]
    )
    blocks = np.empty((K + 1, 3 * nq, 3 * nq))
    for k in range(K + 1):
        Hk = np.zeros((3 * nq, 3 * nq))
        dq, dqd, M = inverse_dynamics_derivatives(model, Q[k], qdot[k], qddot[k])
        base = np.concatenate([dq.T @ lam[k], dqd.T @ lam[k], M @ lam[k]])
        for j in range(2 * nq):
            e = np.zeros(2 * nq)
            e[j] = step
            dq, dqd, M = inverse_dynamics_derivatives(
                model, Q[k] + e[:nq], qdot[k] + e[nq:], qddot[k]
            )
            Hk[:, j] = (np.concatenate([dq.T @ lam[k], dqd.T @ lam[k], M @ lam[k]]) - base) / step
        Hk[:, 2 * nq :] = Hk[2 * nq :, :].T  # d(grad)/d qddot from the symmetric block
        Hk = 0.5 * (Hk + Hk.T)
        blocks[k] = L.T @ Hk @ L
    knot = _knot_columns(K)
    idx = (knot[:, :, None] * nq + np.arange(nq)).reshape(K + 1, 3 * nq)
    rows = np.broadcast_to(idx[:, :, None], blocks.shape)
    cols = np.broadcast_to(idx[:, None, :], blocks.shape)
    n = (K + 1) * nq
    full = scipy.sparse.csc_matrix((blocks.ravel(), (rows.ravel(), cols.ravel())), shape=(n, n))
    free = np.flatnonzero(~problem._fixed.ravel())
    return full[free][:, free].tocsc()


def banded_lower(H: scipy.sparse.spmatrix) -> Array:
    """The lower band of the symmetric sparse ``H`` in LAPACK's ``ab[i - j, j] = H[i, j]`` form."""
    C = scipy.sparse.tril(H).tocoo()
    width = int((C.row - C.col).max(initial=0))
    ab = np.zeros((width + 1, H.shape[0]))
    ab[C.row - C.col, C.col] = C.data
    return ab


def projected_gradient(g: Array, x: Array, lower: Array, upper: Array) -> Array:
    """``g`` without its components that push a variable at a bound outward."""
    out = g.copy()
    out[((x <= lower) & (g > 0)) | ((x >= upper) & (g < 0))] = 0.0
    return out


def _band_solve(factor: Array, b: Array) -> Array:
    return scipy.linalg.cho_solve_banded((factor, True), b)


def _try_cholesky(ab: Array) -> Array | None:
    try:
        return scipy.linalg.cholesky_banded(ab, lower=True)
    except np.linalg.LinAlgError:
        return None


def trust_region_step(ab: Array, g: Array, radius: float) -> tuple[Array, bool]:
    """The minimizer of ``g.s + s.A s / 2`` over ``|s| <= radius`` (Moré & Sorensen, 1983).

    ``ab`` is the symmetric banded ``A`` (lower form, any inertia).  The step is
    ``s = -(A + mu I)^-1 g`` with the least ``mu >= max(0, -lambda_min)`` that
    puts it inside the ball; ``mu`` solves ``1/|s(mu)| = 1/radius`` by Newton's
    method (each trial one banded Cholesky).  Where ``A`` is not positive
    definite, ``lambda_min`` and its eigenvector come from LAPACK's banded
    eigensolver; in the hard case the step is completed along that eigenvector
    to the boundary.  Returns the step and whether it is the Newton step.
    """
    n = ab.shape[1]
    factor = _try_cholesky(ab)
    low = 0.0
    vector = None
    if factor is not None:
        s = -_band_solve(factor, g)
        if np.linalg.norm(s) <= radius:
            return s, True
        mu = 0.0
    else:
        w, v = scipy.linalg.eig_banded(ab, lower=True, select="i", select_range=(0, 0))
        low, vector = max(0.0, -float(w[0])), v[:, 0]
        scale = float(np.abs(ab[0]).max(initial=1.0))
        mu = low + 1e-10 * (low + scale)
        factor = None
    first = vector is not None
    for _ in range(60):
        shifted = ab.copy()
        shifted[0] += mu
        factor = _try_cholesky(shifted)
        if factor is None:  # mu at the edge of rounding: move up
            low = mu
            mu = 2.0 * mu + 1e-12 * (1.0 + float(np.abs(ab[0]).max(initial=1.0)))
            continue
        s = -_band_solve(factor, g)
        norm = float(np.linalg.norm(s))
        if abs(norm - radius) <= 0.1 * radius:
            return s, False
        if norm < radius and first and vector is not None:
            # hard case: the shifted step is short of the boundary; add the eigenvector
            sv, vv = float(s @ vector), float(vector @ vector)
            tau = (-sv + np.sqrt(sv * sv + vv * (radius**2 - norm**2))) / vv
            return s + tau * vector, False
        first = False
        w_ = scipy.linalg.solve_banded((factor.shape[0] - 1, 0), factor, s)
        new = mu + (norm / float(np.linalg.norm(w_))) ** 2 * (norm - radius) / radius
        mu = new if new > low else 0.5 * (mu + low)
    return s, False



def _BAND_COLS(ab: Array) -> Array:
    return np.broadcast_to(np.arange(ab.shape[1]), ab.shape)


def _BAND_PARTNERS(ab: Array) -> Array:
    rows = np.arange(ab.shape[0])[:, None] + np.arange(ab.shape[1])
    return np.minimum(rows, ab.shape[1] - 1)


def _held_identity(ab: Array, held: Array) -> Array:
    """``ab`` with the rows and columns of ``held`` made the identity."""
    out = ab.copy()
    out[held[_BAND_COLS(ab)] | held[_BAND_PARTNERS(ab)]] = 0.0
    out[0, held] = 1.0
    return out


def _band_matvec(ab: Array, v: Array) -> Array:
    """``A v`` for the symmetric ``A`` in lower banded form."""
    n = ab.shape[1]
    out = ab[0] * v
    for band in range(1, ab.shape[0]):
        out[band:] += ab[band, : n - band] * v[: n - band]
        out[: n - band] += ab[band, : n - band] * v[band:]
    return out

def solve(
    problem: SpacetimeProblem,
    x: Array,
    lower: Array,
    upper: Array,
    max_iterations: int,
    tolerance: float,
    initial_cost: float,
    history: list[float],
    exact_hessian: bool = True,
) -> tuple[Array, int, int, str, str]:
    """Minimize from ``x`` (inside the box); returns ``x, nit, nfev, status, message``.

    A trust-region Newton method in the variables scaled by ``D = sqrt(diag(J^T J))``
    (finite-difference accelerations make the raw Hessian scale like ``h^-4``).
    The model Hessian is ``2 (J^T J + S)`` with ``S`` from
    :func:`residual_curvature` (Newton), or ``2 J^T J`` (Gauss-Newton) when
    ``exact_hessian`` is false.  Each step solves the trust-region subproblem
    exactly (:func:`trust_region_step`), so directions of negative curvature
    are followed to the boundary of the region instead of being damped away;
    the radius grows after good agreement of actual and predicted decrease and
    shrinks after poor agreement.

    Joint limits (projected Newton, Bertsekas 1982): a variable within
    ``eps = min(1e-3, |x - P(x - D^-2 g)|)`` of a bound that its gradient
    pushes outward is held (moved onto the bound, excluded from the
    subproblem); the others take the trust-region step; the trial point is
    projected on the box, so every iterate is feasible.  Stops as
    ``"optimal"`` when the Newton decrement ``g_F^T H_F^{-1} g_F / 2`` over the
    free variables (``H_F`` positive definite: a local minimum) falls below
    ``tolerance`` times the initial cost and every held variable sits on its
    bound with its gradient pushing outward.
    """
    nit = nfev = 0
    r, J = sparse_jacobian(problem, x)
    f = float(r @ r)
    nfev += 1
    radius = -1.0
    while True:
        g = 2.0 * (J.T @ r)
        JTJ = (J.T @ J).tocsc()
        base = JTJ.diagonal().copy()
        D = np.sqrt(np.maximum(base, 1e-30 * float(base.max(initial=1.0)) + 1e-300))
        H = JTJ + residual_curvature(problem, x, r) if exact_hessian else JTJ
        H2 = 2.0 * H  # the Hessian of the model of f
        # epsilon-active set: near a bound with the gradient pushing outward
        eps = min(1e-8, float(np.abs(x - np.clip(x - g / (2.0 * D**2), lower, upper)).max()))
        active = ((x - lower <= eps) & (g > 0)) | ((upper - x <= eps) & (g < 0))
        full = banded_lower(H2)
        full /= D[_BAND_COLS(full)] * D[_BAND_PARTNERS(full)]
        gs_all = g / D
        ab = _held_identity(full, active)
        gs = np.where(active, 0.0, gs_all)
        pg = projected_gradient(g, x, lower, upper)
        settled = not np.any(active & (pg != 0.0))
        decrement = np.inf
        factor = _try_cholesky(ab)
        if factor is not None:
            decrement = 0.5 * float(gs @ _band_solve(factor, gs))
        if decrement <= tolerance * initial_cost and settled:
            return x, nit, nfev, "optimal", "predicted decrease below tolerance x initial cost"
        if nit >= max_iterations:
            return x, nit, nfev, "max_iterations", "iteration limit reached"
        if radius < 0:
            radius = float(np.sqrt(f))
        # scaled room to the bounds
        room_low, room_high = (lower - x) * D, (upper - x) * D
        accepted = False
        for _ in range(60):
            held = active.copy()
            move = np.zeros_like(x)  # scaled moves of the variables a bound stops
            for _ in range(20):
                ab = _held_identity(full, held)
                rhs = np.where(held, 0.0, gs_all + _band_matvec(full, move))
                s, newton = trust_region_step(ab, rhs, radius)
                s = np.where(held, move, s)
                crossing = ~held & ((s < room_low) | (s > room_high))
                if not crossing.any():
                    break
                held |= crossing
                move = np.where(crossing, np.clip(s, room_low, room_high), move)
            p = s / D
            trial = np.clip(x + p, lower, upper)
            p = trial - x
            predicted = -(float(g @ p) + 0.5 * float(p @ (H2 @ p)))
            length = float(np.linalg.norm(s[~held])) if (~held).any() else 0.0
            if predicted > 0:
                r_trial = residuals(problem, trial)
                nfev += 1
                f_trial = float(r_trial @ r_trial)
                rho = (f - f_trial) / predicted
            else:
                f_trial, rho = f, -1.0
            if rho < 0.25:
                radius = 0.25 * min(radius, max(length, 1e-3 * radius))
            elif rho > 0.75 and not newton and length >= 0.9 * radius:
                radius *= 2.0
            if rho > 1e-4 and f_trial < f:
                accepted = True
                break
            if decrement <= 1e3 * np.finfo(float).eps * max(f, initial_cost) and settled:
                return x, nit, nfev, "optimal", "no further decrease at machine precision"
        if not accepted:
            return x, nit, nfev, "failed", "no decrease after shrinking the trust region"
        x = trial
        nit += 1
        r, J = sparse_jacobian(problem, x)
        f = float(r @ r)
        history.append(f)
