"""Frictionless contact: the contact QP with joints and limits (Sueda's notes, eqs. (1.79)-(1.83)).

Primal form (variables ``v``)::

    min 1/2 v^T M v - f^T v   s.t.  G v = g,  N v >= c,  L v >= l

posed as ``QP(P=M, q=-f, A=[G; N; L], l=[g; c; l], u=[g; inf; inf])``; the
impulses are minus the OSQP multipliers, ``lambda = -y``.

Dual form (impulses ``lambda = (lambda_G, lambda_N, lambda_L)``), derived from
the Lagrangian ``1/2 v'Mv - f'v - lambda'(C v - b)`` with ``C = [G; N; L]``::

    min 1/2 lambda^T C M^-1 C^T lambda + lambda^T (C M^-1 f - b)
    s.t. lambda_N >= 0, lambda_L >= 0   (lambda_G free)

and ``v = M^-1 (f + C^T lambda)`` (Sueda's notes, eq. (1.84) with the sign of
``N^T alpha`` corrected).  ``M^-1`` is formed block by block for block-diagonal
``M`` (maximal coordinates) and by one sparse LU otherwise.

With a frictional-contact backend (``nsgs``, ``apgd``, ``admm``) the dual is
solved as a local problem whose rows are all scalar rows (``G`` bilateral,
``N`` and ``L`` unilateral; :func:`contactlab.models.fc_route.frictionless_step`),
the ``form`` option then being moot.

With no contacts and no limits the primal is an equality QP (the KKT system
of Sueda's notes, eq. (1.73)) that the ``kkt`` backend solves directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.memory import ModelMemory, recall
from contactlab.models.base import SolvingModel, make_solution, register_model
from contactlab.models.common import (
    Array,
    MassInverse,
    Rows,
    check_form,
    contact_rows,
)
from contactlab.problem import StepProblem, StepSolution
from solvers import QP, SolverResult


@dataclass
class ContactSolve:
    """Velocities and impulses of one contact-QP solve."""

    v: Array
    lam: Array
    rows: Rows
    result: SolverResult


class ContactQP:
    """The frictionless contact QP of one step, set up once and solved for any free momentum.

    The rows, and in dual form the Delassus matrix ``C M^-1 C^T``, depend only
    on the step, so Staggered Projections reuses them across its iterations.
    Raises :class:`IncompatibleError` if the model's backend cannot take this
    step's problem (e.g. ``kkt`` with contacts or limits).
    """

    def __init__(
        self, model: SolvingModel, problem: StepProblem, form: str, minv: MassInverse | None
    ) -> None:
        self.model, self.form, self.M, self.minv = model, form, problem.M, minv
        self.rows = rows = contact_rows(problem)
        if np.any(np.isfinite(rows.lo)):
            kind = "qp" if form == "primal" else "bound_qp"
            model.require(kind, f"the {form} contact QP with contacts or limits")
        if form == "dual":
            if minv is None:
                raise ValueError("the dual contact QP needs the mass inverse")
            self.P = minv.delassus(rows.C)
            self.bounded = np.flatnonzero(np.isfinite(rows.lo))
            self.A = sp.identity(rows.m, format="csr")[self.bounded]

    def qp(self, f: Array) -> QP:
        """The primal or dual (Sueda's notes, eq. (1.83)) contact QP for free momentum ``f``."""
        rows = self.rows
        if self.form == "primal":
            if rows.m == 0:
                return QP(self.M, -f)
            return QP(self.M, -f, rows.C, rows.b, np.where(np.isfinite(rows.lo), np.inf, rows.b))
        assert self.minv is not None
        q = np.asarray(rows.C @ self.minv.vec(f)) - rows.b
        if self.bounded.size == 0:
            return QP(self.P, q)
        return QP(self.P, q, self.A, rows.lo[self.bounded], rows.hi[self.bounded])

    def solve(self, f: Array, previous: tuple[Array, Array] | None = None) -> ContactSolve:
        """Solve for momentum ``f``; ``previous`` ``(v, lambda)`` warm-starts if shapes match."""
        rows, n = self.rows, self.M.shape[0]
        warm: Any = None
        if previous is not None and previous[0].shape == (n,) and previous[1].shape == (rows.m,):
            warm = (previous[0], -previous[1]) if self.form == "primal" else previous[1]
        res = self.model.run(self.qp(f), warm)
        if self.form == "primal":
            lam = -res.y if res.y is not None else np.full(rows.m, np.nan)
            return ContactSolve(res.x, lam, rows, res)
        assert self.minv is not None
        v = self.minv.vec(f + np.asarray(rows.C.T @ res.x))
        return ContactSolve(v, res.x, rows, res)


@register_model("frictionless")
class Frictionless(SolvingModel):
    """The contact QP without friction.

    Options
    -------
    form : ``"primal"`` (velocities, default) or ``"dual"`` (impulses).
    """

    forms = ("qp",)
    defaults = {"form": "primal"}

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_form(options["form"])

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        # Equality-only problems (joints alone) fit every backend, kkt included;
        # a step with contacts or limits is checked again when it is solved.
        # Last: the frictional-contact backends, on a local problem of scalar rows.
        return [("eq_qp",), ("fc_ccp_soc",)]

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        if self.route[0].startswith("fc_"):
            from contactlab.models.fc_route import solve_frictionless_as_fc

            return solve_frictionless_as_fc(self, problem, cache)
        d = problem
        form = self.options["form"]
        minv = MassInverse(problem.M) if form == "dual" else None
        key = f"frictionless:{form}"
        sol = ContactQP(self, problem, form, minv).solve(problem.f, recall(cache, key, tuple))
        cache[key] = (sol.v, sol.lam)
        lambda_T = np.zeros(d.T.shape[0])
        return make_solution(self, problem, sol.v, sol.rows, sol.lam, lambda_T)
