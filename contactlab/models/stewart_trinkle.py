"""Stewart--Trinkle / Anitescu--Potra friction: exact-complementarity LCP (ArtiSynth notes §0.10).

Unknowns per contact: the normal impulse ``lambda_N,i``, the pyramid impulses
``beta_ij >= 0`` along ``d_ij = cos(2 pi j/k) t_i1 + sin(2 pi j/k) t_i2`` and a
slack ``s_i`` (the sliding speed).  With ``v = M^-1 (f + C^T lambda)``,
``C = [G; N; D; L]``, ``b = [g; c; 0; l]`` and ``E`` the ``(nc k, nc)`` matrix
with ``E_(ij),i = 1`` (ArtiSynth notes's ``E``), the system of ArtiSynth notes, §0.10 becomes

.. math::

    \\begin{pmatrix} w_C \\\\ w_s \\end{pmatrix} =
    \\begin{pmatrix} C M^{-1} C^T & \\bar E \\\\ \\bar E_\\mu & 0 \\end{pmatrix}
    \\begin{pmatrix} \\lambda \\\\ s \\end{pmatrix} +
    \\begin{pmatrix} C M^{-1} f - b \\\\ 0 \\end{pmatrix}

where ``bar E`` places ``E`` on the ``D`` rows (``w_D = D v + E s``) and
``bar E_mu`` gives ``w_s = mu lambda_N - E^T beta``.  Complementarity:
``lambda_G`` free (``w_G = G v - g = 0``), ``0 <= lambda_N ⟂ N v - c >= 0``,
``0 <= beta ⟂ D v + E s >= 0``, ``0 <= s ⟂ mu lambda_N - E^T beta >= 0``,
``0 <= lambda_L ⟂ L v - l >= 0``.  Sliding (``s > 0``) puts the impulse on
the cone boundary and on the directions most opposed to the slip (maximal
dissipation); sticking (``s = 0``) forces ``D v >= 0`` in every direction,
hence zero tangential velocity.  Unlike the Anitescu--Hart relaxation, the
normal rows stay ``N v = c`` when the contact is active: no lift-off.

These are the conditions of the Coulomb law with the ``k``-direction pyramid as
De Saxcé's complementarity problem (:mod:`solvers.frictional`): a
frictional-contact backend (``nsgs``, ``apgd``, ``admm``) solves the step in that
form (:mod:`contactlab.models.fc_route`; velocities equal to Lemke's, tested).
The matrix is not symmetric and has a zero diagonal block, so neither a QP
backend nor Gauss--Seidel applies to the LCP itself; Lemke's method solves it (the joint rows
are eliminated by the solver layer's Schur complement, ArtiSynth notes §0.7).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.contact.friction_cone import pyramid_rows
from contactlab.memory import ModelMemory
from contactlab.models.base import SolvingModel, make_solution, register_model
from contactlab.models.common import (
    Array,
    MassInverse,
    check_directions,
    pyramid_sum,
    pyramid_to_tangent,
    stack_rows,
)
from contactlab.problem import StepProblem, StepSolution
from solvers import LCP
from solvers.frictional import problem_kind


@register_model("stewart-trinkle")
class StewartTrinkle(SolvingModel):
    """Exact complementarity friction LCP with the sliding-speed slack.

    Options
    -------
    directions : number of pyramid directions (even, >= 4); ``None`` uses the scene's.
    """

    forms = ("lcp",)
    defaults = {"directions": None}

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_directions(options["directions"])

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        # last: the Coulomb law with the pyramid for the frictional-contact backends
        return [("pivot_lcp",), (problem_kind("coulomb", "pyramid"),)]

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        d = problem
        k = int(self.options["directions"] or problem.directions)
        if self.route[0].startswith("fc_"):
            # imported here: fc_route builds on box_friction, which imports the models
            from contactlab.models.fc_route import solve_as_fc

            return solve_as_fc(self, problem, cache, "coulomb", "pyramid", k)
        nc = problem.n_contacts
        D = pyramid_rows(d.T, k)
        rows = stack_rows(
            problem.n,
            ("G", d.G, d.g, "free"),
            ("N", d.N, d.c, "nonneg"),
            ("F", D, np.zeros(D.shape[0]), "nonneg"),
            ("L", d.L, d.l, "nonneg"),
        )
        minv = MassInverse(problem.M)
        W = minv.delassus(rows.C)
        q = np.asarray(rows.C @ minv.vec(problem.f)) - rows.b
        S = pyramid_sum(nc, k)
        n_sl, f_sl = rows.slices["N"], rows.slices["F"]
        couple = sp.lil_matrix((rows.m, nc))
        couple[f_sl, :] = S.T
        cone = sp.lil_matrix((nc, rows.m))
        cone[:, n_sl] = sp.diags(d.mu)
        cone[:, f_sl] = -S
        M_lcp = sp.bmat([[W, couple.tocsr()], [cone.tocsr(), None]], format="csr")
        q_lcp = np.concatenate([q, np.zeros(nc)])
        lo = np.concatenate([rows.lo, np.zeros(nc)])
        res = self.run(LCP(M_lcp, q_lcp, lo, np.full(rows.m + nc, np.inf)))
        lam = res.x[: rows.m]
        v = minv.vec(problem.f + np.asarray(rows.C.T @ lam))
        lambda_T = pyramid_to_tangent(rows.part(lam, "F"), k)
        sol = make_solution(self, problem, v, rows, lam, lambda_T)
        return replace(sol, report=StewartTrinkleReport(sliding_speed=res.x[rows.m :]))


@dataclass(frozen=True)
class StewartTrinkleReport:
    """What a Stewart--Trinkle step reports (``StepSolution.report``).

    sliding_speed : (nc,) the LCP's slack per contact, the speed of sliding [m/s]
        (zero where the contact sticks).
    """

    sliding_speed: Array
