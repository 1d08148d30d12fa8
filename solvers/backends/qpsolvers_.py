"""``qpsolvers:<name>``: every solver qpsolvers finds installed, called through ``solve_problem``.

The OSQP-form QP is split into qpsolvers' form: equality rows ``A x = b``,
finite upper bounds ``A_i x <= u_i`` and finite lower bounds
``-A_i x <= -l_i`` in ``G x <= h``; a QP whose rows are all bounds on single
variables is passed as ``lb <= x <= ub``.  The duals ``y``, ``z``, ``z_box``
(non-negative ``z`` for ``G x <= h``) are mapped back to OSQP signs.  Solvers
that only take dense matrices (``qpsolvers.dense_solvers`` minus
``sparse_solvers``) get dense copies.  qpsolvers reports neither iterations nor
why no solution was found, so a failure has status ``numerical_error`` with
that said in the message; cones are not supported.
"""

from __future__ import annotations

import time
import warnings
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from solvers.backends.base import Backend, SolveOptions, tolerance_settings
from solvers.problems import QP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance

#: qpsolvers name -> (module to find, tolerance keywords, kind, pip extra)
_SOLVERS: dict[str, tuple[str, tuple[str, ...], str, str | None]] = {
    "clarabel": ("clarabel", ("tol_gap_abs", "tol_gap_rel", "tol_feas"), "interior-point", None),
    "cvxopt": ("cvxopt", ("abstol", "reltol", "feastol"), "interior-point", None),
    "daqp": ("daqp", (), "active-set", "qp"),
    "ecos": ("ecos", ("abstol", "reltol", "feastol"), "interior-point", "qp"),
    "gurobi": ("gurobipy", (), "interior-point", None),
    "highs": (
        "highspy",
        ("primal_feasibility_tolerance", "dual_feasibility_tolerance"),
        "active-set",
        "qp",
    ),
    "hpipm": ("hpipm_python", (), "interior-point", None),
    "mosek": ("mosek", (), "interior-point", None),
    "osqp": ("osqp", ("eps_abs", "eps_rel"), "admm", None),
    "piqp": (
        "piqp",
        ("eps_abs", "eps_rel", "eps_duality_gap_abs", "eps_duality_gap_rel"),
        "interior-point",
        "qp",
    ),
    "proxqp": (
        "proxsuite",
        ("eps_abs", "eps_rel", "eps_duality_gap_abs", "eps_duality_gap_rel"),
        "augmented-lagrangian",
        "qp",
    ),
    "qpalm": ("qpalm", ("eps_abs", "eps_rel"), "augmented-lagrangian", None),
    "qpoases": ("qpoases", (), "active-set", None),
    "qpswift": ("qpSWIFT", (), "interior-point", None),
    "quadprog": ("quadprog", (), "active-set", "qp"),
    "scs": ("scs", ("eps_abs", "eps_rel"), "admm", "qp"),
}

# Accuracy (largest layer residual) reached with tol = 1e-8.  Interior-point methods stop on
# the duality gap (a sum of products y_i s_i), so min(|y_i|, s_i) is about its square root;
# ECOS sees the QP as an SOCP (epigraph of the quadratic) and its duals reach about 1e-4.
_TOLERANCE = {
    "osqp": 1e-5,
    "scs": 1e-4,
    "qpalm": 1e-5,
    "highs": 1e-6,
    "ecos": 1e-4,
    "clarabel": 1e-5,
}
# Settings without which the solver stops before complementarity is met (ProxQP checks
# only primal/dual residuals unless told to check the duality gap).
#: solvers that qpsolvers replaces by another method on a QP without rows
_NEEDS_A_ROW = frozenset({"clarabel", "jaxopt_osqp", "mosek", "qtqp", "scs"})
_FIXED: dict[str, dict[str, Any]] = {"proxqp": {"check_duality_gap": True}}
# Solvers whose bounds go through G x <= h (finite sides only) instead of lb/ub: ECOS rejects
# infinite entries in lb/ub, and HiGHS (1.15) returns x = 0 as "optimal" for a QP without rows.
_BOUNDS_AS_ROWS = {"ecos", "highs"}
# Solvers that factorise P itself (Cholesky) and fail when it is only semidefinite.
_DEFINITE = {"quadprog", "ecos"}


#: Iteration-cap and time-limit keywords of the solvers that have them.
_ITER_KEY = {
    "clarabel": "max_iter",
    "ecos": "max_iters",
    "osqp": "max_iter",
    "piqp": "max_iter",
    "proxqp": "max_iter",
    "qpalm": "max_iter",
    "scs": "max_iters",
}
_TIME_KEY = {
    "clarabel": "time_limit",
    "osqp": "time_limit",
    "scs": "time_limit_secs",
    "highs": "time_limit",
}


class QpsolversBackend(Backend):
    """Base of the ``qpsolvers:<name>`` family; subclasses set :attr:`solver`."""

    solver: ClassVar[str] = ""
    accepts_qp = True
    supports_warm_start = True

    def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
        import qpsolvers

        tol_keys = _SOLVERS.get(self.solver, ("", (), "", None))[1]
        kwargs: dict[str, Any] = dict(tolerance_settings(tol_keys, opts.tol))
        kwargs.update(_FIXED.get(self.solver, {}))
        if opts.max_iter is not None and self.solver in _ITER_KEY:
            kwargs[_ITER_KEY[self.solver]] = int(opts.max_iter)
        if opts.time_limit is not None and self.solver in _TIME_KEY:
            kwargs[_TIME_KEY[self.solver]] = float(opts.time_limit)
        kwargs.update(opts.settings)
        dense = (
            self.solver in qpsolvers.dense_solvers and self.solver not in qpsolvers.sparse_solvers
        )

        t0 = time.perf_counter()
        problem, back = _to_qpsolvers(
            qp, dense, self.solver in _BOUNDS_AS_ROWS, self.solver in _NEEDS_A_ROW
        )
        t1 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sol = qpsolvers.solve_problem(problem, self.solver, initvals=opts.x0, **kwargs)
        t2 = time.perf_counter()
        if not sol.found or sol.x is None:
            messages = [str(w.message) for w in caught]
            info = (sol.extras or {}).get("info")  # proxqp, piqp: their own status
            info_status = getattr(info, "status", None)
            if info_status is not None:
                messages.append(f"status {info_status}")
            said = " ".join(m for m in messages if "status" in m.lower()) or " ".join(messages)
            status, why = _failure_status(said)
            return RawSolution(
                np.full(qp.n, np.nan),
                None,
                status,
                f"qpsolvers/{self.solver}: {why}",
                0,
                t1 - t0,
                t2 - t1,
            )
        for w in caught:  # warnings about a solution that was found: pass them on
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        y = back(sol)
        return RawSolution(
            np.asarray(sol.x, dtype=np.float64),
            y,
            "optimal",
            f"qpsolvers/{self.solver}: found",
            0,
            t1 - t0,
            t2 - t1,
        )


def _failure_status(said: str) -> tuple[str, str]:
    """The shared status of a failed solve from what the wrapped solver warned.

    qpsolvers returns no status, but its wrappers warn with the solver's own
    ("Clarabel.rs terminated with status PrimalInfeasible", "OSQP exited with
    status 'dual infeasible'").
    """
    text = said.lower().replace("_", " ")
    compact = text.replace(" ", "")
    if "dualinfeasible" in compact or "unbounded" in text:
        return "unbounded", f"the problem is unbounded ({said})"
    if "primalinfeasible" in compact or "infeasible" in text:
        return "infeasible", f"the problem is infeasible ({said})"
    detail = f" ({said})" if said else ""
    return (
        "numerical_error",
        "no solution found; the problem may be infeasible or unbounded, or the solver "
        f"failed, and this solver does not say which{detail}",
    )


def _to_qpsolvers(
    qp: QP, dense: bool, bounds_as_rows: bool, needs_row: bool = False
) -> tuple[Any, Any]:
    """qpsolvers ``Problem`` of an OSQP-form QP and the map of its duals to OSQP-signed ``y``.

    With ``needs_row``, a QP without rows gets the row ``0 x <= 1`` (true for every
    ``x``): qpsolvers answers an unconstrained QP given to SCS with SciPy's LSQR
    instead (Clarabel, SCS, MOSEK, ...), and the backend named must be the one that solves.
    """
    import qpsolvers

    def mat(m: sp.spmatrix) -> Any:
        return m.toarray() if dense else sp.csc_matrix(m)

    cols = qp.bound_rows()
    if cols is not None and cols.size and not bounds_as_rows:
        lb = np.full(qp.n, -np.inf)
        ub = np.full(qp.n, np.inf)
        lb[cols], ub[cols] = qp.l, qp.u
        problem = qpsolvers.Problem(mat(qp.P), qp.q, lb=lb, ub=ub)

        def back_box(sol: Any) -> np.ndarray:
            return np.asarray(sol.z_box, dtype=np.float64)[cols]

        return problem, back_box
    A = sp.csr_matrix(qp.A)
    eq = np.flatnonzero(qp.l == qp.u)
    up = np.flatnonzero((qp.l != qp.u) & np.isfinite(qp.u))
    lo = np.flatnonzero((qp.l != qp.u) & np.isfinite(qp.l))
    G = sp.vstack([A[up], -A[lo]], format="csc") if up.size + lo.size else None
    h = np.concatenate([qp.u[up], -qp.l[lo]]) if G is not None else None
    if needs_row and G is None and not eq.size:
        G, h = sp.csc_matrix((1, qp.n)), np.ones(1)
    problem = qpsolvers.Problem(
        mat(qp.P),
        qp.q,
        None if G is None else mat(G),
        h,
        mat(A[eq]) if eq.size else None,
        qp.l[eq] if eq.size else None,
    )

    def back(sol: Any) -> np.ndarray:
        y = np.zeros(qp.m)
        if eq.size:
            y[eq] += np.asarray(sol.y).reshape(-1)
        if up.size + lo.size:
            z = np.asarray(sol.z).reshape(-1)
            np.add.at(y, up, z[: up.size])
            np.add.at(y, lo, -z[up.size :])
        return y

    return problem, back


#: solvers whose absolute thresholds misjudge a cost far from unit scale (ProxQP
#: certifies "dual infeasible" when the smallest eigenvalue of P is below 1e-4)
_EQUILIBRATE = frozenset({"proxqp"})


def make_qpsolvers_backend(solver: str) -> type[QpsolversBackend] | None:
    """Backend class for a qpsolvers solver name, or ``None`` if qpsolvers does not know it."""
    if solver not in _SOLVERS:
        try:
            import qpsolvers
        except ImportError:
            return None
        if solver not in qpsolvers.available_solvers:
            return None
    module, _, kind, extra = _SOLVERS.get(solver, (solver, (), "", None))
    attrs = {
        "name": f"qpsolvers:{solver}",
        "solver": solver,
        "description": f"qpsolvers.solve_problem with {solver}",
        "kind": kind,
        "required_modules": ("qpsolvers", module),
        "extra": extra,
        "tolerance": Tolerance(_TOLERANCE.get(solver, 1e-6)),
        "requires_definite": solver in _DEFINITE,
        "supports_max_iter": solver in _ITER_KEY,
        "supports_time_limit": solver in _TIME_KEY,
        "__doc__": f"qpsolvers with the {solver} solver.",
        "equilibrate": solver in _EQUILIBRATE,
    }
    return type(f"Qpsolvers{solver.title()}Backend", (QpsolversBackend,), attrs)


QPSOLVERS_BACKENDS: list[type[Backend]] = [
    cls for cls in (make_qpsolvers_backend(name) for name in _SOLVERS) if cls is not None
]
