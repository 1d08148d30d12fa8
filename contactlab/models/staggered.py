"""Staggered Projections (seed 000, §2.11, Alg. 7): alternate a contact QP and a friction QP.

Each outer iteration

1. **contact QP** (eq. (2.109)): with the friction impulse ``lambda_F`` frozen,
   solve the frictionless contact QP (joints ``G``, contacts ``N``, limits
   ``L``) for the free momentum ``f + F^T lambda_F``, giving ``v`` and the
   impulses ``lambda_C = (lambda_G, lambda_N, lambda_L)``;
2. **convergence check**: stop when the changes of the contact impulse
   ``C^T lambda_C`` and of the friction impulse ``F^T lambda_F`` since the
   previous iteration are both at most ``tol`` times the total impulse, all
   measured in the ``M^{-1}`` norm ``||x||_{M^-1} = sqrt(x^T M^-1 x)`` (the
   velocity change they cause, in kinetic-energy units), or after
   ``max_outer`` iterations (status ``max_iterations``);
3. **friction QP** (eq. (2.110)): with ``lambda_N`` frozen, find the friction
   impulse of maximal dissipation in the cone of radius ``mu lambda_N``:
   ``min 1/2 x^T K M^-1 K^T x + x^T (K M^-1 f_C - [g; 0])`` over
   ``x = (lambda_G', lambda_F)``, ``K = [G; F]``, ``f_C = f + N^T lambda_N +
   L^T lambda_L``; the joint rows are re-solved with the friction so the
   dissipation is measured on velocities that satisfy the joints.

Cones: ``"pyramid"`` (``F = D``, ``beta >= 0``, ``sum_j beta_ij <= mu_i lambda_N,i``),
``"box"`` (``F = T``, ``|lambda_T| <= mu lambda_N`` per tangent row, eq. (2.110) as
printed) or ``"soc"`` (``F = T``, ``||lambda_T,i|| <= mu_i lambda_N,i``).  A fixed point
satisfies the normal complementarity and, for the friction, the KKT conditions
of the friction QP, which for the pyramid are exactly the Stewart--Trinkle
conditions (``s`` = multiplier of the cone row), so both give the same
velocities.  The friction impulse is kept in ``cache`` and warm-starts the
next step (seed 000, §2.11).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.contact.friction import pyramid_rows
from contactlab.models.anitescu_hart import check_cone
from contactlab.models.base import register_model
from contactlab.models.box_friction import bounded_friction_qp, check_outer
from contactlab.models.common import (
    Array,
    MassInverse,
    check_directions,
    check_friction_data,
    pyramid_sum,
    pyramid_to_tangent,
    stack_rows,
    step_data,
)
from contactlab.models.compat import SolvingModel
from contactlab.models.frictionless import ContactQP, ContactSolve, check_form, make_solution
from contactlab.problem import StepProblem, StepSolution
from solvers import QP

_CACHE = "staggered-projections:friction"


@register_model("staggered-projections")
class StaggeredProjections(SolvingModel):
    """Alternating contact and friction QPs until the impulses stop changing.

    Options
    -------
    cone : ``"pyramid"`` (default), ``"box"`` or ``"soc"``.
    directions : pyramid directions (even, >= 4); ``None`` uses the scene's.
    form : form of the contact QP, ``"dual"`` (impulses, eq. (2.109), default) or ``"primal"``.
    tol : relative tolerance of the ``M^-1``-norm stopping test, default 1e-6.
    max_outer : cap on outer iterations, default 100.
    """

    forms = ("qp",)
    defaults = {
        "cone": "pyramid",
        "directions": None,
        "form": "dual",
        "tol": 1e-6,
        "max_outer": 100,
    }

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_directions(options["directions"])
        check_cone(options["cone"], ("pyramid", "box", "soc"))
        check_form(options["form"])
        check_outer(options)

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        contact = "qp" if options["form"] == "primal" else "bound_qp"
        friction = {"pyramid": "rows_qp", "box": "box_qp", "soc": "soc_qp"}[options["cone"]]
        return [(contact, friction)]

    def solve(self, problem: StepProblem, cache: dict[str, Any]) -> StepSolution:
        d = step_data(problem)
        cone = self.options["cone"]
        k = int(self.options["directions"] or problem.directions)
        check_friction_data(problem, k if cone == "pyramid" else None)
        minv = MassInverse(problem.M)
        contact_qp = ContactQP(self, problem, self.options["form"], minv)
        friction_qp = FrictionQP(problem, minv, k, cone)
        F = friction_qp.F
        lam_F = cache.get(_CACHE)
        if lam_F is None or lam_F.shape != (F.shape[0],):
            lam_F = np.zeros(F.shape[0])
        tol, cap = float(self.options["tol"]), int(self.options["max_outer"])
        prev_C: Array | None = None
        prev_F = lam_F
        contact: ContactSolve | None = None
        status, outer = "max_iterations", 0
        while outer < cap:
            outer += 1
            impulse_F = np.asarray(F.T @ lam_F)
            previous = None if contact is None else (contact.v, contact.lam)
            contact = contact_qp.solve(problem.f + impulse_F, previous)
            impulse_C = np.asarray(contact.rows.C.T @ contact.lam)
            if prev_C is not None:
                scale = minv.norm(impulse_C + impulse_F)
                change = max(
                    minv.norm(impulse_C - prev_C), minv.norm(np.asarray(F.T @ (lam_F - prev_F)))
                )
                if change <= tol * scale or (scale == 0.0 and change == 0.0):
                    status = "optimal"
                    break
            if problem.n_contacts == 0 or not np.all(np.isfinite(contact.lam)):
                status = "optimal" if problem.n_contacts == 0 else "numerical_error"
                break
            prev_C, prev_F = impulse_C, lam_F
            lam_N = contact.rows.part(contact.lam, "N")
            f_C = problem.f + impulse_C - np.asarray(d.G.T @ contact.rows.part(contact.lam, "G"))
            lam_F = friction_qp.solve(self, f_C, d.mu * np.maximum(lam_N, 0.0))
        assert contact is not None
        cache[_CACHE] = lam_F
        lambda_T = pyramid_to_tangent(lam_F, k) if cone == "pyramid" else lam_F
        return make_solution(
            self, problem, contact.v, contact.rows, contact.lam, lambda_T, status, outer
        )


class FrictionQP:
    """The friction QP of seed 000, eq. (2.110), set up once per step.

    Variables ``x = (lambda_G', lambda_F)`` on rows ``K = [G; F]``; for a
    contact momentum ``f_C`` and cone radii ``mu lambda_N`` it is
    ``min 1/2 x' K M^-1 K' x + x'(K M^-1 f_C - [g; 0])`` with the friction in
    the pyramid (``beta >= 0``, ``sum_j beta_ij <= radius_i``), the box or the disc.
    """

    def __init__(self, problem: StepProblem, minv: MassInverse, k: int, cone: str) -> None:
        d = step_data(problem)
        self.cone, self.minv, self.nc = cone, minv, problem.n_contacts
        self.F = pyramid_rows(d.T, k) if cone == "pyramid" else d.T
        self.rows = rows = stack_rows(
            problem.n, ("G", d.G, d.g, "free"), ("F", self.F, np.zeros(self.F.shape[0]), "free")
        )
        self.P = minv.delassus(rows.C)
        self.f_idx = np.arange(rows.slices["F"].start, rows.slices["F"].stop)
        if cone == "pyramid":
            nc, nf = self.nc, self.f_idx.size
            self.A = sp.vstack(
                [
                    sp.identity(rows.m, format="csr")[self.f_idx],
                    sp.hstack([sp.csr_matrix((nc, rows.m - nf)), pyramid_sum(nc, k)]),
                ],
                format="csc",
            )
            self.low = np.concatenate([np.zeros(nf), np.full(nc, -np.inf)])

    def solve(self, model: SolvingModel, f_C: Array, radius: Array) -> Array:
        """Friction impulses on the rows ``F`` for contact momentum ``f_C`` and cone radii."""
        rows = self.rows
        q = np.asarray(rows.C @ self.minv.vec(f_C)) - rows.b
        if self.cone == "pyramid":
            up = np.concatenate([np.full(self.f_idx.size, np.inf), radius])
            qp = QP(self.P, q, self.A, self.low, up)
        else:
            t_idx = self.f_idx.reshape(self.nc, 2)
            kind = "box" if self.cone == "box" else "disc"
            qp = bounded_friction_qp(self.P, q, rows.lo, rows.hi, t_idx, radius, kind)
        return np.asarray(model.run(qp).x[self.f_idx])
