"""Staggered Projections (Sueda's notes, §2.11, Alg. 7): alternate a contact QP and a friction QP.

Each outer iteration

1. **contact QP** (eq. (2.109)): with the friction impulse frozen, solve the
   frictionless contact QP (joints ``G``, contacts ``N``, limits ``L``) for
   the free momentum ``f + T^T y`` (``y`` the friction impulse in the ``T``
   basis), giving ``v`` and the impulses ``lambda_C = (lambda_G, lambda_N,
   lambda_L)``; the inner solve starts from the previous outer iteration's;
2. **convergence check**: stop when the change of the contact impulse
   ``C^T lambda_C`` since the previous iteration and the change the last
   friction QP made to the friction impulse, ``T^T (g - y)``, are both at
   most ``tol`` times the larger of the total impulse ``C^T lambda_C + T^T y``
   and the free momentum ``f``, all measured in the ``M^{-1}`` norm
   ``||x||_{M^-1} = sqrt(x^T M^-1 x)`` (the velocity change they cause, in
   kinetic-energy units), or after ``max_outer`` iterations (status
   ``max_iterations``).  Alg. 7 scales by the impulse alone; on a step whose
   contacts carry (almost) no impulse, such as a body inside the contact
   margin but not touching, that compares the inner solver's rounding noise
   (1e-12 N s from OSQP) with itself and never stops, so the free momentum
   (the motion the step starts from) bounds the scale from below;
3. **friction QP** (eq. (2.110)): with ``lambda_N`` frozen, find the friction
   impulse of maximal dissipation in the cone of radius ``mu lambda_N``:
   ``min 1/2 x^T K M^-1 K^T x + x^T (K M^-1 f_C - [g; 0])`` over
   ``x = (lambda_G', lambda_F)``, ``K = [G; F]``, ``f_C = f + N^T lambda_N +
   L^T lambda_L``; the joint rows are re-solved with the friction so the
   dissipation is measured on velocities that satisfy the joints (in
   ``form="primal"`` the pyramid's friction QP is posed in the velocities,
   see :class:`FrictionQP`); the inner solve starts from the previous outer
   iteration's.  Its friction ``g`` is the next ``y`` (plain alternation) or
   enters an Anderson step (below).

Cones: ``"pyramid"`` (``F = D``, ``beta >= 0``, ``sum_j beta_ij <= mu_i lambda_N,i``),
``"box"`` (``F = T``, ``|lambda_T| <= mu lambda_N`` per tangent row, eq. (2.110) as
printed) or ``"soc"`` (``F = T``, ``||lambda_T,i|| <= mu_i lambda_N,i``).  A fixed point
satisfies the normal complementarity and, for the friction, the KKT conditions
of the friction QP, which for the pyramid are exactly the Stewart--Trinkle
conditions (``s`` = multiplier of the cone row), so both give the same
velocities.

Convergence.  The plain alternation is a fixed-point iteration ``y -> g(y)``
that converges linearly, and slowly where friction and normal impulses are
strongly coupled: on a 3-cube stack whose top cube slides the friction
changes by a factor of about 0.9 per iteration (93 iterations to a relative
change of 1e-6), on a landed pile of 10 boxes about 0.96 in the tail (80 to
over 100 iterations per step).  The inner solves are not the cause (OSQP
at 1e-9 meets its tolerance there; the same rate appears with Clarabel and
ProxQP).  With ``accelerate=True`` (default) the outer iterate is
extrapolated by Anderson acceleration (:class:`Anderson`, depth ``depth``)
with the residual measured by the velocity change it causes,
``M^-1/2 T^T (g - y)`` (the diagonal of ``M^-1``), so that the friction
distributions of redundant contacts, which change nothing, do not enter the
least squares; an extrapolated ``y`` only feeds the next contact QP, and
once the friction change is within the stopping test the plain step is
taken, so the returned friction is always a friction QP's output.  Measured:
6-8 outer iterations on the sliding stack, 12-16 per step on the 10-box pile
0.6 s after the drop, 25-33 on the 30-box pile
(tests/contactlab/models/test_staggered_convergence.py).

Known limit of the alternation alone: on landed piles of tens of boxes it does
not reach a solution, and neither a different stopping test nor Anderson
acceleration makes it (the coupled start below does).  Every check also
records (``StepSolution.cache[PRODUCED]``) what the step produces, relative
to the same scale as the stopping test: the velocity change
``||v_k - v_{k-1}||_M`` and the natural map of the friction at
``(v, lambda_N, y)`` (:mod:`contactlab.models.friction_map`: the sliding left
under friction inside its set, or friction outside the set of the current
``mu lambda_N``), which is zero exactly at a solution of the coupled problem.
Measured (box cone by PGS at 1e-7, as in ``benchmarks/bench_friction.py``,
and pyramid by Clarabel; piles landed 2 s, warm-started steps, cap 100-200):

- 30 boxes, pyramid, plain alternation: the velocities stop changing (7e-9 of
  the scale per iteration) while the natural map stays at 4.5e-5: contacts
  whose friction lies inside the pyramid still slip at about 1e-5 m/s, and
  every friction correction is undone by the next contact QP through growing
  normal impulses (a self-locking internal stress; the impulse change stays
  at 5e-5 of the total), so the iterate is not a solution and a stopping
  test on the velocities alone would accept a wrong one.  Anderson: natural
  map 4e-5 after 20 iterations, still 4e-5 at 200.
- 100 boxes, box cone: plain alternation contracts by about 0.98 per
  iteration (natural map 8e-3, 3e-3, 8e-4 after 10, 20, 40 iterations;
  5e-4 after 90); Anderson (depth 5 or 10, with or without a restart on a
  growing residual, with or without projecting the extrapolated friction
  onto its set) levels off at 8e-5 to 2e-4 from 40 iterations on; with
  Clarabel's exact inner solves at 1.3e-4, with spikes where the active
  sets change.  The worst contacts are sticking ones slipping at 1e-4 m/s
  and contacts whose friction unloads their own normal impulse.

So the 100-outer-iteration cap on those piles is the alternation's, not its
stopping test's.  On the sliding 3-cube stack and the 10-box pile at 0.6 s
(below) the velocity test and the natural map fall below ``tol`` at the same
iteration as the impulse test.

Coupled start (option ``coupled``, default ``"ipm"``).  The fixed point the
alternation seeks is the normal complementarity with the friction maximally
dissipative in its set of radius ``mu lambda_N``: the Coulomb law of the
frictional-contact problem with the model's cone (De Saxcé's law for
``"soc"``, Stewart--Trinkle's for ``"pyramid"``, the box-friction law for
``"box"``).  Each step first solves that law coupled, as the ``coulomb``
model does (:mod:`contactlab.models.fc_route`, backend ``coupled`` at
``coupled_tol``, at most ``coupled_max_iter`` iterations), and starts the
alternation there: ``y`` its friction, the contact QP from its ``(v,
lambda_C)``, the first friction QP from ``(lambda_G, y)`` (the pyramid's
``beta`` by :func:`tangent_to_pyramid`; in ``form="primal"`` the friction QP
starts cold).  The alternation then runs as before (with the proximal
contact QP below) and confirms the point:
the stopping test is evaluated after the second contact QP as always, the
returned friction is the last friction QP's output and the status is the
alternation's (the coupled solve's own result is in ``StepSolution.results``
for its time, not in the status).  A coupled solve that does not meet its
tolerance, raises a solver-layer error or returns non-finite impulses is not
used: the step runs the alternation from the previous step's impulses, as
with ``coupled=None``, and ``StepSolution.cache[COUPLED]`` says so (``used``,
the coupled solve's ``status``, ``natural_map``, ``iterations``).

Confirming a coupled start (option ``proximal``).  On redundant contacts (a
face resting on four corners) the contact QP fixes the velocities but not the
distribution of the normal impulses, and the friction's set of radius
``mu lambda_N`` depends on that distribution.  An inner solver that returns its
start when the start is optimal (``pgs``: 0 sweeps) keeps the coupled point's;
one that does not (Clarabel takes no start; OSQP only the primal one) returns
another distribution of the same velocities, and the coupled friction no
longer lies in its set (on a 10-box pile step Clarabel moves the normal
impulses by 1e-2 N s of 0.4, velocities within 5e-10 m/s; on the 100-box pile
the natural map jumps to 0.1 and the alternation runs to its cap).  After a
coupled start the dual contact QPs therefore carry a proximal term
``eps/2 ||lambda - lambda_prev||^2`` (``lambda_prev`` the previous outer
iteration's, ``eps = proximal * mean(diag(W))``, ``W = C M^-1 C^T``): its
minimiser is unique, and is ``lambda_prev`` when ``lambda_prev`` minimises the
contact QP, so a fixed point of the alternation with it is one without it.  The
stopping test then measures the contact impulse change in the norm of that
QP's Hessian ``W + eps I``, ``sqrt(||C^T dlambda||_M^-1^2 + eps ||dlambda||^2)``,
so the normal impulses must have stopped moving too (at the stop the contact
QP's own optimality residual, ``eps |dlambda|``, is below ``sqrt(eps) tol``
times the scale).  ``proximal=1e-3``: on four stored steps of the 100-box pile
OSQP (box cone) then stops at 2 outer iterations on every step and Clarabel
(pyramid) at 2-7, where without it both run to the cap of 100; but the
natural map at the stop is 2e-7 to 1.2e-6 (OSQP) and 1.2e-6 to 3.8e-6
(Clarabel), at or above ``tol``: their inner accuracy, which the recorded
natural map shows beside the stopping test (``PRODUCED``).  With ``pgs`` the proximal term changes
nothing (the start is still met in 0 sweeps).  The primal form's contact QP
(in velocities) has no proximal term.

Measured (the benchmark's pair: box cone, PGS at 1e-7, 100-box pile landed
2 s, 5 untimed then 5 timed steps; ``results/benchmarks/friction_sp.csv``):
every step stops on its test at the second outer iteration, natural map at
the returned iterate below 1e-7 of the impulse scale, where the alternation
alone (``coupled=None``) stops at its cap of 100 on every step; ``ipm`` takes
1,500-3,700 interior-point iterations for the box law at 1e-8 (its Coulomb
fixed point of CCPs), 1.0-2.8 s, hence ``coupled_max_iter=10000`` formerly; but an
explicit cap leaves ``ipm``'s plain fallback no budget (on the 100-box drop's step 89
the accelerated rounds rerun after Newton's finish spent all 10,000 iterations, ending
at 4.1e-4, where the plain fallback converges to 9.9e-9 after 1,306 interior-point
iterations in all), so the default is now none: ``ipm``'s own budgets
(``coupled="nsgs"`` stops at its 10,000-sweep cap on every step, natural map 2e-5 to
8e-5, and the steps fall back to the alternation alone).  The
start must be accurate: from ``ipm``'s iterate at 1e-6 (or its capped
iterate, 2e-6 to 1e-5) the alternation does not settle and stops at its cap
with a natural map of 1e-6 to 3e-5; from 1e-7 it stops at 2 with natural
map 5e-7 (a factor of 2 inside the tolerance), from 1e-8 at 2 with 1e-8 to 3e-8, hence
``coupled_tol=1e-8``.  On the 10-box pile and the sliding stack the coupled
start's velocities are within 1.5e-6 m/s of the alternation alone run to its
test and within 2e-7 m/s of Stewart--Trinkle by Lemke, 7e-7 m/s of Coulomb
by ``nsgs`` (tests/contactlab/models/test_staggered_coupled.py).

Warm start (Sueda's notes, §2.11).  The friction impulse and the contact impulses
of a step are kept in ``cache`` (:class:`FrictionMemory`) and start the next
step, carried per persistent contact (same bodies and shapes, nearest point
within 1 cm, friction as a world vector onto the new tangent basis): the
collision lists a pile's contacts in a different order every step, and
friction carried over by index lands on other contacts, a worse start than
none.  The per-step history of the relative change (one entry per check) is
returned in ``StepSolution.cache`` under :data:`HISTORY`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.contact.friction_cone import pyramid_rows
from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.models.base import SolvingModel, make_solution, register_model
from contactlab.models.box_friction import bounded_friction_qp
from contactlab.models.box_rows import ImpulseMemory, carried_over, world_friction
from contactlab.models.common import (
    Array,
    MassInverse,
    Rows,
    check_cone,
    check_directions,
    check_form,
    check_friction_data,
    check_outer,
    pyramid_sum,
    pyramid_to_tangent,
    stack_rows,
    step_data,
)
from contactlab.models.friction_map import natural_map, natural_norm, tangent_weight
from contactlab.models.frictionless import ContactQP, ContactSolve
from contactlab.problem import StepProblem, StepSolution
from solvers import QP, SolverError

_CACHE = "staggered-projections:friction"
#: Key of the per-step outer history in ``StepSolution.cache``.
HISTORY = "staggered-projections:history"
#: Key of the per-step ``(velocity change, natural map)`` per check, relative like HISTORY.
PRODUCED = "staggered-projections:produced"
#: Key of the per-step record of the coupled start (:class:`CoupledStart`).
COUPLED = "staggered-projections:coupled"
ACCEPT = ("optimal",)


@register_model("staggered-projections")
class StaggeredProjections(SolvingModel):
    """Alternating contact and friction QPs until the impulses stop changing.

    Options
    -------
    cone : ``"pyramid"`` (default), ``"box"`` or ``"soc"``.
    directions : pyramid directions (even, >= 4); ``None`` uses the scene's.
    form : form of the QPs, ``"dual"`` (impulses, eqs. (2.109)-(2.110), default) or
        ``"primal"`` (velocities; the friction QP too for the pyramid, with the SPD mass
        matrix as cost, which first-order solvers such as OSQP reach more accurately).
    tol : relative tolerance of the ``M^-1``-norm stopping test, default 1e-6.
    max_outer : cap on outer iterations, default 100.
    accelerate : Anderson acceleration of the outer iteration (default ``True``);
        ``False`` is the plain alternation of Alg. 7.
    depth : number of previous iterates the Anderson step combines, default 5.
    coupled : backend of the coupled start (module docstring, "Coupled start"):
        ``"ipm"`` (default) or another backend fitting the Coulomb frictional-contact
        problem of the cone (``nsgs``, ``admm``, ...); ``None`` starts the alternation
        from the previous step's impulses only (Alg. 7).
    coupled_tol : tolerance of the coupled solve (its natural map relative to
        ``||q||``), default 1e-8.
    coupled_max_iter : iteration cap of the coupled solve, default none: the backend's own
        budgets (module docstring, "Measured").
    coupled_settings : backend settings of the coupled solve (e.g. ``{"newton": 0}``:
        ``ipm`` without its semismooth Newton finish of the box law), default none.
    proximal : weight of the proximal term of the contact QPs after a coupled start
        (module docstring, "Confirming a coupled start"), relative to the mean diagonal of
        the Delassus matrix, default 1e-3; 0 turns it off.  Dual form only.
    """

    forms = ("qp",)
    #: PGS's inner QPs at 1e-7, as the benchmark row ``staggered-projections box / pgs``
    #: (at 1e-6 a landed 10-box pile's step is 2e-5 m/s off the alternation's fixed point,
    #: ``tests/contactlab/models/test_staggered_coupled.py``).
    benchmarked_tol = {"pgs": 1e-7}
    defaults = {
        "cone": "pyramid",
        "directions": None,
        "form": "dual",
        "tol": 1e-6,
        "max_outer": 100,
        "accelerate": True,
        "depth": 5,
        "coupled": "ipm",
        "coupled_tol": 1e-8,
        "coupled_max_iter": None,
        "coupled_settings": None,
        "proximal": 1e-3,
    }

    def __init__(self, solver: str, **options: Any) -> None:
        super().__init__(solver, **options)
        name = self.options["coupled"]
        #: the Coulomb model of the fixed-point law solving the coupled start, or ``None``
        self.coupled: SolvingModel | None = None
        if name is not None:
            from contactlab.models.coulomb import Coulomb

            cone = self.options["cone"]
            try:
                self.coupled = Coulomb(
                    name,
                    cone=cone,
                    directions=self.options["directions"],
                    solver_tol=float(self.options["coupled_tol"]),
                    max_iter=self.options["coupled_max_iter"],
                    solver_settings=self.options["coupled_settings"],
                )
            except (IncompatibleError, UnknownNameError) as err:
                fitting = Coulomb.compatible_solvers(cone=cone)
                raise ConfigurationError(
                    f"option coupled={name!r}: the coupled start solves the Coulomb "
                    f"frictional-contact problem with cone {cone!r}, which {name!r} cannot "
                    f"take; backends that fit: {', '.join(fitting) or 'none installed'}, "
                    "or coupled=None for the alternation alone"
                ) from err

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        check_directions(options["directions"])
        check_cone(options["cone"], ("pyramid", "box", "soc"))
        check_form(options["form"])
        check_outer(options)
        if not isinstance(options["accelerate"], bool):
            raise ConfigurationError(
                f"option accelerate must be true or false, got {options['accelerate']!r}"
            )
        depth = options["depth"]
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise ConfigurationError(f"option depth must be a positive integer, got {depth!r}")
        coupled = options["coupled"]
        if coupled is not None and not isinstance(coupled, str):
            raise ConfigurationError(
                f"option coupled must be a backend name (e.g. 'ipm') or None, got {coupled!r}"
            )
        tol = options["coupled_tol"]
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 < tol < 1:
            raise ConfigurationError(f"option coupled_tol must be a number in (0, 1), got {tol!r}")
        prox = options["proximal"]
        if isinstance(prox, bool) or not isinstance(prox, (int, float)) or not prox >= 0:
            raise ConfigurationError(f"option proximal must be a number >= 0, got {prox!r}")

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
        friction_qp = FrictionQP(problem, minv, k, cone, self.options["form"])
        T = d.T
        start = CoupledStart.solve(self.coupled, problem, cache, contact_qp.rows)
        fx: Any = None
        previous: tuple[Array, Array] | None
        if start.used:
            y, previous = start.y, start.previous
            fx = friction_qp.start(start.previous[1], contact_qp.rows, y, d.mu)
        else:
            y, previous = warm_start(cache.get(_CACHE), contact_qp.rows, problem, minv)
        accel = Anderson(int(self.options["depth"])) if self.options["accelerate"] else None
        # the Anderson least squares measure the friction change by the velocity change it
        # causes, ||M^-1/2 T' dy|| with the diagonal of M^-1 (exact for maximal coordinates),
        # blind to the friction distributions of redundant contacts that change nothing
        weight = velocity_weight(minv, problem.n) if accel is not None else None
        tol, cap = float(self.options["tol"]), int(self.options["max_outer"])
        momentum = minv.norm(problem.f)  # the free motion's scale, see the module docstring
        prev_C: Array | None = None
        prev_total: Array | None = None
        residual: float | None = None
        contact: ContactSolve | None = None
        history: list[float] = []
        produced: list[list[float]] = []
        w_t = tangent_weight(T, minv)
        # after a coupled start the contact QPs are proximal (module docstring)
        eps = 0.0
        if start.used and self.options["form"] == "dual" and contact_qp.rows.m > 0:
            eps = float(self.options["proximal"]) * float(np.mean(contact_qp.P.diagonal()))
        status, outer = "max_iterations", 0
        while outer < cap:
            outer += 1
            impulse_F = np.asarray(T.T @ y)
            if eps > 0.0 and previous is not None:
                contact = proximal_contact(self, contact_qp, problem.f + impulse_F, previous, eps)
            else:
                contact = contact_qp.solve(problem.f + impulse_F, previous)
            # with the proximal term the impulse change is measured in the norm of its
            # Hessian, W + eps I: the velocity change and sqrt(eps) times the impulse change
            drift = 0.0
            if eps > 0.0 and previous is not None:
                drift = float(np.sqrt(eps) * np.linalg.norm(contact.lam - previous[1]))
            previous = (contact.v, contact.lam)
            impulse_C = np.asarray(contact.rows.C.T @ contact.lam)
            if problem.n_contacts == 0 or not np.all(np.isfinite(contact.lam)):
                status = "optimal" if problem.n_contacts == 0 else "numerical_error"
                break
            lam_N = contact.rows.part(contact.lam, "N")
            total = impulse_C + impulse_F
            scale = max(minv.norm(total), momentum)
            if prev_C is not None and prev_total is not None and residual is not None:
                change = max(float(np.hypot(minv.norm(impulse_C - prev_C), drift)), residual)
                history.append(
                    change / scale if scale > 0.0 else (0.0 if change == 0.0 else np.inf)
                )
                # what the step produces, recorded beside: the velocity change and the
                # friction's natural map at (v, lambda_N, y) (module docstring, "Known limit")
                e = natural_map(y, np.asarray(T @ contact.v), d.mu * lam_N, w_t, cone, k)
                produced.append(
                    [minv.norm(total - prev_total) / scale, natural_norm(e, w_t) / scale]
                    if scale > 0.0
                    else [0.0, 0.0]
                )
                if change <= tol * scale or (scale == 0.0 and change == 0.0):
                    status = "optimal"
                    break
            prev_C, prev_total = impulse_C, total
            f_C = problem.f + impulse_C - np.asarray(d.G.T @ contact.rows.part(contact.lam, "G"))
            g, fx = friction_qp.solve(self, f_C, d.mu * np.maximum(lam_N, 0.0), fx)
            if not np.all(np.isfinite(g)):
                status = "numerical_error"
                break
            residual = minv.norm(np.asarray(T.T @ (g - y)))
            if accel is None or residual <= tol * scale:
                y = g
            else:
                y = accel.step(y, g, weight * np.asarray(T.T @ (g - y)))
        assert contact is not None
        sol = make_solution(self, problem, contact.v, contact.rows, contact.lam, y, status, outer)
        if start.results:
            # the coupled solve is part of the step's work (time, iterations), not of its
            # status: the status is the alternation's own stopping test's
            sol = replace(
                sol,
                results=[*start.results, *sol.results],
                iterations=sol.iterations + sum(r.iterations for r in start.results),
                solve_time=sol.solve_time + sum(r.setup_time + r.solve_time for r in start.results),
            )
        cache[_CACHE] = FrictionMemory.record(y, contact.lam, contact.rows, problem)
        sol.cache[HISTORY] = np.asarray(history)
        sol.cache[PRODUCED] = np.asarray(produced).reshape(-1, 2)
        if self.coupled is not None:
            sol.cache[COUPLED] = start.record()
        return sol


@dataclass
class CoupledStart:
    """The coupled solve that starts a step's alternation (module docstring, "Coupled start").

    ``used``: whether the alternation started from it; ``status`` the coupled
    solve's status (or the solver layer's error message when it raised, or
    ``"no contacts"``); ``natural_map`` its natural-map residual (relative to
    ``||q||``); ``y`` its friction in the ``T`` basis and ``previous`` its
    ``(v, lambda_C)`` on the contact QP's rows (used only when ``used``);
    ``results`` its inner solver results.
    """

    used: bool
    status: str
    natural_map: float
    y: Array
    previous: tuple[Array, Array]
    results: list[Any]

    @classmethod
    def solve(
        cls, model: SolvingModel | None, problem: StepProblem, cache: dict[str, Any], rows: Rows
    ) -> CoupledStart:
        """Solve the step's fixed-point law by ``model`` (``None``: no coupled start)."""
        empty = (np.zeros(problem.n), np.zeros(rows.m))
        if model is None or problem.n_contacts == 0:
            status = "off" if model is None else "no contacts"
            return cls(False, status, np.nan, np.zeros(2 * problem.n_contacts), empty, [])
        try:
            s = model.solve(problem, cache)
        except SolverError as err:
            return cls(False, f"error: {err}", np.nan, np.zeros(2 * problem.n_contacts), empty, [])
        natural = max(
            (float(r.residuals.get("natural_map", np.nan)) for r in s.results), default=np.nan
        )
        lam = np.zeros(rows.m)
        for name, part in (("G", s.lambda_G), ("N", s.lambda_N), ("L", s.lambda_L)):
            if name in rows.slices:
                lam[rows.slices[name]] = part
        finite = bool(np.all(np.isfinite(lam)) and np.all(np.isfinite(s.lambda_T)))
        used = s.status in ACCEPT and finite and bool(np.all(np.isfinite(s.v)))
        return cls(used, s.status, natural, np.asarray(s.lambda_T), (s.v, lam), s.results)

    def record(self) -> dict[str, Any]:
        """What the step keeps of it (``StepSolution.cache[COUPLED]``): used, status,
        natural map, iterations."""
        return {
            "used": self.used,
            "status": self.status,
            "natural_map": self.natural_map,
            "iterations": int(sum(r.iterations for r in self.results)),
        }


class FrictionQP:
    """The friction QP of Sueda's notes, eq. (2.110), set up once per step.

    Dual form (impulses): variables ``x = (lambda_G', lambda_F)`` on rows
    ``K = [G; F]``; for a contact momentum ``f_C`` and cone radii
    ``r = mu lambda_N`` it is ``min 1/2 x' K M^-1 K' x + x'(K M^-1 f_C - [g; 0])``
    with the friction in the pyramid (``beta >= 0``, ``sum_j beta_ij <= r_i``),
    the box or the disc.

    Primal form (velocities, pyramid only): the same problem's Lagrangian dual,
    ``min 1/2 v'Mv - f_C'v + r's`` over ``(v, s)`` subject to ``G v = g`` and
    ``s_i + d_ij v >= 0`` for every direction ``j`` of contact ``i``.  The
    term ``r_i s_i = r_i max_j (-d_ij v)`` is the support function of the
    pyramid of radius ``r_i``, so the minimum over ``beta`` of the dual is the
    maximum over ``beta`` of the dissipation, and the multipliers of the
    direction rows are ``beta`` (``v = M^-1 (f_C + G'lambda_G' + D'beta)``,
    ``sum_j beta_ij = r_i``).  Its cost is the SPD mass matrix on ``v``
    instead of the singular Delassus matrix of the redundant directions
    ``d_ij``, ``-d_ij``, which first-order solvers reach far more accurately.
    """

    def __init__(
        self, problem: StepProblem, minv: MassInverse, k: int, cone: str, form: str = "dual"
    ) -> None:
        d = step_data(problem)
        self.cone, self.minv, self.nc, self.k = cone, minv, problem.n_contacts, k
        self.primal = form == "primal" and cone == "pyramid"
        self.F = pyramid_rows(d.T, k) if cone == "pyramid" else d.T
        nc, nf = self.nc, self.F.shape[0]
        if self.primal:
            self.mg, self.nf = d.G.shape[0], nf
            self.P = sp.block_diag([problem.M, sp.csr_matrix((nc, nc))], format="csc")
            self.A = sp.vstack(
                [
                    sp.hstack([d.G, sp.csr_matrix((self.mg, nc))]),
                    sp.hstack([self.F, pyramid_sum(nc, k).T]),
                    sp.hstack([sp.csr_matrix((nc, problem.n)), sp.identity(nc)]),
                ],
                format="csc",
            )
            self.g = d.g
            return
        self.rows = rows = stack_rows(
            problem.n, ("G", d.G, d.g, "free"), ("F", self.F, np.zeros(nf), "free")
        )
        self.P = minv.delassus(rows.C)
        self.f_idx = np.arange(rows.slices["F"].start, rows.slices["F"].stop)
        if cone == "pyramid":
            self.A = sp.vstack(
                [
                    sp.identity(rows.m, format="csr")[self.f_idx],
                    sp.hstack([sp.csr_matrix((nc, rows.m - nf)), pyramid_sum(nc, k)]),
                ],
                format="csc",
            )
            self.low = np.concatenate([np.zeros(nf), np.full(nc, -np.inf)])

    def start(self, lam: Array, contact_rows: Rows, y: Array, mu: Array) -> Any:
        """The inner start of the first friction QP at a coupled solution (dual form only).

        ``lam`` the contact impulses on ``contact_rows``, ``y`` the friction
        (``T`` basis): ``(lambda_G, lambda_F)`` with the pyramid's ``beta`` the
        decomposition of ``y`` on its two neighbouring directions
        (:func:`tangent_to_pyramid`), and for the disc the auxiliary radii
        ``mu lambda_N``.  ``None`` in the primal form (the QP in velocities starts cold).
        """
        if self.primal:
            return None
        lam_G = contact_rows.part(lam, "G") if "G" in contact_rows.slices else np.zeros(0)
        friction = tangent_to_pyramid(y, self.k) if self.cone == "pyramid" else y
        x = np.concatenate([lam_G, friction])
        if self.cone == "soc":
            lam_N = contact_rows.part(lam, "N")
            x = np.concatenate([x, mu * np.maximum(lam_N, 0.0)])
        return x

    def solve(
        self, model: SolvingModel, f_C: Array, radius: Array, warm: Any = None
    ) -> tuple[Array, Any]:
        """Friction impulse in the ``T`` basis ``(2 nc,)`` [N s] for momentum ``f_C`` and radii.

        ``warm``: the second value returned by the previous call (same step),
        the inner solver's start; returns it for the next call.
        """
        if self.primal:
            # s_i >= 0 (opposite directions make max_j(-d_ij v) >= 0); a contact without
            # normal impulse has no friction: its direction rows are dropped (l = -inf)
            # and s_i = 0, so no variable is left free at zero cost
            free = np.repeat(radius <= 0.0, self.k)
            low = np.concatenate([self.g, np.where(free, -np.inf, 0.0), np.zeros(self.nc)])
            up = np.concatenate(
                [self.g, np.full(self.nf, np.inf), np.where(radius <= 0.0, 0.0, np.inf)]
            )
            qp = QP(self.P, np.concatenate([-f_C, radius]), self.A, low, up)
            res = model.run(qp, warm)
            if res.y is None:
                return np.full(2 * self.nc, np.nan), None
            beta = -np.asarray(res.y[self.mg : self.mg + self.nf])
            return pyramid_to_tangent(beta, self.k), (res.x, res.y)
        rows = self.rows
        q = np.asarray(rows.C @ self.minv.vec(f_C)) - rows.b
        if self.cone == "pyramid":
            up = np.concatenate([np.full(self.f_idx.size, np.inf), radius])
            qp = QP(self.P, q, self.A, self.low, up)
        else:
            t_idx = self.f_idx.reshape(self.nc, 2)
            kind = "box" if self.cone == "box" else "disc"
            qp = bounded_friction_qp(self.P, q, rows.lo, rows.hi, t_idx, radius, kind)
        if warm is not None and np.shape(warm) != (qp.n,):
            warm = None
        x = np.asarray(model.run(qp, warm).x)
        lam_F = x[self.f_idx]
        return (pyramid_to_tangent(lam_F, self.k) if self.cone == "pyramid" else lam_F), x


@dataclass
class FrictionMemory:
    """One step's result kept to warm-start the next step's outer iteration.

    ``y`` the friction impulse in the ``T`` basis ``(2 nc,)`` [N s] and
    ``impulses`` the contact impulses with the contacts' ids,
    normal impulses and friction as world vectors (box friction's
    :class:`ImpulseMemory`), so that they carry over per persistent contact
    when the collision lists the contacts in another order or turns their
    tangent bases.
    """

    y: Array
    impulses: ImpulseMemory

    @classmethod
    def record(cls, y: Array, lam: Array, rows: Rows, problem: StepProblem) -> FrictionMemory:
        contacts = problem.contacts
        if contacts is None or len(contacts) == 0 or "N" not in rows.slices:
            return cls(y, ImpulseMemory(lam, dict(rows.slices), None, None, None))
        memory = ImpulseMemory(
            lam,
            dict(rows.slices),
            np.array(problem.contact_ids),
            rows.part(lam, "N").copy(),
            world_friction(y, contacts.normal),
        )
        return cls(y, memory)


def warm_start(
    old: Any, rows: Rows, problem: StepProblem, minv: MassInverse
) -> tuple[Array, tuple[Array, Array] | None]:
    """Friction ``y`` (``T`` basis) and contact-QP start ``(v, lambda)`` from the previous step.

    With contact geometry, impulses carry over per persistent contact id
    (:mod:`contactlab.contact.identity`): the
    normal impulse as it was, the friction as a world vector projected onto the
    new tangent basis; new contacts start at zero; joint and limit impulses
    carry over when their row counts are unchanged.  Without geometry (a bare
    step problem) they carry over by index when the shapes match.  No memory:
    zero friction and a cold contact QP.
    """
    nc = problem.n_contacts
    y = np.zeros(2 * nc)
    if not isinstance(old, FrictionMemory):
        return y, None
    mem, contacts = old.impulses, problem.contacts
    if mem.ids is not None and contacts is not None and len(contacts) > 0:
        assert mem.friction is not None and mem.normal_impulse is not None
        lam = np.zeros(rows.m)
        lam[rows.slices["N"]], y = carried_over(mem.ids, mem.normal_impulse, mem.friction, problem)
        for name in ("G", "L"):
            new_s, old_s = rows.slices.get(name), mem.slices.get(name)
            if new_s is not None and old_s is not None:
                if new_s.stop - new_s.start == old_s.stop - old_s.start:
                    lam[new_s] = mem.z[old_s]
    elif old.y.shape == (2 * nc,) and mem.z.shape == (rows.m,):
        y, lam = old.y.copy(), mem.z.copy()
    else:
        return y, None
    v = minv.vec(problem.f + np.asarray(rows.C.T @ lam) + np.asarray(step_data(problem).T.T @ y))
    return y, (v, lam)


def proximal_contact(
    model: SolvingModel, contact_qp: ContactQP, f: Array, previous: tuple[Array, Array], eps: float
) -> ContactSolve:
    """The dual contact QP for momentum ``f`` plus ``eps/2 ||lambda - lambda_prev||^2``.

    Its minimiser is unique, and is ``lambda_prev`` itself when ``lambda_prev``
    minimises the contact QP; started there.
    """
    qp = contact_qp.qp(f)
    lam0 = previous[1]
    P = qp.P + eps * sp.identity(qp.n, format="csc")
    q = qp.q - eps * lam0
    prox = QP(P, q, qp.A, qp.l, qp.u) if qp.m > 0 else QP(P, q)
    res = model.run(prox, lam0)
    assert contact_qp.minv is not None
    v = contact_qp.minv.vec(f + np.asarray(contact_qp.rows.C.T @ res.x))
    return ContactSolve(v, np.asarray(res.x), contact_qp.rows, res)


def tangent_to_pyramid(y: Array, k: int) -> Array:
    """Pyramid impulses ``(nc k,)`` ``>= 0`` whose sum of directions is ``y`` (``T`` basis).

    Each contact's tangent impulse is split on the two directions of the
    sector it lies in (angles ``a_j = 2 pi j / k``): with ``phi`` its angle past
    ``a_j`` and ``alpha = 2 pi / k``, ``beta_j = |y| sin(alpha - phi) / sin(alpha)`` and
    ``beta_{j+1} = |y| sin(phi) / sin(alpha)``; their sum is at most ``r`` when ``y``
    lies in the pyramid of radius ``r``.  The inverse of :func:`pyramid_to_tangent`.
    """
    Y = np.asarray(y, dtype=float).reshape(-1, 2)
    alpha = 2.0 * np.pi / k
    theta = np.mod(np.arctan2(Y[:, 1], Y[:, 0]), 2.0 * np.pi)
    j = np.minimum(np.floor(theta / alpha).astype(np.int64), k - 1)
    phi = theta - j * alpha
    size = np.hypot(Y[:, 0], Y[:, 1])
    beta = np.zeros((Y.shape[0], k))
    rows = np.arange(Y.shape[0])
    beta[rows, j] = size * np.sin(alpha - phi) / np.sin(alpha)
    beta[rows, (j + 1) % k] += size * np.sin(phi) / np.sin(alpha)
    return np.maximum(beta, 0.0).reshape(-1)


def velocity_weight(minv: MassInverse, n: int) -> Array:
    """``sqrt(diag(M^-1))``: scales a generalized impulse to the velocity change it causes.

    Exact (``M^-1/2``) for the diagonal mass matrix of maximal coordinates on
    principal axes, a diagonal approximation otherwise.
    """
    inv = minv.apply(sp.identity(n, format="csc"))
    return np.sqrt(np.maximum(np.asarray(inv.diagonal(), dtype=float).ravel(), 0.0))


class Anderson:
    """Anderson acceleration (type II, depth ``m``) of the fixed point ``y = g(y)``.

    From the last ``m`` differences of iterates ``dY`` and of residuals
    ``dR`` (``r = g(y) - y``) the next iterate is
    ``g - (dY + dR) gamma`` with ``gamma`` the least-squares solution of
    ``dR gamma = r``: the combination of the recent iterates whose
    linearised residual is smallest (Walker and Ni, SIAM J. Numer. Anal. 49,
    2011).  Once the active sets of the two QPs settle, the outer map of
    Staggered Projections is affine and this is a Krylov (GMRES-like)
    acceleration of it.  The memory restarts when the residual grows by more
    than ``restart`` times since the previous iterate (an active-set change).
    """

    def __init__(self, depth: int, restart: float = 2.0) -> None:
        self.depth, self.restart = depth, restart
        self.dY: list[Array] = []
        self.dR: list[Array] = []
        self.dW: list[Array] = []
        self.last: tuple[Array, Array, Array] | None = None

    def step(self, y: Array, g: Array, w: Array | None = None) -> Array:
        """The next iterate from the current one ``y`` and its image ``g = g(y)``.

        ``w``: the residual ``g - y`` as measured for the least squares (a
        linear image of it, e.g. the velocity change it causes); ``None`` uses
        ``g - y`` itself.
        """
        r = g - y
        w = r if w is None else w
        if self.last is not None:
            y0, r0, w0 = self.last
            if np.linalg.norm(w) > self.restart * np.linalg.norm(w0):
                self.dY, self.dR, self.dW = [], [], []
            else:
                self.dY.append(y - y0)
                self.dR.append(r - r0)
                self.dW.append(w - w0)
                del self.dY[: -self.depth], self.dR[: -self.depth], self.dW[: -self.depth]
        self.last = (y, r, w)
        if not self.dW:
            return g
        gamma = np.linalg.lstsq(np.column_stack(self.dW), w, rcond=1e-12)[0]
        return g - (np.column_stack(self.dY) + np.column_stack(self.dR)) @ gamma
