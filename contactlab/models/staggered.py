"""Staggered Projections (Sueda's notes, §2.11, Alg. 7): alternate a contact QP and a friction QP.

Each outer iteration solves the frictionless contact QP with the friction impulse
frozen (eq. 2.109), checks convergence (the contact and friction impulse changes
against the total impulse and the free momentum, in the ``M^-1`` norm), then the
friction QP of maximal dissipation with the normal impulses frozen (eq. 2.110), on
the ``"pyramid"``, ``"box"`` or ``"soc"`` cone.  The outer iterate is extrapolated by
Anderson acceleration (:class:`Anderson`); each step starts from the coupled
Coulomb problem of the model's cone (option ``coupled``, default ``"ipm"``), confirmed
by contact QPs with a proximal term (``proximal``); impulses are carried to the next
step per persistent contact (:class:`FrictionMemory`).

The method in full, its known limits and the measurements behind every default:
``docs/staggered-projections.md``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.contact.friction_cone import pyramid_rows
from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.memory import ModelMemory, recall
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
    check_outer,
    pyramid_sum,
    pyramid_to_tangent,
    stack_rows,
)
from contactlab.models.friction_map import natural_map, natural_norm, tangent_weight
from contactlab.models.frictionless import ContactQP, ContactSolve
from contactlab.problem import StepProblem, StepSolution
from solvers import QP, SolverError
from solvers.numerics.anderson import AndersonHistory

_CACHE = "staggered-projections:friction"
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

    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        d = problem
        cone = self.options["cone"]
        k = int(self.options["directions"] or problem.directions)
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
            y, previous = warm_start(
                recall(cache, _CACHE, FrictionMemory), contact_qp.rows, problem, minv
            )
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
        report = StaggeredReport(
            history=np.asarray(history),
            produced=np.asarray(produced).reshape(-1, 2),
            coupled=start.record() if self.coupled is not None else None,
        )
        return replace(sol, report=report)


@dataclass(frozen=True)
class StaggeredReport:
    """What a Staggered Projections step reports (``StepSolution.report``), apart from
    what it remembers for the next step (its warm start, in the model's memory).

    history : the relative velocity change of every outer iteration (the stopping test).
    produced : (checks, 2) per check, the velocity change and the friction's natural
        map at the returned iterate, relative like ``history``.
    coupled : the coupled start's record (:meth:`CoupledStart.record`: used, status,
        natural map, iterations), ``None`` without a coupled start.
    """

    history: Array
    produced: Array
    coupled: dict[str, Any] | None = None


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
        cls, model: SolvingModel | None, problem: StepProblem, cache: ModelMemory, rows: Rows
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
        """What the step reports of it (``StaggeredReport.coupled``): used, status,
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
        d = problem
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
    v = minv.vec(problem.f + np.asarray(rows.C.T @ lam) + np.asarray(problem.T.T @ y))
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


class Anderson(AndersonHistory):
    """Anderson acceleration (type II, depth ``m``) of the outer fixed point ``y = g(y)``.

    The step of :class:`solvers.numerics.anderson.AndersonHistory` with ``theta = 1``:
    ``g - (dY + dR) gamma``.  Once the active sets of the two QPs settle, the outer map
    of Staggered Projections is affine and this is a Krylov (GMRES-like) acceleration
    of it.  The memory restarts when the residual grows by more than ``restart`` times
    since the previous iterate (an active-set change).
    """

    def __init__(self, depth: int, restart: float = 2.0) -> None:
        super().__init__(depth, rcond=1e-12)
        self.restart = restart

    def step(self, y: Array, g: Array, w: Array | None = None) -> Array:
        """The next iterate from the current one ``y`` and its image ``g = g(y)``.

        ``w``: the residual ``g - y`` as measured for the least squares (a
        linear image of it, e.g. the velocity change it causes); ``None`` uses
        ``g - y`` itself.
        """
        r = g - y
        w = r if w is None else w
        if self.last is not None and np.linalg.norm(w) > self.restart * np.linalg.norm(
            self.last[2]
        ):
            self.forget()
        self.record(y, r, w)
        return self.mix(y, r, image=g)
