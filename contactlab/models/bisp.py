"""Staggered Projections with joint friction: BISP and its maximal twin (Sueda's notes §2.11).

One model over the step problem's joint-friction maps
(:class:`~contactlab.problem.JointFrictionMaps`).  It alternates (Sueda's notes,
Alg. 7 and Alg. 8):

1. **contact**: with the friction impulses frozen, solve for the velocities
   with the bilateral rows ``G`` (joints in maximal coordinates, loop
   closures in reduced ones), external contacts ``N`` and limits ``L``
   (eq. 2.109; in reduced coordinates eq. 2.115–2.116).  Without such rows
   it is the plain solve ``v = M^{-1}(f + F^T beta)`` (the "reduced solve"
   of BISP);
2. **joint contact multipliers**: the formulation's reaction map turns the
   solve into joint reactions (reduced coordinates: velocities compared and
   one backward traversal, :mod:`contactlab.reduced.traversal_reactions`; maximal
   coordinates: the joints' own multipliers,
   :mod:`contactlab.maximal.multiplier_reactions`), then the local solves of
   eq. 2.114 give ``alpha``;
3. **convergence**: stop when the change of the joint contact impulse
   ``N_j^T alpha`` plus the external contact impulse is at most ``tol`` times
   its size, in the maximal ``M^{-1}`` norm (relative 1e-3 and at most 100
   iterations, as in the reference BISP), or after ``max_outer`` iterations;
4. **friction** (eq. 2.110, box): with normal impulses frozen, the friction
   QP over ``x = (lambda_G', beta_ext, beta_joint)`` on rows ``K = [G; T; T_g J]``,
   ``min 1/2 x' K M^-1 K' x + x'(K M^-1 f_C - [g; 0; 0])``,
   ``|beta_ext| <= mu lambda_N`` per tangent row and ``|beta_g| <= sum mu |alpha|``
   per joint friction group; the bilateral rows are re-solved so that the
   dissipation is measured on velocities that keep the joints.

The returned velocities are those of the last contact solve, made with the
converged friction impulses (Alg. 8, line 26 / eq. 2.116).

Two names: ``bisp`` (Bilateral Staggered Projections) needs the reactions by
traversal, so it runs on the reduced formulation; ``joint-friction-sp`` needs
the reactions from the joints' multipliers, so it runs on the maximal one.
The two are independent computations of the same friction law.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np
import scipy.sparse as sp

from contactlab.errors import ConfigurationError, IncompatibleError
from contactlab.jointfriction.local import local_multipliers
from contactlab.memory import ModelMemory, recall
from contactlab.models.base import SolvingModel, make_solution, register_model
from contactlab.models.common import (
    Array,
    MassInverse,
    Rows,
    check_outer,
    contact_rows,
    stack_rows,
)
from contactlab.problem import JointFrictionMaps, StepProblem, StepSolution
from solvers import QP


@dataclass
class JointFrictionReport:
    """Joint friction quantities of the last step.

    alpha : (K,) joint contact normal impulses [N s] (bilateral, either sign).
    beta : (n_groups,) joint friction impulses on the group rows [N s].
    bound : (n_groups,) their bounds ``sum mu |alpha|`` [N s].
    reactions : (nj, 6) joint reaction impulses on the children, body frame.
    outer : outer iterations; ``converged`` whether the test was met.
    """

    alpha: Array
    beta: Array
    bound: Array
    reactions: Array
    outer: int
    converged: bool


class StaggeredJointFriction(SolvingModel):
    """Staggered Projections with joint friction over the step problem's joint-friction maps.

    Options (the reference BISP's values)
    -------
    tol : relative ``M^-1``-norm change of the contact impulses that stops
        the iteration, default 1e-3.
    max_outer : cap on outer iterations, default 100.
    regularization : ``eps`` of the local solves (eq. 2.114) and of the
        contact rows' Tikhonov term, relative, default 1e-6.
    aggregate : one friction row per joint motion (see
        :mod:`contactlab.jointfriction.joint_contact_rows`) instead of one per contact
        point, default ``True``.

    After each step ``last`` holds a :class:`JointFrictionReport`.
    """

    forms = ("qp",)
    needs: tuple[str, ...] = ("joint_contacts",)
    defaults: ClassVar[dict[str, Any]] = {
        "tol": 1e-3,
        "max_outer": 100,
        "regularization": 1e-6,
        "aggregate": True,
    }

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_outer(options)
        eps = options["regularization"]
        if not isinstance(eps, (int, float)) or not 0 < eps < 1:
            raise ConfigurationError(f"option regularization must be in (0, 1), got {eps!r}")
        if not isinstance(options["aggregate"], bool):
            raise ConfigurationError(
                f"option aggregate must be True or False, got {options['aggregate']!r}"
            )

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        return [("bound_qp", "box_qp")]

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        maps = problem.joint_friction
        if maps is None:
            raise IncompatibleError(
                f"model {self.name!r} needs the joint-contact rows of the step problem, which "
                "its formulation did not provide; the scene needs joints with friction "
                "(JointSpec.friction) and a formulation that provides joint_contacts"
            )
        sol, report = solve_staggered(self, problem, maps, cache, f"{self.name}:friction")
        return replace(sol, report=report)


@register_model("bisp")
class BISP(StaggeredJointFriction):
    """Bilateral Staggered Projections: joint friction in reduced coordinates (Alg. 8)."""

    needs = ("joint_contacts", "reactions_by_traversal")


@register_model("joint-friction-sp")
class JointFrictionSP(StaggeredJointFriction):
    """Staggered Projections with joint friction on the maximal model's joint rows (Alg. 7)."""

    needs = ("joint_contacts", "reactions_by_multipliers")


def solve_staggered(
    model: SolvingModel,
    problem: StepProblem,
    maps: JointFrictionMaps,
    cache: ModelMemory,
    key: str,
) -> tuple[StepSolution, JointFrictionReport]:
    """Run the loop of the module docstring; ``cache[key]`` warm-starts the friction."""
    d = problem
    opts = model.options
    tol, cap, eps = float(opts["tol"]), int(opts["max_outer"]), float(opts["regularization"])
    minv = MassInverse(problem.M)
    crow = contact_rows(problem)
    cqp = _ContactQP(model, problem, minv, crow, eps) if crow.m else None
    jrows = maps.rows if opts["aggregate"] else maps.rows.ungrouped()
    lay = jrows.layout
    T_joint = jrows.Tg if maps.J is None else sp.csr_matrix(jrows.Tg @ maps.J)
    F = sp.vstack([d.T, T_joint], format="csr")
    n_ext = d.T.shape[0]
    fqp = _FrictionQP(problem, minv, F)
    lam = recall(cache, key, np.ndarray)
    if lam is None or lam.shape != (F.shape[0],):
        lam = np.zeros(F.shape[0])
    W = np.asarray(maps.inertia_inv).reshape(-1, 6)[lay.child]

    def norm(x: Array) -> float:
        return float(np.sqrt(max(float(x @ (maps.inertia_inv * x)), 0.0)))

    prev: Array | None = None
    converged, outer = False, 0
    while outer < cap:
        outer += 1
        momentum = problem.f + np.asarray(F.T @ lam)
        if cqp is not None:
            v, lam_C = cqp.solve(momentum)
        else:
            v, lam_C = minv.vec(momentum), np.zeros(0)
        lam_N = crow.part(lam_C, "N")
        p_joint = np.asarray(jrows.Tg.T @ lam[n_ext:])
        r = maps.reactions(v, crow.part(lam_C, "G"), lam_N, lam[:n_ext], p_joint)
        alpha = local_multipliers(jrows.child_normal, lay.offsets, W, r, eps)
        impulse = np.asarray(jrows.N.T @ alpha) + np.asarray(maps.N_contact.T @ lam_N)
        if prev is not None:
            change, size = norm(impulse - prev), norm(impulse)
            if change <= tol * size or size == 0.0:
                converged = True
                break
        prev = impulse
        if F.shape[0] == 0 or not np.all(np.isfinite(v)):
            converged = F.shape[0] == 0
            break
        f_C = problem.f + np.asarray(d.N.T @ lam_N) + np.asarray(d.L.T @ crow.part(lam_C, "L"))
        radius = np.concatenate(
            [np.repeat(d.mu * np.maximum(lam_N, 0.0), 2), lay.group_bounds(alpha)]
        )
        lam_next = fqp.solve(model, f_C, radius)
        if not np.all(np.isfinite(lam_next)):
            break  # the failed inner solve's status is reported by make_solution
        lam = lam_next
    cache[key] = lam
    sol = make_solution(
        model,
        problem,
        v,
        crow,
        lam_C,
        lam[:n_ext],
        "optimal" if converged else "max_iterations",
        outer,
    )
    report = JointFrictionReport(alpha, lam[n_ext:], lay.group_bounds(alpha), r, outer, converged)
    return sol, report


class _ContactQP:
    """The dual contact QP (Sueda's notes, eq. 2.109) with a small Tikhonov term.

    ``min 1/2 l'(C M^-1 C' + eps d I_N) l + l'(C M^-1 f - b)``, ``l_N, l_L >= 0``
    (``d`` the mean diagonal of the contact rows; the joint and limit rows
    are not regularized, so they hold exactly): several contacts on one
    articulated body
    leave the impulses non-unique, and a solver may return a different one
    at every iteration, so the staggered loop would never see them settle;
    the term selects the least-norm impulses, as eq. 2.114 does for the
    joints, and changes the velocities by O(eps).
    """

    def __init__(
        self, model: SolvingModel, problem: StepProblem, minv: MassInverse, rows: Rows, eps: float
    ) -> None:
        self.model, self.minv, self.rows = model, minv, rows
        P = minv.delassus(rows.C)
        P = 0.5 * (P + P.T)
        reg = np.zeros(rows.m)
        sl = rows.slices.get("N")
        if sl is not None and sl.stop > sl.start:
            reg[sl] = eps * float(np.mean(P.diagonal()[sl]))
        self.P = sp.csr_matrix(P + sp.diags(reg))
        self.bounded = np.flatnonzero(np.isfinite(rows.lo))
        self.A = sp.identity(rows.m, format="csc")[self.bounded]
        if self.bounded.size:
            model.require("bound_qp", "the contact QP with contacts or limits")
        self._x: Array | None = None

    def solve(self, f: Array) -> tuple[Array, Array]:
        """Velocities and impulses for free momentum ``f``."""
        rows = self.rows
        q = np.asarray(rows.C @ self.minv.vec(f)) - rows.b
        lo, hi = rows.lo[self.bounded], rows.hi[self.bounded]
        res = self.model.run(QP(self.P, q, self.A, lo, hi), self._x)
        lam = np.asarray(res.x)
        self._x = lam
        return self.minv.vec(f + np.asarray(rows.C.T @ lam)), lam


class _FrictionQP:
    """The box friction QP of step 4, set up once per step."""

    def __init__(self, problem: StepProblem, minv: MassInverse, F: sp.csr_matrix) -> None:
        d = problem
        self.minv = minv
        self.rows = rows = stack_rows(
            problem.n, ("G", d.G, d.g, "free"), ("F", F, np.zeros(F.shape[0]), "free")
        )
        P = minv.delassus(rows.C) if rows.m else sp.csr_matrix((0, 0))
        # symmetric up to rounding, which a dense reduced M^-1 amplifies on long chains
        self.P = sp.csr_matrix(0.5 * (P + P.T))
        self.f_idx = np.arange(rows.slices["F"].start, rows.slices["F"].stop)
        self.A = sp.identity(rows.m, format="csc")[self.f_idx]
        self._x: Array | None = None

    def solve(self, model: SolvingModel, f_C: Array, radius: Array) -> Array:
        """Friction impulses; the previous iteration's solution warm-starts the backend."""
        rows = self.rows
        q = np.asarray(rows.C @ self.minv.vec(f_C)) - rows.b
        res = model.run(QP(self.P, q, self.A, -radius, radius), self._x)
        self._x = np.asarray(res.x)
        return np.asarray(res.x[self.f_idx])
