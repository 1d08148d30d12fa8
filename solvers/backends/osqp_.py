"""OSQP through its native API (osqp >= 1.0: ``osqp.OSQP().setup(P, q, A, l, u, **settings)``).

OSQP's form and multiplier sign are the layer's own, so nothing is converted.
``tol`` sets ``eps_abs`` and ``eps_rel``; every other keyword passed to
:func:`solvers.solve` goes to ``setup`` unchanged (``polish=True``,
``rho=...``, ``scaling=...``).
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from solvers.backends.base import Backend, SolveOptions
from solvers.problems import QP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance


@contextmanager
def _c_stdout_silenced() -> Iterator[None]:
    """Send what OSQP's C code prints (its set-up errors ignore ``verbose``) to /dev/null.

    The result's message says the same in one line.
    """
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no file descriptor 1 (an embedded interpreter)
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    try:
        # the Python wrapper may print through sys.stdout rather than the C library
        with contextlib.redirect_stdout(io.StringIO()):
            yield
    finally:
        _flush_c_stdout()  # C stdio buffers: what it printed must reach /dev/null, not later
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


def _flush_c_stdout() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to reach (not POSIX)
        pass


#: OSQP's set-up error codes (osqp/include/public/osqp_api_constants.h) that say the data is bad
_SETUP_ERRORS = {
    1: "the problem data are invalid (check the shapes and that l <= u)",
    4: "P is not positive semi-definite (OSQP finds the problem non-convex); a convex QP "
    "needs a positive semi-definite cost matrix",
}


class OSQPBackend(Backend):
    """Operator-splitting QP solver (ADMM)."""

    name = "osqp"
    description = "OSQP, operator splitting (ADMM), native API"
    kind = "admm"
    required_modules = ("osqp",)
    accepts_qp = True
    supports_warm_start = True
    supports_time_limit = True
    detects_infeasibility = True
    tolerance = Tolerance(1e-5)  # asked for 1e-9 by default: polishing gets there
    STATUS_MAP = {
        "solved": "optimal",
        "solved inaccurate": "optimal_inaccurate",
        "primal infeasible": "infeasible",
        "primal infeasible inaccurate": "infeasible",
        "dual infeasible": "unbounded",
        "dual infeasible inaccurate": "unbounded",
        "maximum iterations reached": "max_iterations",
        "run time limit reached": "time_limit",
        "problem non convex": "numerical_error",
        "interrupted": "numerical_error",
        "unsolved": "numerical_error",
    }

    def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
        import osqp

        settings: dict[str, Any] = {
            "verbose": False,
            "eps_abs": opts.tol,
            "eps_rel": opts.tol,
            "polish": False,
        }
        if opts.max_iter is not None:
            settings["max_iter"] = int(opts.max_iter)
        if opts.time_limit is not None:
            settings["time_limit"] = float(opts.time_limit)
        settings.update(opts.settings)
        # OSQP reads the upper triangle of P and cannot represent infinite bounds beyond 1e30.
        P = qp.P_upper
        l = np.maximum(qp.l, -osqp.constant("OSQP_INFTY"))
        u = np.minimum(qp.u, osqp.constant("OSQP_INFTY"))
        t0 = time.perf_counter()
        solver = osqp.OSQP()
        try:
            with _c_stdout_silenced():
                solver.setup(P, qp.q, qp.A, l, u, **settings)
        except Exception as err:  # osqp.OSQPException (or ValueError) from set-up
            if type(err).__name__ != "OSQPException":
                raise
            code = err.args[0] if err.args else None
            known = _SETUP_ERRORS.get(code) if isinstance(code, int) else None
            reason = known or f"set-up failed with OSQP error {code}"
            return RawSolution(
                np.full(qp.n, np.nan),
                np.full(qp.m, np.nan),
                "numerical_error",
                f"osqp: {reason}",
            )
        if opts.x0 is not None or opts.y0 is not None:
            solver.warm_start(x=opts.x0, y=opts.y0)
        t1 = time.perf_counter()
        try:
            res = solver.solve(raise_error=False)
        except TypeError:  # osqp < 1.0 has no raise_error and never raises on status
            res = solver.solve()
        t2 = time.perf_counter()
        status_text = str(res.info.status)
        status = self.map_status(status_text)
        x = np.asarray(res.x, dtype=np.float64)
        y = np.asarray(res.y, dtype=np.float64)
        if status in ("infeasible", "unbounded"):
            x = np.full(qp.n, np.nan)
            y = np.full(qp.m, np.nan)
        return RawSolution(
            x, y, status, f"osqp: {status_text}", int(res.info.iter), t1 - t0, t2 - t1
        )
