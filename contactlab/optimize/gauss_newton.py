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

Negative curvature (Newton): a light chain has many nearly passive motions, so the
exact Hessian is indefinite along most of the way and its Gauss-Newton part has
eigenvalues many orders below its largest.  Where the banded Cholesky of the Hessian
fails, :func:`solve` also tries the step of its dense eigen-decomposition over the free
variables with the eigenvalues replaced by their absolute values (Greenstadt's modified
Newton step), and keeps the better trial point: on the hanging 20-link chain the damped
step alone stalled at the 1000-iteration cap, with both it reaches a first-order point in
350 iterations.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg
import scipy.sparse

from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.tree import Array

#: Most unknowns for which an indefinite Hessian is eigen-decomposed (dense) and flipped.
MAX_FLIPPED = 2000

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
    flip_negative_curvature: bool = True,
    gradient_tolerance: float = 1e-8,
    log: Callable[[dict[str, float]], None] | None = None,
) -> tuple[Array, int, int, str, str]:
    """Minimize from ``x`` (inside the box); returns ``x, nit, nfev, status, message``.

    The model Hessian is ``2 (J^T J + S)`` with ``S`` from
    :func:`residual_curvature` (Newton), or ``2 J^T J`` (Gauss-Newton) when
    ``exact_hessian`` is false.  Each iteration tries the damped step
    ``(H + mu diag(J^T J))^-1`` over the free variables (Levenberg-Marquardt; where
    the banded Cholesky fails, the step is not taken).  Where the Newton Hessian over
    the free variables is not positive definite and ``flip_negative_curvature`` (at
    most :data:`MAX_FLIPPED` unknowns), the modified Newton step of its dense
    eigen-decomposition with every eigenvalue replaced by its absolute value
    (floored at ``1e-14`` of the largest diagonal entry) plus ``mu`` times the mean
    diagonal of ``J^T J`` is tried too, and the trial point of lower cost is taken:
    the flipped step goes down along negative curvature and takes long steps along the
    nearly flat directions a light chain has many of, where the damping needed to make
    the Hessian positive definite would shorten them by orders of magnitude; the damped
    step keeps the method's progress near saddles where the flipped step is rejected.
    ``mu`` follows the ratio of actual to predicted decrease.

    Stops as ``"optimal"`` when no variable held at a bound would be released and
    either the predicted decrease ``g_F^T |H_F|^{-1} g_F / 4`` over the free
    variables (``|H_F|`` the flipped Hessian where it is indefinite) falls below
    ``tolerance`` times the initial cost, or the largest projected gradient entry falls
    below ``gradient_tolerance`` times its value at the start (a first-order point;
    the message says whether the Hessian is positive definite there).  ``log`` receives,
    per iteration, the cost, the damping ``mu``, the undamped decrement (``inf`` where
    the Hessian over the free variables is not positive definite and not flipped) and the
    largest projected gradient entry.
    """
    nit = nfev = 0
    g0: float | None = None
    r, J = sparse_jacobian(problem, x)
    f = float(r @ r)
    nfev += 1
    mu, grow = 0.0, 2.0
    while True:
        g = 2.0 * (J.T @ r)
        JTJ = (J.T @ J).tocsc()
        base = JTJ.diagonal().copy()
        scale = float(base.max(initial=0.0))
        H = JTJ + residual_curvature(problem, x, r) if exact_hessian else JTJ
        # epsilon-active set: near a bound with the gradient pushing outward
        eps = min(1e-8, float(np.abs(x - np.clip(x - g / (2 * base), lower, upper)).max()))
        active = ((x - lower <= eps) & (g > 0)) | ((upper - x <= eps) & (g < 0))
        gf = np.where(active, 0.0, g)
        ab = banded_lower(H)
        if active.any():
            # rows and columns of held variables become the identity (the band is kept)
            cols = np.arange(ab.shape[1])
            for band in range(ab.shape[0]):
                held = active[cols] | active[np.minimum(cols + band, len(cols) - 1)]
                ab[band, held] = 0.0
            ab[0, active] = scale
        ab[0] += 1e-14 * scale
        pg = projected_gradient(g, x, lower, upper)
        released = bool(np.any(active & (pg != 0.0)))
        # the undamped Newton decrement g^T H^-1 g / 2 decides optimality (where H_F > 0)
        decrement = np.inf
        try:
            factor = scipy.linalg.cholesky_banded(ab, lower=True)
            decrement = 0.25 * float(gf @ scipy.linalg.cho_solve_banded((factor, True), gf))
        except np.linalg.LinAlgError:  # H_F not positive definite: no decrement (inf)
            pass
        flip = None
        indefinite = exact_hessian and not np.isfinite(decrement)
        if indefinite and flip_negative_curvature and len(x) <= MAX_FLIPPED:
            flip = _flipped(H, active, scale)
            lam, V, free_idx = flip
            decrement = 0.25 * float(np.sum((V.T @ gf[free_idx]) ** 2 / lam))
        if log is not None:
            log({"nit": nit, "cost": f, "damping": mu, "decrement": decrement,
                 "projected_gradient": float(np.abs(pg).max())})  # fmt: skip
        kind = (
            "the Hessian indefinite there" if indefinite else "the model Hessian positive definite"
        )
        if g0 is None:
            g0 = max(float(np.abs(pg).max()), 1e-300)
        why = ""
        if decrement <= tolerance * initial_cost:
            why = "predicted decrease below tolerance x initial cost"
        elif float(np.abs(pg).max()) <= gradient_tolerance * g0:
            why = f"projected gradient below {gradient_tolerance:g} of the initial one"
        if why and not released:
            return x, nit, nfev, "optimal", f"{why} ({kind})"
        if nit >= max_iterations:
            return x, nit, nfev, "max_iterations", "iteration limit reached"
        accepted = False
        for _ in range(60):
            steps = []
            damped = ab.copy()
            damped[0] += mu * np.where(active, 0.0, base)
            try:
                factor = scipy.linalg.cholesky_banded(damped, lower=True)
                d = -0.5 * scipy.linalg.cho_solve_banded((factor, True), gf)
                d[active] = 0.0
                steps.append(d)
            except np.linalg.LinAlgError:
                if flip is None:
                    mu = max(4.0 * mu, 1e-8)
                    continue
            if flip is not None:
                lam, V, free_idx = flip
                shift = mu * float(base[free_idx].mean())
                d = np.zeros_like(x)
                d[free_idx] = -0.5 * V @ ((V.T @ gf[free_idx]) / (lam + shift))
                steps.append(d)
            trials = [np.clip(x + d, lower, upper) for d in steps]
            costs = []
            for trial in trials:
                r_trial = residuals(problem, trial)
                costs.append(float(r_trial @ r_trial))
            nfev += len(trials)
            trial = trials[int(np.argmin(costs))]
            f_trial = min(costs)
            p = trial - x
            predicted = -(float(g @ p) + float(p @ (H @ p)))  # f - (f + g.p + p.H p)
            rho = (f - f_trial) / predicted if predicted > 0 else -1.0
            if rho > 1e-4:
                accepted = True
                mu *= max(0.1, 1.0 - (2.0 * rho - 1.0) ** 3)
                grow = 2.0
                if mu < 1e-10:
                    mu = 0.0
                break
            if decrement <= 1e3 * np.finfo(float).eps * max(f, initial_cost) and not released:
                return x, nit, nfev, "optimal", "no further decrease at machine precision"
            mu, grow = max(grow * mu, 1e-8), 2.0 * grow
        if not accepted:
            return x, nit, nfev, "failed", "no decrease after raising the damping"
        x = trial
        nit += 1
        r, J = sparse_jacobian(problem, x)
        f = float(r @ r)
        history.append(f)


def _flipped(H: scipy.sparse.spmatrix, active: Array, scale: float) -> tuple[Array, Array, Array]:
    """``|H|`` over the free variables: the absolute eigenvalues of ``H`` restricted to them
    (floored at ``1e-14 scale``), its eigenvectors and the free variables' indices."""
    free_idx = np.flatnonzero(~active)
    lam, V = np.linalg.eigh(H[free_idx][:, free_idx].toarray())
    return np.maximum(np.abs(lam), 1e-14 * scale), V, free_idx
