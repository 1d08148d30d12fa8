"""Box friction (ArtiSynth notes, eqs. (0.5)-(0.6), §0.16) as an LCP with friction blocks.

Eliminating ``v = M^-1 (f + C^T z)`` from ArtiSynth notes, eq. (0.5) with
``C = [G; N; T; L]`` and ``b = [g; c; 0; l]`` leaves the mixed/box LCP

.. math::

    w = C M^{-1} C^T z + (C M^{-1} f - b), \\qquad
    z = (\\lambda_G, \\lambda_N, \\lambda_T, \\lambda_L)

with ``lambda_G`` free (``w_G = 0``), ``0 <= lambda_N ⟂ w_N >= 0``,
``0 <= lambda_L ⟂ w_L >= 0`` and, on each of the two tangent rows of a contact,
the box ``-mu lambda_N <= lambda_T <= mu lambda_N`` with the complementarity
of eq. (0.6): the friction impulse opposes the tangential velocity ``w_T``
when at a bound and the velocity is zero inside.  ``cone="disc"`` replaces the
box by the disc ``||lambda_T,i|| <= mu lambda_N,i`` (the exact Coulomb cone),
projected by Gauss--Seidel.  The bounds follow the normal impulse inside the
solve, so the problem goes to LCP backends with friction blocks (``pgs``).

QP backends solve it by a fixed point on the bounds: with the normal impulse
``lambda_N^k`` frozen, the bounds are constant and the LCP is the
bound-constrained QP ``min 1/2 z'C M^-1 C'z + z'(C M^-1 f - b)`` (box rows
``|lambda_T| <= mu lambda_N^k``, or for the disc the cones
``||lambda_T,i|| <= r_i`` with an auxiliary ``r = mu lambda_N^k`` fixed by its
bounds); its solution gives ``lambda_N^{k+1}``.  The iteration starts from the
previous step's impulses (or from zero friction) and stops when the change of
the impulse ``C^T z`` between two solves is at most ``tol`` times ``C^T z`` in
the ``M^-1`` norm (the velocity change it causes; normal impulses that are not
unique may drift without effect), or after ``max_outer`` solves (status
``max_iterations``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from contactlab.memory import ModelMemory, recall
from contactlab.models.base import SolvingModel, make_solution, register_model
from contactlab.models.box_rows import (
    ImpulseMemory,
    box_rows,
    height_order,
    warm_impulses,
)
from contactlab.models.common import (
    Array,
    MassInverse,
    Rows,
    check_cone,
    check_outer,
)
from contactlab.models.fc_route import solve_as_fc
from contactlab.problem import StepProblem, StepSolution
from solvers import LCP, QP, FrictionBlocks, SOCBlocks


@register_model("box-friction")
class BoxFriction(SolvingModel):
    """Box (or disc) friction LCP, bounds following the normal impulse.

    Options
    -------
    cone : ``"box"`` (``|lambda_T,k| <= mu lambda_N`` per tangent row, default)
        or ``"disc"`` (exact cone).
    tol : relative tolerance of the fixed point on the bounds (QP backends), default 1e-6.
    max_outer : cap on the fixed-point solves (QP backends), default 100.
    With ``nsgs`` or ``admm`` the same law is posed as the Coulomb
    frictional-contact problem with the box or exact cone
    (:mod:`contactlab.models.fc_route`).
    Dry friction of joint coordinates (``StepProblem.D``, MuJoCo's ``frictionloss``)
    is carried by the LCP and QP routes as box rows ``|lambda_D| <= d``.
    row_order : order of the LCP rows handed to LCP backends: ``"height"``
        (default; bilateral rows, then each contact's normal and tangent rows
        together, contacts from the lowest point up, see :func:`height_order`)
        or ``"rows"`` (``[G; N; T; L]`` as assembled).  The solution does not
        depend on it; a Gauss--Seidel solver converges faster bottom-up on
        piles and stacks.
    """

    forms = ("lcp", "qp")
    defaults = {"cone": "box", "tol": 1e-6, "max_outer": 100, "row_order": "height"}

    @property
    def carries_dry_friction(self) -> bool:  # type: ignore[override]
        """The LCP and QP routes bound the dry-friction rows of joints like any box row;
        the frictional-contact route (``nsgs``, ``admm``) has no such rows."""
        return self.route != ("fc_coulomb",)

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_cone(options["cone"], ("box", "disc"))
        check_outer(options)
        if options["row_order"] not in ("height", "rows"):
            raise ConfigurationError(
                f"option row_order must be 'height' or 'rows', got {options['row_order']!r}"
            )

    @classmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        # last: the law as a Coulomb frictional-contact problem (nsgs, admm)
        return [
            ("block_lcp",),
            ("box_qp",) if options["cone"] == "box" else ("soc_qp",),
            ("fc_coulomb",),
        ]

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        if self.route == ("fc_coulomb",):
            cone = "box" if self.options["cone"] == "box" else "soc"
            return solve_as_fc(self, problem, cache, "coulomb", cone)
        d = problem
        rows = box_rows(problem)
        minv = MassInverse(problem.M)
        P = minv.delassus(rows.C)
        q = np.asarray(rows.C @ minv.vec(problem.f)) - rows.b
        n_idx = np.arange(rows.slices["N"].start, rows.slices["N"].stop)
        t_idx = np.arange(rows.slices["T"].start, rows.slices["T"].stop).reshape(-1, 2)
        key = f"box-friction:{self.options['cone']}"
        prev = warm_impulses(recall(cache, key, ImpulseMemory), rows, problem)
        if self.route == ("block_lcp",):
            order = height_order(rows, problem.contacts, self.options["row_order"])
            inv = np.empty_like(order)
            inv[order] = np.arange(order.size)
            blocks = FrictionBlocks(inv[n_idx], inv[t_idx], d.mu, cone=self.options["cone"])
            lcp = LCP(
                sp.csr_matrix(P)[order][:, order],
                q[order],
                rows.lo[order],
                rows.hi[order],
                blocks,
            )
            res = self.run(lcp, None if prev is None else prev[order])
            z, outer, extra = res.x[inv], 0, "optimal"
        else:
            z, outer, extra = self._fixed_point(minv, problem, rows, P, q, n_idx, t_idx, prev)
        cache[key] = ImpulseMemory.record(z, rows, problem)
        v = minv.vec(problem.f + np.asarray(rows.C.T @ z))
        return make_solution(self, problem, v, rows, z, rows.part(z, "T"), extra, outer)

    def _fixed_point(
        self,
        minv: MassInverse,
        problem: StepProblem,
        rows: Rows,
        P: sp.spmatrix,
        q: Array,
        n_idx: NDArray[np.int64],
        t_idx: NDArray[np.int64],
        prev: Array | None,
    ) -> tuple[Array, int, str]:
        d = problem
        z = prev
        lam_n = prev[n_idx] if prev is not None else np.zeros(n_idx.size)
        for outer in range(1, int(self.options["max_outer"]) + 1):
            radius = d.mu * np.maximum(lam_n, 0.0)
            warm = z if self.options["cone"] == "box" else None
            qp = bounded_friction_qp(P, q, rows.lo, rows.hi, t_idx, radius, self.options["cone"])
            z_new = self.run(qp, warm).x[: rows.m]
            if not np.all(np.isfinite(z_new)):
                return z_new, outer, "numerical_error"
            if n_idx.size == 0:  # no contacts, no bounds to iterate on
                return z_new, outer, "optimal"
            if z is not None:
                # the impulse change in the M^-1 norm (the velocity change it causes);
                # normal impulses may drift where they are not unique without effect
                change = minv.norm(np.asarray(rows.C.T @ (z_new - z)))
                if change <= self.options["tol"] * minv.norm(np.asarray(rows.C.T @ z_new)):
                    return z_new, outer, "optimal"
            z, lam_n = z_new, z_new[n_idx]
        assert z is not None
        return z, outer, "max_iterations"


def bounded_friction_qp(
    P: sp.spmatrix,
    q: Array,
    lo: Array,
    hi: Array,
    t_idx: NDArray[np.int64],
    radius: Array,
    cone: str,
) -> QP:
    """``min 1/2 z'Pz + q'z`` with ``lo <= z <= hi`` and friction rows in fixed discs or boxes.

    ``t_idx`` ``(nc, 2)`` are the tangent variables of each contact and
    ``radius`` ``(nc,)`` the frozen bound ``mu lambda_N``.  ``cone="box"``
    bounds each tangent variable by ``±radius``; ``cone="disc"`` adds one
    auxiliary variable per contact fixed to ``radius`` by its bounds and the
    cone ``||z_t|| <= r`` (variables beyond ``len(q)`` are the auxiliaries).
    """
    m = q.size
    lo, hi = lo.copy(), hi.copy()
    lo[t_idx.ravel()], hi[t_idx.ravel()] = -np.inf, np.inf
    if cone == "box":
        lo[t_idx.ravel()] = -np.repeat(radius, 2)
        hi[t_idx.ravel()] = np.repeat(radius, 2)
        keep = np.flatnonzero(np.isfinite(lo) | np.isfinite(hi))
        if keep.size == 0:
            return QP(P, q)
        return QP(P, q, sp.identity(m, format="csr")[keep], lo[keep], hi[keep])
    nc = radius.size
    eye = sp.identity(m + nc, format="csr")
    keep = np.flatnonzero(np.isfinite(lo) | np.isfinite(hi))
    return QP(
        sp.block_diag([P, sp.csr_matrix((nc, nc))], format="csc"),
        np.concatenate([q, np.zeros(nc)]),
        sp.vstack([eye[keep], eye[m:]], format="csc"),
        np.concatenate([lo[keep], radius]),
        np.concatenate([hi[keep], radius]),
        soc=SOCBlocks(m + np.arange(nc), t_idx, np.ones(nc)),
    )
