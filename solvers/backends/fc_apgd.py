"""``apgd``: Nesterov's accelerated projected gradient with restart
(:func:`solvers.numerics.fc_methods.apgd`, three-row and wide contacts).

A problem's free scalar rows (joints, ``row_lo = -inf``) are eliminated first by their Schur
complement (:class:`~solvers.backends.fc_base.FreeRows`): the iterations run on the contacts
and bounded rows alone, whose matrix is the Delassus matrix of the joints' tangent space
(reduced coordinates' conditioning instead of the joints' stiffness), the stopping test is
the whole problem's and the joint impulses follow from the contacts' by the factorisation.
Dependent free rows (a singular ``W_FF``) stay in the iteration.
"""

from __future__ import annotations

import time

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
from solvers.frictional import FrictionalContact
from solvers.result import RawSolution


class APGDBackend(FrictionBackend):
    """Accelerated projected gradient (Nesterov) with adaptive step and restart."""

    accepts_fc_wide = True
    name = "apgd"
    description = "accelerated projected gradient with restart (CCP; Coulomb by a fixed point)"

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        from solvers.numerics.fc_methods import apgd

        _no_settings(self.name, dict(opts.settings), ())
        cap = 20000 if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        law, _ = _codes(problem)
        r = _start(problem, opts)
        free = FreeRows.of(problem)
        t1 = time.perf_counter()
        if free is None:
            it, res = apgd(
                *_csr(problem), problem.q, law, _cones(problem), r,
                opts.tol, cap,
            )  # fmt: skip
            eliminated = ""
        else:
            rk = free.start(r)
            it, _ = apgd(*free.csr, free.q, law, free.cones, rk, free.tol(opts.tol), cap)
            r, res = free.whole(rk, law)
            eliminated = f"; {free.free.size} free rows eliminated"
        t2 = time.perf_counter()
        msg = (
            f"apgd: natural-map residual {res:.3e} after {it} iterations "
            f"(tol {opts.tol:g}{eliminated})"
        )
        return RawSolution(
            r, None, _status(res, opts.tol, it >= cap), msg, int(it), t1 - t0, t2 - t1
        )
