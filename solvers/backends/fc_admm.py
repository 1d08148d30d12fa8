"""``admm``: ADMM with a residual-balancing penalty
(:func:`solvers.numerics.fc_methods.admm`, three-row and wide contacts).

As ``apgd``, a problem's free scalar rows (joints, ``row_lo = -inf``) are eliminated first
by their Schur complement (:class:`~solvers.backends.fc_base.FreeRows`): the iterations run
on the contacts and bounded rows alone, the stopping test is the whole problem's and the
joint impulses follow from the contacts'; the default penalty is then taken from the kept
rows' matrix.  Dependent free rows stay in the iteration.
"""

from __future__ import annotations

import time

import numpy as np

from solvers.backends.base import SolveOptions
from solvers.backends.fc_base import (
    FreeRows,
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
        given = settings.pop("rho", None)
        _no_settings(self.name, settings, ("rho",))
        if given is not None and not float(given) > 0.0:
            raise ProblemError("rho", f"the penalty must be positive, got {given}")
        cap = 5000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, _ = _codes(problem)
        r = _start(problem, opts)
        free = FreeRows.of(problem)
        csr = _csr(problem) if free is None else free.csr
        rho = float(given) if given is not None else _default_rho(*csr)
        t1 = time.perf_counter()
        if free is None:
            it, res, rho_end = admm(
                *csr, problem.q, law, _cones(problem), r,
                rho, opts.tol, cap,
            )  # fmt: skip
            eliminated = ""
        else:
            rk = free.start(r)
            it, _, rho_end = admm(*csr, free.q, law, free.cones, rk, rho, free.tol(opts.tol), cap)
            r, res = free.whole(rk, law)
            eliminated = f", {free.free.size} free rows eliminated"
        t2 = time.perf_counter()
        msg = (
            f"admm: natural-map residual {res:.3e} after {it} iterations "
            f"(tol {opts.tol:g}, final rho {rho_end:.3g}{eliminated})"
        )
        return RawSolution(
            r, None, _status(res, opts.tol, it >= cap), msg, int(it), t1 - t0, t2 - t1
        )


def _default_rho(ptr: np.ndarray, idx: np.ndarray, val: np.ndarray) -> float:
    """The default penalty: 1e-3 times the mean diagonal of the CSR matrix iterated on
    (1 without rows)."""
    n = ptr.size - 1
    if n <= 0:
        return 1.0
    rows = np.repeat(np.arange(n), np.diff(ptr))
    diag = np.zeros(n)
    np.add.at(diag, idx[idx == rows], val[idx == rows])
    return 1e-3 * float(np.mean(diag))
