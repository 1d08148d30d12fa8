"""Anitescu--Hart single-QP friction (Sueda's notes, §1.13, eq. (1.88)) in dual and primal form.

Dual (impulses), pyramid cone with ``k`` directions
``d_ij = cos(2 pi j/k) t_i1 + sin(2 pi j/k) t_i2`` (rows ``D``)::

    min 1/2 lam^T C M^-1 C^T lam + lam^T (C M^-1 f - b),  C = [G; N; D; L], b = [g; c; 0; l]
    s.t. alpha >= 0, beta >= 0, lambda_L >= 0, E lam >= 0   (mu_i alpha_i - sum_j beta_ij >= 0)

(Sueda's notes, eqs. (1.85)-(1.88); ``lambda_G`` free).  ``v = M^-1 (f + C^T lam)``.

Primal (velocities).  The Lagrangian dual of

    min 1/2 v^T M v - f^T v  s.t.  G v = g,  L v >= l,
        N_i v + mu_i d_ij^T v >= c_i   for every contact i and direction j

has multipliers ``gamma_ij >= 0`` with ``M v = f + sum gamma_ij (N_i + mu_i d_ij)^T``,
i.e. ``alpha_i = sum_j gamma_ij`` and ``beta_ij = mu_i gamma_ij``, so
``sum_j beta_ij = mu_i alpha_i``.  For even ``k`` the pyramid is symmetric
(``0`` lies in the hull of the ``d_ij``), so the force cone
``{alpha n + sum beta_j d_j : sum beta_j <= mu alpha}`` equals
``{... : sum beta_j = mu alpha}``: the two problems have the same velocities
(tested by solving both).  The constraint rows say each contact separates at
least ``mu_i`` times its tangential speed along every direction: the convex
relaxation's known artefact, a sliding body lifts off at ``N v = mu |T v|``.

With a frictional-contact backend (``nsgs``, ``apgd``, ``admm``, ``ipm``) either cone is
posed as the cone complementarity problem on the local problem
(:mod:`contactlab.models.fc_route`), the ``form`` option then being moot.

Exact cone (``cone="soc"``): the dual has ``||lambda_T,i|| <= mu_i alpha_i``
(:class:`solvers.SOCBlocks`), the primal (whose cone is the dual cone)
``mu_i ||T_i v|| <= N_i v - c_i``, posed with slack variables
``s_n = N v - c`` and ``s_t = mu T v`` and unit cones ``||s_t|| <= s_n``;
then ``alpha = -y_n`` and ``lambda_T = -mu y_t``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.contact.friction_cone import pyramid_rows
from contactlab.errors import ConfigurationError
from contactlab.memory import ModelMemory
from contactlab.models.base import SolvingModel, make_solution, register_model
from contactlab.models.common import (
    MassInverse,
    check_cone,
    check_directions,
    check_form,
    contact_rows,
    pyramid_sum,
    pyramid_to_tangent,
    stack_rows,
)
from contactlab.models.spin import SPIN_DEFAULTS, check_spin_options, solve_rigid, spin_active
from contactlab.problem import StepProblem, StepSolution
from solvers import QP, SOCBlocks
from solvers.frictional import problem_kind


@register_model("anitescu-hart")
class AnitescuHart(SolvingModel):
    """The single-QP friction model of Anitescu and Hart.

    Options
    -------
    form : ``"dual"`` (impulses, eq. (1.88), default) or ``"primal"`` (velocities).
    cone : ``"pyramid"`` (``directions`` sides, default) or ``"soc"`` (exact cone).
    directions : number of pyramid directions (even, >= 4); ``None`` uses the scene's.
    torsion, rolling, spin_cone : torsional and rolling friction (MuJoCo's ``condim`` 4 and
        6, coefficients in metres; :mod:`contactlab.models.spin`), with ``cone="soc"``; the
        widened cone goes to the SOC QP backends or to ``nsgs``, ``apgd``, ``admm``
        and ``padmm``.
    """

    forms = ("qp",)
    defaults = {"form": "dual", "cone": "pyramid", "directions": None, **SPIN_DEFAULTS}

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_form(options["form"])
        check_directions(options["directions"])
        check_cone(options["cone"], ("pyramid", "soc"))
        check_spin_options(options)
        if spin_active(options) and options["cone"] != "soc":
            raise ConfigurationError(
                "model 'anitescu-hart': torsion and rolling widen the exact cone; use "
                f"cone='soc' (got cone={options['cone']!r})"
            )

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        if spin_active(options):
            return [("soc_qp",), ("fc_wide_ccp",)]
        # last: the cone complementarity problem itself, for the frictional-contact backends
        ccp = (problem_kind("ccp", options["cone"]),)
        if options["cone"] == "soc":
            return [("soc_qp",), ccp]
        return [("qp",) if options["form"] == "primal" else ("rows_qp",), ccp]

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        if spin_active(self.options):
            return solve_rigid(self, problem, "ccp", cache)
        k = int(self.options["directions"] or problem.directions)
        soc = self.options["cone"] == "soc"
        if self.route[0].startswith("fc_"):
            # imported here: fc_route builds on box_friction, which imports this module
            from contactlab.models.fc_route import solve_as_fc

            return solve_as_fc(self, problem, cache, "ccp", self.options["cone"], k)
        if self.options["form"] == "dual":
            return self._dual(problem, k, soc)
        return self._primal(problem, k, soc)

    def _dual(self, problem: StepProblem, k: int, soc: bool) -> StepSolution:
        d = problem
        nc = problem.n_contacts
        F = d.T if soc else pyramid_rows(d.T, k)
        rows = stack_rows(
            problem.n,
            ("G", d.G, d.g, "free"),
            ("N", d.N, d.c, "nonneg"),
            ("F", F, np.zeros(F.shape[0]), "free" if soc else "nonneg"),
            ("L", d.L, d.l, "nonneg"),
        )
        minv = MassInverse(problem.M)
        P = minv.delassus(rows.C)
        q = np.asarray(rows.C @ minv.vec(problem.f)) - rows.b
        bounded = np.flatnonzero(np.isfinite(rows.lo))
        A_blocks = [sp.identity(rows.m, format="csr")[bounded]]
        lows, ups = [rows.lo[bounded]], [rows.hi[bounded]]
        n_idx = np.arange(rows.slices["N"].start, rows.slices["N"].stop)
        f_idx = np.arange(rows.slices["F"].start, rows.slices["F"].stop)
        cones = None
        if soc:
            cones = SOCBlocks(n_idx, f_idx.reshape(nc, 2), d.mu)
        elif nc:
            # E lam >= 0 (Sueda's notes, eq. (1.86)): mu_i alpha_i - sum_j beta_ij >= 0
            E = sp.lil_matrix((nc, rows.m))
            E[:, n_idx] = sp.diags(d.mu)
            E[:, f_idx] = -pyramid_sum(nc, k)
            A_blocks.append(sp.csr_matrix(E))
            lows.append(np.zeros(nc))
            ups.append(np.full(nc, np.inf))
        A = sp.vstack(A_blocks, format="csc")
        qp = QP(P, q, A, np.concatenate(lows), np.concatenate(ups), soc=cones)
        res = self.run(qp)
        lam = res.x
        v = minv.vec(problem.f + np.asarray(rows.C.T @ lam))
        friction = rows.part(lam, "F")
        lambda_T = friction if soc else pyramid_to_tangent(friction, k)
        return make_solution(self, problem, v, rows, lam, lambda_T)

    def _primal(self, problem: StepProblem, k: int, soc: bool) -> StepSolution:
        d = problem
        if soc:
            return self._primal_soc(problem)
        nc, n = problem.n_contacts, problem.n
        mu_rep = np.repeat(d.mu, k)
        expand = sp.kron(sp.identity(nc, format="csr"), np.ones((k, 1)), format="csr")
        R = sp.csr_matrix(expand @ d.N + sp.diags(mu_rep) @ pyramid_rows(d.T, k))
        rows = stack_rows(
            n,
            ("G", d.G, d.g, "free"),
            ("R", R, expand @ d.c, "nonneg"),
            ("L", d.L, d.l, "nonneg"),
        )
        upper = np.where(np.isfinite(rows.lo), np.inf, rows.b)
        qp = (
            QP(problem.M, -problem.f, rows.C, rows.b, upper)
            if rows.m
            else QP(problem.M, -problem.f)
        )
        res = self.run(qp)
        lam = -res.y if res.y is not None else np.full(rows.m, np.nan)
        gamma = rows.part(lam, "R")
        alpha = gamma.reshape(nc, k).sum(axis=1)
        lambda_T = pyramid_to_tangent(mu_rep * gamma, k)
        full = np.concatenate([rows.part(lam, "G"), alpha, rows.part(lam, "L")])
        out = contact_rows(problem)
        return make_solution(self, problem, res.x, out, full, lambda_T)

    def _primal_soc(self, problem: StepProblem) -> StepSolution:
        d = problem
        nc, n = problem.n_contacts, problem.n
        mg, ml = d.G.shape[0], d.L.shape[0]
        P = sp.block_diag([problem.M, sp.csc_matrix((3 * nc, 3 * nc))], format="csc")
        q = np.concatenate([-problem.f, np.zeros(3 * nc)])
        muT = sp.diags(np.repeat(d.mu, 2)) @ d.T
        A = sp.bmat(
            [
                [d.G, _zeros(mg, nc), _zeros(mg, 2 * nc)],
                [d.N, -sp.identity(nc), _zeros(nc, 2 * nc)],
                [muT, _zeros(2 * nc, nc), -sp.identity(2 * nc)],
                [d.L, _zeros(ml, nc), _zeros(ml, 2 * nc)],
            ],
            format="csc",
        )
        low = np.concatenate([d.g, d.c, np.zeros(2 * nc), d.l])
        up = np.concatenate([d.g, d.c, np.zeros(2 * nc), np.full(ml, np.inf)])
        cones = SOCBlocks(n + np.arange(nc), n + nc + np.arange(2 * nc).reshape(nc, 2), np.ones(nc))
        res = self.run(QP(P, q, A, low, up, soc=cones))
        y = res.y if res.y is not None else np.full(A.shape[0], np.nan)
        y_G, y_n, y_t, y_L = np.split(y, np.cumsum([mg, nc, 2 * nc]))
        lambda_T = -np.repeat(d.mu, 2) * y_t
        rows = contact_rows(problem)
        lam = -np.concatenate([y_G, y_n, y_L])
        return make_solution(self, problem, res.x[:n], rows, lam, lambda_T)


def _zeros(rows: int, cols: int) -> sp.csr_matrix:
    return sp.csr_matrix((rows, cols))
