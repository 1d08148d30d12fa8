"""cvxpy with a chosen conic backend: ``cvxpy:clarabel`` (default for ``cvxpy``), ``cvxpy:ecos`` ...

The QP is rebuilt as a cvxpy problem; the optional Coulomb cones become
``cp.SOC(mu x_n, x_t)``.  cvxpy's duals are turned into the layer's signs:
``y = nu`` for equality rows, ``+lambda`` for ``A x <= u`` rows and
``-lambda`` for ``A x >= l`` rows (cvxpy duals of inequalities are
non-negative); the cone dual ``(s_n, s_t)`` is ``z_soc``.  Keywords passed to
:func:`solvers.solve` go to ``Problem.solve`` unchanged.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from solvers.backends.base import Backend, SolveOptions, tolerance_settings
from solvers.errors import SolverNotFound
from solvers.problems import QP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance

#: cvxpy solver name -> (module, handles SOC, tolerance keywords, iteration keyword, extra)
_SOLVERS: dict[str, tuple[str, bool, tuple[str, ...], str | None, str | None]] = {
    "CLARABEL": ("clarabel", True, ("tol_gap_abs", "tol_gap_rel", "tol_feas"), "max_iter", None),
    "ECOS": ("ecos", True, ("abstol", "reltol", "feastol"), "max_iters", "qp"),
    "SCS": ("scs", True, ("eps_abs", "eps_rel"), "max_iters", "qp"),
    "OSQP": ("osqp", False, ("eps_abs", "eps_rel"), "max_iter", None),
    "PIQP": (
        "piqp",
        False,
        ("eps_abs", "eps_rel", "eps_duality_gap_abs", "eps_duality_gap_rel"),
        "max_iter",
        "qp",
    ),
    "PROXQP": ("proxsuite", False, ("eps_abs", "eps_rel"), "max_iter", "qp"),
    "DAQP": ("daqp", False, (), None, "qp"),
    "CVXOPT": ("cvxopt", True, ("abstol", "reltol", "feastol"), "max_iters", None),
    "MOSEK": ("mosek", True, (), None, None),
    "GUROBI": ("gurobipy", True, (), None, None),
}

#: Time-limit keyword of the solvers that have one.
_TIME_KEY = {"CLARABEL": "time_limit", "SCS": "time_limit_secs", "OSQP": "time_limit"}

_KIND = {
    "CLARABEL": "interior-point",
    "ECOS": "interior-point",
    "SCS": "admm",
    "OSQP": "admm",
    "PIQP": "interior-point",
    "PROXQP": "augmented-lagrangian",
    "DAQP": "active-set",
    "CVXOPT": "interior-point",
    "MOSEK": "interior-point",
    "GUROBI": "interior-point",
}

# Accuracy (largest layer residual) reached on well-scaled problems with tol = 1e-8.
# First-order methods plateau early; interior-point methods stop on the duality gap, a sum
# of products y_i s_i, so the per-row measure min(|y_i|, s_i) is about its square root.
_TOLERANCE = {"SCS": 1e-4, "OSQP": 1e-5, "PROXQP": 1e-6, "ECOS": 1e-4, "CLARABEL": 1e-5}
# Solvers that do not report infeasibility/unboundedness (they run into the iteration cap).
_NO_CERTIFICATES = {"PROXQP"}


#: cvxpy solvers that reject a problem without constraint rows
_NEEDS_A_ROW = frozenset({"SCS"})
#: solvers whose absolute thresholds misjudge a cost far from unit scale: ProxQP
#: certifies "dual infeasible" when the smallest eigenvalue of P is below 1e-4, and
#: OSQP under cvxpy's settings reported the reduced chain's step 48 unbounded
_EQUILIBRATE = frozenset({"PROXQP", "OSQP"})


class CvxpyBackend(Backend):
    """Base of the ``cvxpy:<solver>`` family; subclasses set :attr:`solver`."""

    solver: ClassVar[str] = ""
    accepts_qp = True
    supports_warm_start = True
    detects_infeasibility = True
    STATUS_MAP = {
        "optimal": "optimal",
        "optimal_inaccurate": "optimal_inaccurate",
        "infeasible": "infeasible",
        "infeasible_inaccurate": "infeasible",
        "unbounded": "unbounded",
        "unbounded_inaccurate": "unbounded",
        "user_limit": "max_iterations",
        "solver_error": "numerical_error",
    }

    def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
        import cvxpy as cp

        if self.solver not in cp.installed_solvers():
            raise SolverNotFound(  # the layer adds the installed backends
                self.name,
                [],
                f"cvxpy does not list {self.solver} in installed_solvers()",
            )
        _, _, tol_keys, iter_key, _ = _SOLVERS[self.solver]
        kwargs: dict[str, Any] = dict(tolerance_settings(tol_keys, opts.tol))
        if opts.max_iter is not None and iter_key is not None:
            kwargs[iter_key] = int(opts.max_iter)
        if opts.time_limit is not None and self.solver in _TIME_KEY:
            kwargs[_TIME_KEY[self.solver]] = float(opts.time_limit)
        kwargs.update(opts.settings)

        t0 = time.perf_counter()
        x = cp.Variable(qp.n)
        if opts.x0 is not None:
            x.value = opts.x0
        cost = 0.5 * cp.quad_form(x, cp.psd_wrap(qp.P)) + qp.q @ x
        A = sp.csr_matrix(qp.A)
        cols = qp.bound_rows()

        def rows_of(r: np.ndarray) -> Any:
            # Bounds on single variables are indexed, not multiplied: a smaller cvxpy problem.
            if cols is None:
                return A[r] @ x
            idx = cols[r]
            return x if np.array_equal(idx, np.arange(qp.n)) else x[idx]

        eq = np.flatnonzero(qp.l == qp.u)
        lo = np.flatnonzero((qp.l != qp.u) & np.isfinite(qp.l))
        up = np.flatnonzero((qp.l != qp.u) & np.isfinite(qp.u))
        cons: list[Any] = []
        groups: list[tuple[np.ndarray, float]] = []
        for rows, sign, make in (
            (eq, 1.0, lambda r: rows_of(r) == qp.l[r]),
            (lo, -1.0, lambda r: rows_of(r) >= qp.l[r]),
            (up, 1.0, lambda r: rows_of(r) <= qp.u[r]),
        ):
            if rows.size:
                cons.append(make(rows))
                groups.append((rows, sign))
        cone = None
        if qp.soc is not None:
            s = qp.soc
            tang = cp.vstack([x[s.tangent[:, 0]], x[s.tangent[:, 1]]])
            cone = cp.SOC(cp.multiply(s.mu, x[s.normal]), tang, axis=0)
            cons.append(cone)
        if not cons and self.solver in _NEEDS_A_ROW:
            # SCS refuses a cone program with no rows (m = 0); the row 0 x <= 1 holds for
            # every x, so the problem is the same
            cons.append(cp.sum(0.0 * x) <= 1.0)
        prob = cp.Problem(cp.Minimize(cost), cons)
        try:
            prob.solve(solver=self.solver, warm_start=opts.x0 is not None, **kwargs)
        except cp.error.SolverError as err:
            t1 = time.perf_counter()
            return RawSolution(
                np.full(qp.n, np.nan),
                None,
                "numerical_error",
                f"cvxpy/{self.solver}: {err}",
                0,
                0.0,
                t1 - t0,
            )
        t1 = time.perf_counter()
        stats = prob.solver_stats
        solve_time = float(stats.solve_time) if stats.solve_time is not None else t1 - t0
        status = self.map_status(prob.status)
        if x.value is None or status in ("infeasible", "unbounded"):
            return RawSolution(
                np.full(qp.n, np.nan),
                None,
                status,
                f"cvxpy/{self.solver}: {prob.status}",
                int(stats.num_iters or 0),
                max(t1 - t0 - solve_time, 0.0),
                solve_time,
            )
        y = np.zeros(qp.m)
        for con, (rows, sign) in zip(cons, groups):
            y[rows] += sign * np.asarray(con.dual_value, dtype=np.float64).reshape(-1)
        z_soc = None
        if cone is not None:
            dual_t, dual_x = cone.dual_value
            z_soc = np.column_stack([np.asarray(dual_t).reshape(-1), np.asarray(dual_x).T])
        return RawSolution(
            np.asarray(x.value, dtype=np.float64),
            y,
            status,
            f"cvxpy/{self.solver}: {prob.status}",
            int(stats.num_iters or 0),
            max(t1 - t0 - solve_time, 0.0),
            solve_time,
            z_soc,
        )


def _make(solver: str) -> type[CvxpyBackend]:
    module, soc, _, iter_key, extra = _SOLVERS[solver]
    attrs = {
        "name": f"cvxpy:{solver.lower()}",
        "solver": solver,
        "description": f"cvxpy modelling layer with {solver}",
        "kind": _KIND[solver],
        "required_modules": ("cvxpy", module),
        "extra": extra,
        "supports_soc": soc,
        "tolerance": Tolerance(_TOLERANCE.get(solver, 1e-6)),
        "detects_infeasibility": solver not in _NO_CERTIFICATES,
        "supports_max_iter": iter_key is not None,
        "supports_time_limit": solver in _TIME_KEY,
        "equilibrate": solver in _EQUILIBRATE,
        "__doc__": f"cvxpy with the {solver} solver.",
    }
    return type(f"Cvxpy{solver.title()}Backend", (CvxpyBackend,), attrs)


CVXPY_BACKENDS: list[type[Backend]] = [_make(name) for name in _SOLVERS]
