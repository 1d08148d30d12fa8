"""Compliant penalty contact: a Hunt--Crossley normal force and regularized Coulomb friction,
stepped implicitly (backward Euler in velocity, Newton's method with a line search).

Per contact with penetration ``delta = -distance`` at the start of the step and
the end-of-step contact velocity ``u = (u_n, u_t) = (N_i v^+, T_i v^+)``
(``u_n`` the separation speed), the penetration at the end of the step is
``delta^+ = delta - h u_n`` (the position update ``q^+ = q + h v^+`` of the
formulations) and the forces are

.. math::

    f_n = k\\,(\\delta^+)_+^{\\,p}\\,(1 - c\\,u_n)_+, \\qquad
    f_t = -\\mu f_n \\frac{u_t}{\\sqrt{\\|u_t\\|^2 + v_s^2}},

Hunt and Crossley's force (``p = 3/2`` Hertz, ``p = 1`` a linear spring; the
dissipation ``c`` [s/m] multiplies the approach speed ``-u_n``) and a smooth
Coulomb law whose stiction regime is a steep viscous slope ``mu f_n / v_s``
(below the stiction speed ``v_s`` a contact creeps instead of sticking).
The step solves the nonlinear equations

.. math::

    r(v, \\lambda_G) = \\begin{pmatrix} M v - f - h J^T F(J v) - G^T \\lambda_G \\\\
    G v - g \\end{pmatrix} = 0,
    \\qquad J = \\begin{pmatrix} N \\\\ T \\end{pmatrix},

by Newton's method on the exact Jacobian ``M - h J^T (dF/du) J`` (bordered by the
bilateral rows ``G``), with a backtracking (Armijo) line search on
``||r||^2 / 2``; it stops when ``||r||_inf <= tol * max(1, ||f||_inf)``.  The impulses
``h f`` are the step's ``lambda_N`` and ``lambda_T`` (``T`` basis).

Stability.  The forces are taken at the end of the step, so the linear
spring-damper is integrated by backward Euler, which is A-stable: no step size
makes the energy grow (a test checks it on a bouncing ball).  Accuracy is
another matter: the contact's period is ``2 pi sqrt(m/k_eff)`` with
``k_eff = p k delta^(p-1)``; with ``h`` not well below ``sqrt(m/k_eff)`` the
oscillation is damped numerically instead of resolved, and an explicit
(symplectic) step of the same force would diverge above ``h = 2 sqrt(m/k_eff)``.
The implicit friction has no step limit either (an explicit one needs
``h < m v_s / (mu f_n)``).  Newton's convergence degrades where contacts open
or close within the step (the kink of ``(.)_+``); the line search keeps the
residual decreasing, and a step that reaches ``max_iter`` is reported
``max_iterations``.

Joint limits (``L`` rows) are inequalities a penalty step does not take:
scenes with them need another model.

Options
-------
stiffness : ``k`` [N/m^p], default 1e6.
exponent : ``p`` >= 1, default 1.5 (Hertz).
dissipation : ``c`` [s/m] >= 0, default 0.5.
stiction_velocity : ``v_s`` [m/s] > 0, default 1e-3.
tol : relative residual tolerance of Newton's method, default 1e-12.
max_iter : Newton iterations, default 50.

The model solves its own equations (the ``solver`` name is recorded, not used).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError, IncompatibleError
from contactlab.memory import ModelMemory
from contactlab.models.base import ContactModel, register_model
from contactlab.problem import StepProblem, StepSolution

Array = NDArray[np.float64]


def contact_forces(
    u: Array,
    delta: Array,
    mu: Array,
    h: float,
    k: float,
    p: float,
    c: float,
    vs: float,
) -> tuple[Array, Array, Array]:
    """Forces ``(f_n (nc,), f_t (nc, 2))`` at contact velocities ``u`` (3 nc,: n, t1, t2 blocks)
    and their derivative ``dF/du`` (nc, 3, 3) (module docstring)."""
    nc = delta.size
    un = u[:nc]
    ut = u[nc:].reshape(nc, 2)
    d = delta - h * un
    pen = d > 0.0
    dp = np.where(pen, d, 0.0)
    spring = k * dp**p
    dspring = np.where(pen, -h * k * p * dp ** (p - 1.0), 0.0)  # d spring / d u_n
    damp = 1.0 - c * un
    on = damp > 0.0
    damp = np.where(on, damp, 0.0)
    ddamp = np.where(on, -c, 0.0)
    fn = spring * damp
    dfn = dspring * damp + spring * ddamp
    rho = np.sqrt(np.sum(ut * ut, axis=1) + vs * vs)
    s = ut / rho[:, None]
    ft = -(mu * fn)[:, None] * s
    D = np.zeros((nc, 3, 3))
    D[:, 0, 0] = dfn
    D[:, 1:, 0] = -(mu * dfn)[:, None] * s
    ds = (
        np.eye(2)[None] / rho[:, None, None]
        - np.einsum("ia,ib->iab", ut, ut) / (rho**3)[:, None, None]
    )
    D[:, 1:, 1:] = -(mu * fn)[:, None, None] * ds
    return fn, ft, D


@register_model("penalty")
class Penalty(ContactModel):
    """Hunt--Crossley normal force and smooth Coulomb friction, stepped implicitly by Newton."""

    forms = ("newton",)
    needs = ("contact_geometry",)
    defaults: ClassVar[dict[str, Any]] = {
        "stiffness": 1e6,
        "exponent": 1.5,
        "dissipation": 0.5,
        "stiction_velocity": 1e-3,
        "tol": 1e-12,
        "max_iter": 50,
    }

    def __init__(self, solver: str, **options: Any) -> None:
        super().__init__(solver, **self.merged_options(**options))

    @classmethod
    def merged_options(cls, **options: Any) -> dict[str, Any]:
        """Defaults updated by ``options``; unknown names or bad values raise ConfigurationError."""
        unknown = sorted(set(options) - set(cls.defaults))
        if unknown:
            raise ConfigurationError(
                f"model 'penalty' has no option(s) {unknown}; its options are "
                f"{sorted(cls.defaults)}"
            )
        o = {**cls.defaults, **options}
        for name, low, strict in (
            ("stiffness", 0.0, True),
            ("exponent", 1.0, False),
            ("dissipation", 0.0, False),
            ("stiction_velocity", 0.0, True),
            ("tol", 0.0, True),
        ):
            x = o[name]
            ok = isinstance(x, (int, float)) and not isinstance(x, bool) and np.isfinite(x)
            if not ok or (x <= low if strict else x < low):
                raise ConfigurationError(
                    f"option {name} must be a finite number {'>' if strict else '>='} {low}, "
                    f"got {x!r}"
                )
        cap = o["max_iter"]
        if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
            raise ConfigurationError(f"option max_iter must be a positive integer, got {cap!r}")
        return o

    @classmethod
    def compatible_solvers(cls, **options: Any) -> list[str]:
        cls.merged_options(**options)
        return []

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        import time

        start = time.perf_counter()
        o = self.options
        if problem.L.shape[0]:
            raise IncompatibleError(
                f"model 'penalty' takes no inequality rows, but the step has "
                f"{problem.L.shape[0]} joint-limit rows; use a complementarity model "
                "(e.g. --model soft or coulomb) for scenes with joint limits"
            )
        nc, n, mg = problem.n_contacts, problem.n, problem.G.shape[0]
        if nc and problem.contacts is None:
            raise IncompatibleError(
                "model 'penalty' needs the contact distances (contact_geometry) of the step"
            )
        delta = (
            -np.asarray(problem.contacts.distance, dtype=float)
            if problem.contacts is not None
            else np.zeros(0)
        )
        J = sp.vstack([problem.N, problem.T], format="csr")
        M = sp.csr_matrix(problem.M)
        G = problem.G
        h = problem.h
        args = (
            problem.mu,
            h,
            float(o["stiffness"]),
            float(o["exponent"]),
            float(o["dissipation"]),
            float(o["stiction_velocity"]),
        )
        tol = float(o["tol"]) * max(1.0, float(np.abs(problem.f).max(initial=0.0)))
        perm = _block_order(nc)

        def residual(v: Array, lam: Array) -> tuple[Array, Array, Array]:
            fn, ft, D = contact_forces(J @ v, delta, *args)
            p = h * np.concatenate([fn, ft.ravel()])
            r1 = M @ v - problem.f - J.T @ p - G.T @ lam
            r2 = G @ v - problem.g
            return np.concatenate([r1, r2]), p, D

        v = problem.v.copy()
        lam = np.zeros(mg)
        r, p, D = residual(v, lam)
        status, it = "max_iterations", 0
        for it in range(1, int(o["max_iter"]) + 1):  # noqa: B007
            if np.abs(r).max(initial=0.0) <= tol:
                status, it = "optimal", it - 1
                break
            # dF/du in the row order of J: [n_1..n_nc, t1_1, t2_1, ...]
            Dj = sp.block_diag(list(D), format="csr")[perm][:, perm] if nc else None
            K = M - h * (J.T @ Dj @ J) if Dj is not None else M
            A = sp.bmat([[K, -G.T], [G, None]], format="csc") if mg else sp.csc_matrix(K)
            try:
                step = spla.splu(A).solve(-r)
            except RuntimeError:
                status = "numerical_error"
                break
            dv, dl = step[:n], step[n:]
            phi0 = 0.5 * float(r @ r)
            t = 1.0
            while True:
                r_new, p_new, D_new = residual(v + t * dv, lam + t * dl)
                if 0.5 * float(r_new @ r_new) <= (1.0 - 1e-4 * t) * phi0 or t < 1e-10:
                    break
                t *= 0.5
            v, lam, r, p, D = v + t * dv, lam + t * dl, r_new, p_new, D_new
        else:
            if np.abs(r).max(initial=0.0) <= tol:
                status = "optimal"
        ok = bool(np.all(np.isfinite(v)))
        if not ok:
            status = "numerical_error"
        return StepSolution(
            v=v,
            lambda_G=lam,
            lambda_N=p[:nc],
            lambda_T=p[nc:],
            lambda_L=np.zeros(0),
            status=status,
            iterations=it,
            solve_time=time.perf_counter() - start,
            residual=float(np.abs(r).max(initial=0.0)),
        )


def _block_order(nc: int) -> NDArray[np.int64]:
    """Rows of the per-contact blocks ``(n, t1, t2)`` in the order of ``J = [N; T]``."""
    blocks = np.arange(3 * nc).reshape(nc, 3)
    return np.concatenate([blocks[:, 0], blocks[:, 1:].ravel()]).astype(np.int64)
