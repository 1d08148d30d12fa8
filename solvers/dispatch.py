"""``solve(problem, backend)``: carry a problem to a backend along the route the fit table gives.

Which backend takes which problem, and through which conversions, is decided
once, by :func:`solvers.fitting.plan` (the route table of
:mod:`solvers.fitting`); this module carries out that route: the form
conversions it names, then the standard-form normalisations an LCP backend
without box support needs, then the backend.  A problem the table refuses
raises :class:`~solvers.errors.IncompatibleProblem` with the table's reason and
the backends that fit.  The layer, not the backend, computes residuals and
objective, so every backend is measured the same way; every conversion
applied is named in the result.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from solvers import conversions as cv
from solvers.backend_registry import available_backends, get_backend
from solvers.backends.base import Backend, SolveOptions
from solvers.errors import IncompatibleProblem, ProblemError, SolverError, SolverNotFound
from solvers.fitting import fitting_backends, kind_of, plan
from solvers.frictional import FrictionalContact, GlobalFrictionalContact
from solvers.problems import LCP, QP
from solvers.residuals import lcp_residuals, qp_residuals
from solvers.result import RawSolution, SolverResult
from solvers.tolerance import requested_tol
from solvers.verdict import verdict

Vec = NDArray[np.float64]
WarmStart = SolverResult | tuple[ArrayLike, ArrayLike | None] | ArrayLike | None


def _fitting(kind: str) -> str:
    names = fitting_backends(kind)
    return ", ".join(names) if names else "none installed"


def _warm(warm_start: WarmStart) -> tuple[Vec | None, Vec | None]:
    if warm_start is None:
        return None, None
    if isinstance(warm_start, SolverResult):
        return warm_start.x, warm_start.y
    if isinstance(warm_start, tuple):
        x, y = warm_start
        return np.asarray(x, float), None if y is None else np.asarray(y, float)
    return np.asarray(warm_start, float), None


def _interrupted(raw: RawSolution) -> bool:
    """Whether a backend reports that Ctrl-C stopped it.

    Backends in C (OSQP, SCS, ...) catch SIGINT themselves and return a status
    such as "interrupted"; that is the user's interrupt, never a solver failure.
    """
    return "interrupt" in str(raw.message).lower() or "sigint" in str(raw.message).lower()


def _call(fn: Callable[[], RawSolution], n: int) -> RawSolution:
    """``fn()``; a backend exception becomes a failed result, an interrupt stays one."""
    try:
        raw = fn()
    except SolverNotFound as err:  # a backend finding its package unusable at solve time
        raise SolverNotFound(err.name, available_backends(), err.reason) from err
    except SolverError:
        raise
    except Exception as err:  # a backend failure is a result, so a sweep can go on
        return RawSolution(
            np.full(n, np.nan),
            None,
            "numerical_error",
            f"backend raised {type(err).__name__}: {err}",
        )
    if _interrupted(raw):
        raise KeyboardInterrupt
    return raw


def solve(
    problem: QP | LCP | FrictionalContact | GlobalFrictionalContact,
    backend: str = "osqp",
    *,
    tol: float | None = None,
    max_iter: int | None = None,
    warm_start: WarmStart = None,
    time_limit: float | None = None,
    **backend_settings: Any,
) -> SolverResult:
    """Solve a :class:`QP` or :class:`LCP` with the named backend.

    Parameters
    ----------
    problem
        The problem (a frictional-contact problem goes through
        :func:`solvers.fc_dispatch.solve_frictional`).
    backend
        A name from :func:`available_backends` (``"osqp"``, ``"kkt"``,
        ``"pgs"``, ``"lemke"``, ``"cvxpy:clarabel"``, ``"qpsolvers:quadprog"`` ...).
    tol
        Requested absolute tolerance, passed to the backend's own settings;
        ``None``: the backend's ``tolerance.request``
        (:func:`solvers.tolerance.requested_tol`: 1e-9; ``pgs`` and the
        frictional-contact backends 1e-6, what they reach).
    max_iter
        Iteration cap (backend default if ``None``).
    warm_start
        A previous :class:`SolverResult`, an ``x`` (or ``z``) array, or a
        tuple ``(x, y)``; ignored with a warning by backends without warm start.
    time_limit
        Wall-time limit [s] where the backend supports one.
    **backend_settings
        Passed unchanged to the backend (e.g. ``polish=True`` for OSQP,
        ``omega=1.3`` for PGS).

    Returns
    -------
    SolverResult
        With residuals computed by the layer on the problem as given, and
        the layer's verdict (:mod:`solvers.verdict`).  A problem without
        unknowns or rows is solved by the layer (status ``optimal``, no backend call).
    """
    be = get_backend(backend)
    tol = requested_tol(be, tol)
    x0, y0 = _warm(warm_start)
    if max_iter is not None and not be.supports_max_iter:
        warnings.warn(
            f"backend {be.name!r} takes no iteration cap; max_iter is ignored", stacklevel=2
        )
    if time_limit is not None and not be.supports_time_limit:
        warnings.warn(
            f"backend {be.name!r} takes no time limit; time_limit is ignored", stacklevel=2
        )
    if x0 is not None and not be.supports_warm_start:
        warnings.warn(f"backend {be.name!r} has no warm start; warm_start is ignored", stacklevel=2)
        x0 = y0 = None
    if isinstance(problem, (FrictionalContact, GlobalFrictionalContact)):
        from solvers.fc_dispatch import solve_frictional

        opts = SolveOptions(tol, max_iter, x0, None, time_limit, dict(backend_settings))
        return solve_frictional(problem, be, opts, solve=solve, call=_call)
    if not isinstance(problem, (QP, LCP)):
        raise ProblemError(
            "problem",
            f"expected a solvers.QP, LCP, FrictionalContact or GlobalFrictionalContact, "
            f"got {type(problem).__name__}",
        )
    if x0 is not None and x0.shape != (problem.n,):
        raise ProblemError("warm_start", f"x has shape {x0.shape}, expected ({problem.n},)")
    if isinstance(problem, LCP):
        y0 = None  # an LCP has no separate multipliers: w follows from z
    elif y0 is not None and y0.shape != (problem.m,):
        raise ProblemError("warm_start", f"y has shape {y0.shape}, expected ({problem.m},)")
    if problem.n == 0 and (isinstance(problem, LCP) or problem.m == 0):
        return _empty(problem, be)
    opts = SolveOptions(tol, max_iter, x0, y0, time_limit, dict(backend_settings))
    if isinstance(problem, QP):
        return _solve_qp(problem, be, opts)
    return _solve_lcp(problem, be, opts)


def _route(problem: QP | LCP, be: Backend) -> tuple[str, ...]:
    """The form conversions of the route :func:`solvers.fitting.plan` gives, or its refusal."""
    answer = plan(be, problem)
    if not answer.ok:
        kind = answer.kinds[0] if answer.kinds else kind_of(problem)
        raise IncompatibleProblem(f"{answer.reason}; backends that fit: {_fitting(kind)}")
    return answer.conversions


def _to_lcp(qp: QP, how: str, be: Backend) -> tuple[LCP, Callable[[Vec], tuple[Vec, Vec | None]]]:
    """The LCP of ``qp`` by conversion ``how`` (a route's first step) and its map back."""
    if how == cv.BOUND_QP_TO_LCP:
        bound = cv.bound_qp_to_lcp(qp)
        if bound is None:  # the route was chosen because A is made of bound rows
            raise ProblemError("A", "is not made of distinct unit rows (bounds on variables)")
        return bound
    try:
        return cv.qp_to_dual_lcp(qp)
    except ProblemError as err:
        raise IncompatibleProblem(
            f"backend {be.name!r} takes LCPs; the dual LCP of this QP needs a positive definite "
            f"P ({err}); use a QP backend: {_fitting('rows_qp')}"
        ) from err


def _solve_qp(qp: QP, be: Backend, opts: SolveOptions) -> SolverResult:
    route = _route(qp, be)
    convs: list[str] = list(route[:1])
    t0 = time.perf_counter()
    if not route:
        scaled = cv.cost_scaled(qp) if be.equilibrate else None
        if scaled is None:
            raw = _call(lambda: be.solve_qp(qp, opts), qp.n)
            x, y = raw.x, raw.y
        else:
            qs, scale = scaled
            convs.append(cv.COST_SCALING)
            sopts = SolveOptions(
                opts.tol, opts.max_iter, opts.x0, scale.y0(opts.y0), opts.time_limit,
                opts.settings,
            )  # fmt: skip
            raw = _call(lambda: be.solve_qp(qs, sopts), qp.n)
            x, y = raw.x, scale.y(raw.y)
            raw.z_soc = scale.z_soc(raw.z_soc)
    else:
        lcp, recover = _to_lcp(qp, route[0], be)
        if route[0] == cv.QP_TO_DUAL_LCP:  # unknowns of another space: no warm start
            opts = SolveOptions(opts.tol, opts.max_iter, None, None, opts.time_limit, opts.settings)
        t_conv = time.perf_counter() - t0
        raw, more = _run_lcp(lcp, be, opts)
        convs.extend(more)
        raw.setup_time += t_conv
        x, y = recover(raw.x) if np.all(np.isfinite(raw.x)) else (np.full(qp.n, np.nan), None)
    finite = np.all(np.isfinite(x))
    res = qp_residuals(qp, x, y, raw.z_soc) if finite else _nan_residuals()
    obj = qp.objective(x) if finite else float("nan")
    judged = verdict(raw.status, res, opts.tol, be.tolerance.accuracy, qp.q)
    return SolverResult(
        x,
        y,
        judged.status,
        raw.message + judged.note,
        raw.iterations,
        raw.setup_time,
        raw.solve_time,
        obj,
        res,
        be.name,
        convs,
        z_soc=raw.z_soc,
        plausible=judged.plausible,
    )


def _nan_residuals() -> dict[str, float]:
    return {"primal": float("nan"), "dual": float("nan"), "complementarity": float("nan")}


def _empty(problem: QP | LCP, be: Backend) -> SolverResult:
    """The solution of a problem without unknowns (e.g. the dual of a step without rows)."""
    qp = isinstance(problem, QP)
    return SolverResult(
        np.zeros(0),
        np.zeros(0) if qp else None,
        "optimal",
        "empty problem (no unknowns): nothing to solve",
        0,
        0.0,
        0.0,
        0.0,
        {"primal": 0.0, "dual": 0.0, "complementarity": 0.0},
        be.name,
        w=None if qp else np.zeros(0),
    )


def _run_lcp(lcp: LCP, be: Backend, opts: SolveOptions) -> tuple[RawSolution, list[str]]:
    """Solve an LCP on an LCP backend the route chose, in the form the backend takes.

    A backend without box support gets the LCP's standard form: free rows
    eliminated, bounds shifted (normalisations of this instance, named in the
    result's conversions after the route's).
    """
    if be.supports_box_lcp:
        return _call(lambda: be.solve_lcp(lcp, opts), lcp.n), []
    convs: list[str] = []
    t0 = time.perf_counter()
    work, back = lcp, [lambda z: z]
    if lcp.free_rows.size:
        red = cv.mixed_lcp_to_lcp(work)
        work = red.lcp
        back.append(red.recover)
        convs.append(cv.MIXED_TO_LCP)
    if not work.is_standard:
        std, rec = cv.box_lcp_to_standard(work)
        work = std
        back.append(rec)
        convs.append(cv.BOX_TO_STANDARD)
    if convs:
        opts = SolveOptions(opts.tol, opts.max_iter, None, None, opts.time_limit, opts.settings)
    t_conv = time.perf_counter() - t0
    raw = _call(lambda: be.solve_lcp(work, opts), work.n)
    z = raw.x
    if np.all(np.isfinite(z)):
        for fn in reversed(back):
            z = fn(z)
    else:
        z = np.full(lcp.n, np.nan)
    raw.x = z
    raw.setup_time += t_conv
    return raw, convs


def _solve_lcp(lcp: LCP, be: Backend, opts: SolveOptions) -> SolverResult:
    route = _route(lcp, be)
    if not route:
        raw, convs = _run_lcp(lcp, be, opts)
    else:  # the one conversion of an LCP route: the QP of a symmetric PSD LCP
        t0 = time.perf_counter()
        qp, _ = cv.lcp_to_qp(lcp)
        t_conv = time.perf_counter() - t0
        raw = _call(lambda: be.solve_qp(qp, opts), qp.n)
        raw.setup_time += t_conv
        convs = [cv.LCP_TO_QP]
    z = raw.x
    finite = bool(np.all(np.isfinite(z)))
    w = lcp.w(z) if finite else np.full(lcp.n, np.nan)
    res = lcp_residuals(lcp, z) if finite else _nan_residuals()
    judged = verdict(raw.status, res, opts.tol, be.tolerance.accuracy, lcp.q)
    return SolverResult(
        z,
        None,
        judged.status,
        raw.message + judged.note,
        raw.iterations,
        raw.setup_time,
        raw.solve_time,
        float(z @ w) if finite else float("nan"),
        res,
        be.name,
        convs,
        w=w,
        plausible=judged.plausible,
    )
