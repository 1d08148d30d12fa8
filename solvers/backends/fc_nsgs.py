"""``nsgs``: block nonsmooth Gauss--Seidel with exact local solvers
(:func:`solvers.numerics.fc_kernels.nsgs`; wide cones :func:`solvers.numerics.fc_wide.nsgs_wide`).
"""

from __future__ import annotations

import time

from solvers.backends.base import SolveOptions
from solvers.backends.fc_base import (
    FrictionBackend,
    _codes,
    _csr,
    _no_settings,
    _start,
    _status,
    _wide,
)
from solvers.errors import ProblemError
from solvers.frictional import FrictionalContact
from solvers.result import RawSolution


class NSGSBackend(FrictionBackend):
    """Block nonsmooth Gauss--Seidel with exact local solvers."""

    accepts_fc_wide = True
    name = "nsgs"
    description = "nonsmooth block Gauss-Seidel, exact local solvers (CCP and Coulomb)"

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        from solvers.numerics.fc_kernels import nsgs

        settings = dict(opts.settings)
        omega = float(settings.pop("omega", 1.0))
        direct = bool(settings.pop("direct", False))
        _no_settings(self.name, settings, ("omega", "direct"))
        if not 0.0 < omega < 2.0:
            raise ProblemError("omega", f"the relaxation factor must lie in (0, 2), got {omega}")
        cap = 10000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, kind = _codes(problem)
        r = _start(problem, opts)
        if problem.is_wide:
            from solvers.numerics.fc_wide import nsgs_wide

            if direct:
                raise ProblemError(
                    "direct", "wide cones take the shifted sweep only; drop direct=True"
                )
            t1 = time.perf_counter()
            sweeps, res = nsgs_wide(
                *_csr(problem), problem.q, law, *_wide(problem), problem.row_lo, problem.nc, r,
                omega, opts.tol, cap,
            )  # fmt: skip
        else:
            args = (*_csr(problem), problem.q, law, kind, problem.mu, problem.dirs, problem.row_lo)
            t1 = time.perf_counter()
            sweeps, res = nsgs(*args, problem.nc, r, omega, opts.tol, cap, direct)
        t2 = time.perf_counter()
        msg = f"nsgs: natural-map residual {res:.3e} after {sweeps} sweeps (tol {opts.tol:g})"
        status = _status(res, opts.tol, sweeps >= cap)
        return RawSolution(r, None, status, msg, int(sweeps), t1 - t0, t2 - t1)
