"""``admm``: ADMM with a residual-balancing penalty
(:func:`solvers.numerics.fc_methods.admm`, three-row and wide contacts).
"""

from __future__ import annotations

import time

import numpy as np

from solvers.backends.base import SolveOptions
from solvers.backends.fc_base import (
    FrictionBackend,
    _codes,
    _cones,
    _csr,
    _no_settings,
    _start,
    _status,
)
from solvers.errors import ProblemError
from solvers.frictional import FrictionalContact
from solvers.result import RawSolution


class ADMMBackend(FrictionBackend):
    """ADMM with an adaptive penalty."""

    accepts_fc_wide = True
    name = "admm"
    kind = "admm"
    description = "ADMM with adaptive penalty (CCP and Coulomb)"

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        from solvers.numerics.fc_methods import admm

        settings = dict(opts.settings)
        diag = problem.W.diagonal()
        rho = float(settings.pop("rho", 1e-3 * float(np.mean(diag)) if diag.size else 1.0))
        _no_settings(self.name, settings, ("rho",))
        if not rho > 0.0:
            raise ProblemError("rho", f"the penalty must be positive, got {rho}")
        cap = 5000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, _ = _codes(problem)
        r = _start(problem, opts)
        t1 = time.perf_counter()
        it, res, rho_end = admm(
            *_csr(problem), problem.q, law, _cones(problem), r,
            rho, opts.tol, cap,
        )  # fmt: skip
        t2 = time.perf_counter()
        msg = (
            f"admm: natural-map residual {res:.3e} after {it} iterations "
            f"(tol {opts.tol:g}, final rho {rho_end:.3g})"
        )
        return RawSolution(
            r, None, _status(res, opts.tol, it >= cap), msg, int(it), t1 - t0, t2 - t1
        )
