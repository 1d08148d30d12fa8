"""Spacetime optimization: the joint trajectory of least squared torque (Guenter & Rose).

The trajectory is discretized at ``K + 1`` knots ``t_k = k h``, ``h = T / K``,
with positions ``q_k`` as unknowns.  Velocities and accelerations are central
differences,

.. math::

    \\dot q_k = \\frac{q_{k+1} - q_{k-1}}{2h}, \\qquad
    \\ddot q_k = \\frac{q_{k+1} - 2 q_k + q_{k-1}}{h^2},

with ghost knots ``q_{-1} = q_1 - 2h v_0`` and ``q_{K+1} = q_{K-1} + 2h v_T``
that make the end velocities exactly ``v_0`` and ``v_T``.  The end positions
and the via-points are fixed, so the boundary conditions hold by
construction and the problem is unconstrained (box-constrained with joint
limits).  The cost is the trapezoidal rule of Guenter and Rose's energy,

.. math::

    P = \\int_0^T \\sum_i \\tau_i^2 \\, dt \\approx h \\sum_k w_k \\|\\tau_k\\|^2 ,
    \\qquad \\tau_k = ID(q_k, \\dot q_k, \\ddot q_k),

``w_0 = w_K = 1/2`` and 1 otherwise.  Its exact gradient chains
``dtau/dq``, ``dtau/dqdot`` and ``dtau/dqddot = M``
(:func:`contactlab.reduced.derivatives.inverse_dynamics_derivatives`)
through the difference formulas.  The default ``Newton`` method factors the
banded Hessian (:mod:`contactlab.optimize.gauss_newton`, takes joint limits);
scipy's L-BFGS-B (takes joint limits) or BFGS are the alternatives.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg
import scipy.optimize

from contactlab.errors import ConfigurationError
from contactlab.optimize import gauss_newton
from contactlab.reduced._fast import REVOLUTE
from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.model import Model
from contactlab.reduced.tree import Array

#: Most unknowns ``(K - 1) nq``: the preconditioner is a dense square matrix of that size
#: (5,000 unknowns: 200 MB), so more is refused before anything is allocated.
MAX_UNKNOWNS = 5_000
#: Largest boundary error or joint-limit excursion [rad or m] of an ``optimal`` result.
CONSTRAINT_TOL = 1e-8
#: Range of the duration ``T`` [s]: the torques divide by ``h^2 = (T / K)^2``, which
#: overflows or vanishes in floating point far outside it.
DURATION_RANGE = (1e-6, 1e6)

#: ``Newton`` and ``Gauss-Newton``: :mod:`contactlab.optimize.gauss_newton` (banded, take
#: joint limits); ``L-BFGS-B`` (takes joint limits) and ``BFGS``: scipy, preconditioned.
METHODS = ("Newton", "Gauss-Newton", "L-BFGS-B", "BFGS")
BANDED = ("Newton", "Gauss-Newton")


def _vector(value: Any, nq: int, name: str, default: float | None = None) -> Array:
    """``value`` as (nq,) floats; ``None`` gives ``default``; infinities only for limits."""
    if value is None:
        if default is None:
            raise ConfigurationError(f"{name} is required: give {nq} values")
        return np.full(nq, default)
    out = np.asarray(value, dtype=float).reshape(-1)
    limit = default is not None and np.isinf(default)
    ok = ~np.isnan(out) if limit else np.isfinite(out)
    if out.shape != (nq,) or not np.all(ok):
        kind = "numbers (inf for no limit)" if limit else "finite numbers"
        raise ConfigurationError(f"{name} must be {nq} {kind}, got {np.shape(value)}")
    return out


@dataclass(frozen=True, eq=False)
class SpacetimeProblem:
    """Least squared torque between two states (built once, evaluated by the optimizer).

    Parameters
    ----------
    model : the prepared model of the system.
    duration : ``T`` [s].
    knots : number of intervals ``K`` (``K + 1`` knots).
    q_start, q_end : (nq,) end positions [rad or m].
    qdot_start, qdot_end : (nq,) end velocities (default rest).
    via : ``{time [s]: (nq,) position}``; each time must fall on a knot.
    lower, upper : (nq,) joint limits applied at every free knot (not with BFGS).
    wind : let revolute coordinates turn freely.  By default (``False``) the
        ``Newton`` and ``Gauss-Newton`` methods keep each revolute coordinate
        without a limit within half a turn of the range of its fixed positions
        (start, end, via-points): ``[min - pi, max + pi]``.  The scipy methods
        ignore it.
    """

    model: Model
    duration: float
    knots: int
    q_start: Array
    q_end: Array
    # None means rest (velocities) or no limit; __post_init__ stores (nq,) arrays.
    qdot_start: Array = None  # type: ignore[assignment]
    qdot_end: Array = None  # type: ignore[assignment]
    via: dict[float, Array] = field(default_factory=dict)
    lower: Array = None  # type: ignore[assignment]
    upper: Array = None  # type: ignore[assignment]
    wind: bool = False
    _fixed: Array = field(init=False, repr=False)
    _values: Array = field(init=False, repr=False)

    def __post_init__(self) -> None:
        nq = self.model.nq
        if not (np.isfinite(self.duration) and self.duration > 0):
            raise ConfigurationError(f"duration must be a positive time [s], got {self.duration}")
        lo, hi = DURATION_RANGE
        if not lo <= self.duration <= hi:
            raise ConfigurationError(
                f"--duration {self.duration:g} s is outside the range {lo:g} to {hi:g} s that "
                "the torques (divided by the squared knot interval) can be computed in; "
                "give a duration in that range"
            )
        if int(self.knots) != self.knots or self.knots < 2:
            raise ConfigurationError(f"knots must be an integer >= 2, got {self.knots}")
        if (self.knots - 1) * nq > MAX_UNKNOWNS:
            raise ConfigurationError(
                f"--knots {self.knots} with {nq} coordinates is {(self.knots - 1) * nq:,} "
                f"unknowns, more than the limit of {MAX_UNKNOWNS:,} (the optimizer's dense "
                f"Gauss-Newton matrix grows as their square); use at most "
                f"{MAX_UNKNOWNS // nq + 1} knots"
            )
        put = object.__setattr__
        put(self, "q_start", _vector(self.q_start, nq, "q_start"))
        put(self, "q_end", _vector(self.q_end, nq, "q_end"))
        put(self, "qdot_start", _vector(self.qdot_start, nq, "qdot_start", 0.0))
        put(self, "qdot_end", _vector(self.qdot_end, nq, "qdot_end", 0.0))
        put(self, "lower", _vector(self.lower, nq, "lower", -np.inf))
        put(self, "upper", _vector(self.upper, nq, "upper", np.inf))
        if np.any(self.lower >= self.upper):
            raise ConfigurationError("every lower joint limit must be below its upper limit")
        for name, q in (
            ("start", self.q_start),
            ("end", self.q_end),
            *(
                (f"via-point at {t} s", _vector(q, nq, f"via-point at {t} s"))
                for t, q in self.via.items()
            ),
        ):
            _check_within_limits(name, q, self.lower, self.upper)
        fixed = np.zeros((self.knots + 1, nq), dtype=bool)
        fixed[[0, -1]] = True
        values = np.zeros((self.knots + 1, nq))
        values[0], values[-1] = self.q_start, self.q_end
        for t, q in self.via.items():
            k = float(t) / self.h
            if not (0 < round(k) < self.knots and abs(k - round(k)) < 1e-9):
                raise ConfigurationError(
                    f"via-point time {t} s is not an interior knot; knots are multiples of "
                    f"h = {self.h:g} s strictly between 0 and {self.duration:g} s"
                )
            fixed[round(k)] = True
            values[round(k)] = _vector(q, nq, f"via-point at {t} s")
        put(self, "_fixed", fixed)
        put(self, "_values", values)

    def turn_bounds(self) -> tuple[Array, Array]:
        """(nq,) lower and upper bounds: the joint limits, and unless :attr:`wind`, half a
        turn beyond the range of the fixed positions for a revolute coordinate without one."""
        lower, upper = self.lower.copy(), self.upper.copy()
        if self.wind:
            return lower, upper
        topo = self.model.topo
        revolute = np.zeros(self.model.nq, dtype=bool)
        revolute[topo[topo[:, 1] == REVOLUTE, 2]] = True
        rows = self._fixed.all(axis=1)
        low = self._values[rows].min(axis=0) - np.pi
        high = self._values[rows].max(axis=0) + np.pi
        lower = np.where(revolute & np.isinf(lower), low, lower)
        upper = np.where(revolute & np.isinf(upper), high, upper)
        return lower, upper

    # -- trajectory ----------------------------------------------------------
    @property
    def h(self) -> float:
        """Knot spacing [s]."""
        return self.duration / self.knots

    @property
    def times(self) -> Array:
        """(K+1,) knot times [s]."""
        return np.linspace(0.0, self.duration, self.knots + 1)

    @property
    def n_free(self) -> int:
        """Number of unknowns."""
        return int((~self._fixed).sum())

    def positions(self, x: Array) -> Array:
        """(K+1, nq) knot positions with the free entries ``x``."""
        Q = self._values.copy()
        Q[~self._fixed] = x
        return Q

    def initial_guess(self) -> Array:
        """Free entries of the piecewise-linear interpolation of the fixed knots."""
        t = self.times
        fixed = self._fixed.all(axis=1)
        Q = np.array(
            [np.interp(t, t[fixed], self._values[fixed, i]) for i in range(self.model.nq)]
        ).T
        Q = np.clip(Q, self.lower, self.upper)
        return Q[~self._fixed]

    def rates(self, Q: Array) -> tuple[Array, Array]:
        """Velocities and accelerations (K+1, nq) by central differences with ghost knots."""
        h = self.h
        ext = np.vstack([Q[1] - 2 * h * self.qdot_start, Q, Q[-2] + 2 * h * self.qdot_end])
        qdot = (ext[2:] - ext[:-2]) / (2 * h)
        qddot = (ext[2:] - 2 * ext[1:-1] + ext[:-2]) / h**2
        return qdot, qddot

    def weights(self) -> Array:
        """(K+1,) trapezoidal weights times ``h``."""
        w = np.full(self.knots + 1, self.h)
        w[[0, -1]] *= 0.5
        return w

    # -- cost ----------------------------------------------------------------
    def torques(self, Q: Array) -> Array:
        """(K+1, nq) applied torques along the trajectory."""
        qdot, qddot = self.rates(Q)
        return np.array(
            [self.model.inverse_dynamics(Q[k], qdot[k], qddot[k]) for k in range(len(Q))]
        )

    def cost(self, x: Array) -> float:
        """``h sum_k w_k |tau_k|^2`` [N^2 m^2 s]."""
        tau = self.torques(self.positions(x))
        return float(self.weights() @ np.sum(tau**2, axis=1))

    def cost_and_gradient(self, x: Array) -> tuple[float, Array]:
        """The cost and its exact gradient with respect to the free entries."""
        Q = self.positions(x)
        qdot, qddot = self.rates(Q)
        h, w = self.h, self.weights()
        G = np.zeros((len(Q) + 2, self.model.nq))  # ghost, knots 0..K, ghost
        total = 0.0
        for k in range(len(Q)):
            dq, dqd, M = inverse_dynamics_derivatives(self.model, Q[k], qdot[k], qddot[k])
            tau = self.model.inverse_dynamics(Q[k], qdot[k], qddot[k])
            total += w[k] * float(tau @ tau)
            r = 2.0 * w[k] * tau
            gv = (dqd.T @ r) / (2 * h)
            ga = (M @ r) / h**2
            G[k + 1] += dq.T @ r - 2 * ga
            G[k + 2] += gv + ga
            G[k] += ga - gv
        G[2] += G[0]  # q_{-1} = q_1 - 2h v_0
        G[-3] += G[-1]  # q_{K+1} = q_{K-1} + 2h v_T
        return total, G[1:-1][~self._fixed]

    def residual_jacobian(self, x: Array) -> Array:
        """``d r / d x`` of the residuals ``r_k = sqrt(h w_k) tau_k`` ((K+1) nq, n_free).

        The cost is ``|r|^2``; ``2 J^T J`` is its Gauss-Newton Hessian.
        """
        Q = self.positions(x)
        qdot, qddot = self.rates(Q)
        h, w, nq = self.h, self.weights(), self.model.nq
        J = np.zeros((len(Q), nq, len(Q) + 2, nq))
        for k in range(len(Q)):
            dq, dqd, M = inverse_dynamics_derivatives(self.model, Q[k], qdot[k], qddot[k])
            s = np.sqrt(w[k])
            J[k, :, k + 1] += s * (dq - 2 * M / h**2)
            J[k, :, k + 2] += s * (dqd / (2 * h) + M / h**2)
            J[k, :, k] += s * (M / h**2 - dqd / (2 * h))
        J[:, :, 2] += J[:, :, 0]
        J[:, :, -3] += J[:, :, -1]
        return J[:, :, 1:-1].reshape(len(Q) * nq, -1)[:, (~self._fixed).ravel()]

    def gradient_check(self, x: Array, step: float = 1e-6) -> float:
        """``max |g - g_fd| / max |g_fd|`` against central differences of :meth:`cost`."""
        _, g = self.cost_and_gradient(x)
        fd = np.empty_like(g)
        for i in range(len(x)):
            e = np.zeros_like(x)
            e[i] = step
            fd[i] = (self.cost(x + e) - self.cost(x - e)) / (2 * step)
        return float(np.abs(g - fd).max() / max(np.abs(fd).max(), 1e-300))


def _check_within_limits(name: str, q: Array, lower: Array, upper: Array) -> None:
    """A fixed position outside the joint limits makes the problem infeasible: refuse it."""
    for i in range(q.size):
        for side, bound, outside in (
            ("below --lower", lower[i], q[i] < lower[i]),
            ("above --upper", upper[i], q[i] > upper[i]),
        ):
            if outside:
                raise ConfigurationError(
                    f"the {name} position of coordinate {i} ({q[i]:.6g}, "
                    f"{np.rad2deg(q[i]):.6g} deg) is {side} ({bound:.6g}, "
                    f"{np.rad2deg(bound):.6g} deg): no trajectory meets both; move the limit or "
                    "the position"
                )


def limit_violation(problem: SpacetimeProblem, Q: Array) -> float:
    """Largest excursion of the knots ``Q`` beyond the joint limits [rad or m] (0 inside)."""
    below = np.maximum(problem.lower - Q, 0.0)
    above = np.maximum(Q - problem.upper, 0.0)
    return float(max(below.max(initial=0.0), above.max(initial=0.0)))


@dataclass(frozen=True)
class SpacetimeResult:
    """The optimized trajectory and how the optimizer ended (scipy's conventions).

    ``status`` is ``"optimal"`` when scipy reports convergence, ``"max_iterations"``
    when the iteration cap stopped it, ``"infeasible"`` when the returned knots
    miss a boundary condition or a joint limit by more than
    :data:`CONSTRAINT_TOL` (measured on them, whatever the optimizer said),
    ``"failed"`` otherwise.
    """

    t: Array
    q: Array
    qdot: Array
    qddot: Array
    tau: Array
    cost: float
    initial_cost: float
    success: bool
    status: str
    message: str
    nit: int
    nfev: int
    method: str
    wall_time_s: float
    history: Array
    gradient_check_initial: float
    gradient_norm: float
    boundary_error: float


def _preconditioner(problem: SpacetimeProblem, x: Array, diagonal: bool) -> Array:
    """``T`` with ``T^T H T = I`` for the Gauss-Newton Hessian ``H = 2 J^T J`` at ``x``.

    Finite-difference accelerations make the Hessian scale like ``h^-4``;
    the optimizer works in ``z`` with ``x = x_ref + T z``.  With joint limits
    only the diagonal is used, so that bounds stay boxes.
    """
    J = problem.residual_jacobian(x)
    H = 2.0 * J.T @ J
    if diagonal:
        return np.diag(1.0 / np.sqrt(np.maximum(np.diag(H), 1e-300)))
    L = np.linalg.cholesky(H + 1e-12 * np.trace(H) / len(H) * np.eye(len(H)))
    return np.asarray(scipy.linalg.solve_triangular(L, np.eye(len(H)), lower=True).T)


def optimize(
    problem: SpacetimeProblem,
    method: str = "Newton",
    max_iterations: int = 1000,
    tolerance: float = 1e-12,
    restart_every: int = 25,
    check_gradient: bool = True,
    initial: Array | None = None,
) -> SpacetimeResult:
    """Minimize the squared torque of ``problem`` (``method`` in :data:`METHODS`).

    ``Newton`` (default) and ``Gauss-Newton`` factor the banded Hessian
    (:func:`contactlab.optimize.gauss_newton.solve`; ``Newton`` adds the
    residual curvature to ``J^T J`` and, where that is indefinite, also tries the
    step with its eigenvalues flipped) and take joint limits by projection; they
    also stop as ``"optimal"`` at a first-order point (projected gradient below
    1e-8 of the initial one; the message says whether the Hessian is positive
    definite there).
    The scipy quasi-Newton method runs in the variables preconditioned by the
    Gauss-Newton Hessian (:func:`_preconditioner`), restarted with a fresh
    preconditioner every ``restart_every`` iterations.  It stops as
    ``"optimal"`` when the predicted decrease ``g^T H^{-1} g / 2`` falls
    below ``tolerance`` times the initial cost, as ``"max_iterations"``
    after ``max_iterations`` iterations.  ``check_gradient`` compares the
    analytic gradient with central differences at the initial guess.
    ``initial`` (K+1, nq) knots replace the straight-line initial guess (its
    fixed knots are ignored; its free entries are clipped to the limits).
    """
    if method not in METHODS:
        raise ConfigurationError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if (
        isinstance(max_iterations, bool)
        or int(max_iterations) != max_iterations
        or max_iterations < 1
    ):
        raise ConfigurationError(
            f"--max-iterations must be an integer >= 1, got {max_iterations!r}"
        )
    has_limits = bool(np.isfinite(problem.lower).any() or np.isfinite(problem.upper).any())
    if has_limits and method == "BFGS":
        raise ConfigurationError(
            "joint limits need method 'L-BFGS-B', 'Newton' or 'Gauss-Newton' (BFGS takes no bounds)"
        )
    x = problem.initial_guess()
    if initial is not None:
        start_knots = np.asarray(initial, dtype=float)
        if start_knots.shape != problem._fixed.shape or not np.all(np.isfinite(start_knots)):
            raise ConfigurationError(
                f"initial must be {problem._fixed.shape} finite knot positions (K+1, nq), "
                f"got {start_knots.shape}"
            )
        x = start_knots[~problem._fixed]
    mask = ~problem._fixed
    shape = (problem.knots + 1, problem.model.nq)
    bounds = problem.turn_bounds() if method in BANDED else (problem.lower, problem.upper)
    lower = np.broadcast_to(bounds[0], shape)[mask]
    upper = np.broadcast_to(bounds[1], shape)[mask]
    x = np.clip(x, lower, upper)
    initial_cost = problem.cost(x)
    check = problem.gradient_check(x) if check_gradient else float("nan")
    history = [initial_cost]
    nit = nfev = 0
    status, message = "max_iterations", "iteration limit reached"
    start = time.perf_counter()
    if method in BANDED:
        x, nit, nfev, status, message = gauss_newton.solve(
            problem, x, lower, upper, max_iterations, tolerance, initial_cost, history,
            exact_hessian=method == "Newton",
        )  # fmt: skip
    while method not in BANDED:
        T = _preconditioner(problem, x, diagonal=has_limits)
        f, g = problem.cost_and_gradient(x)
        gz = T.T @ g
        if has_limits:  # only the components that may move inside the box count
            d = np.diag(T)
            gz[((x <= lower) & (gz > 0)) | ((x >= upper) & (gz < 0))] = 0.0
            gz = gz * np.sign(d)
        if 0.5 * float(gz @ gz) <= tolerance * initial_cost:
            status, message = "optimal", "predicted decrease below tolerance x initial cost"
            break
        if nit >= max_iterations:
            break
        x_ref = x

        last: dict[bytes, float] = {}

        def fun(
            z: Array, T: Array = T, x_ref: Array = x_ref, last: dict = last
        ) -> tuple[float, Array]:
            f, g = problem.cost_and_gradient(x_ref + T @ z)
            last[z.tobytes()] = f
            return f, T.T @ g

        def record(
            zk: Array, *_: Any, T: Array = T, x_ref: Array = x_ref, last: dict = last
        ) -> None:
            key = zk.tobytes()
            history.append(last[key] if key in last else problem.cost(x_ref + T @ zk))
            last.clear()

        options: dict[str, Any] = {"maxiter": min(restart_every, max_iterations - nit), "gtol": 0.0}
        kwargs: dict[str, Any] = {}
        if method == "L-BFGS-B":
            options.update(ftol=0.0, maxcor=30)
            d = np.diag(T)
            lo, hi = (lower - x_ref) / d, (upper - x_ref) / d
            kwargs["bounds"] = list(
                zip(np.where(np.isfinite(lo), lo, None), np.where(np.isfinite(hi), hi, None))
            )
        res = scipy.optimize.minimize(
            fun,
            np.zeros_like(x),
            jac=True,
            method=method,
            options=options,
            callback=record,
            **kwargs,
        )
        nit += int(res.nit)
        nfev += int(res.nfev)
        x = x_ref + T @ res.x
        if res.nit == 0:
            status, message = "failed", f"no progress: {res.message}"
            break
    wall = time.perf_counter() - start
    Q = problem.positions(x)
    qdot, qddot = problem.rates(Q)
    tau = problem.torques(Q)
    cost, g = problem.cost_and_gradient(x)
    boundary = max(
        float(np.abs(Q[0] - problem.q_start).max()),
        float(np.abs(Q[-1] - problem.q_end).max()),
        float(np.abs(qdot[0] - problem.qdot_start).max()),
        float(np.abs(qdot[-1] - problem.qdot_end).max()),
    )
    # the constraints measured on the returned trajectory: one not met is never optimal
    outside = limit_violation(problem, Q)
    if not (np.isfinite(boundary) and boundary <= CONSTRAINT_TOL):
        status, message = "infeasible", f"boundary error {boundary:.3g} on the returned knots"
    elif outside > CONSTRAINT_TOL:
        status, message = "infeasible", f"a knot lies {outside:.3g} beyond the joint limits"
    return SpacetimeResult(
        t=problem.times,
        q=Q,
        qdot=qdot,
        qddot=qddot,
        tau=tau,
        cost=cost,
        initial_cost=initial_cost,
        success=status == "optimal",
        status=status,
        message=message,
        nit=nit,
        nfev=nfev,
        method=method,
        wall_time_s=wall,
        history=np.array(history),
        gradient_check_initial=check,
        gradient_norm=float(np.abs(g).max()),
        boundary_error=boundary,
    )
