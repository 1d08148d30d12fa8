"""``ipm``: the interior-point backend -- the CCP by :func:`solvers.backends.fc_ipm.ipm_ccp`,
the Coulomb law by De Saxcé's fixed point on the shift (Newton's steps or Anderson's
mixing), its warm start and its finishes (semismooth Newton, ``nsgs`` sweeps)."""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar

import numpy as np

from solvers.backends.base import SolveOptions
from solvers.backends.fc_base import (
    FrictionBackend,
    _codes,
    _csr,
    _no_settings,
    _start,
    _status,
    floored,
    rounding_floor,
    within_rounding,
)
from solvers.errors import IncompatibleProblem, ProblemError
from solvers.frictional import FrictionalContact
from solvers.numerics.anderson import AndersonHistory
from solvers.result import RawSolution
from solvers.tolerance import Tolerance


class _Anderson(AndersonHistory):
    """Anderson's type-II mixing of fixed-point pairs ``(x_k, f_k = g(x_k) - x_k)``.

    ``x+ = x + θ f - (ΔX + θ ΔF) γ``, ``γ = argmin ||f - ΔF γ||`` over the last
    ``memory`` differences (:class:`solvers.numerics.anderson.AndersonHistory`); the
    history is dropped and ``θ`` halved (down to 1/8) whenever the Coulomb natural map
    rose since the last call, ``θ`` doubled back (up to 1) when it fell below 0.7 of it.
    """

    def __init__(self, memory: int) -> None:
        super().__init__(memory, rcond=1e-10)
        self.theta = 1.0
        self.prev = np.inf

    def relax(self, res: float) -> float:
        """Update and return ``θ`` from the natural map ``res`` of the newest round."""
        if res > self.prev:
            self.theta = max(0.5 * self.theta, 0.125)
            self.forget()
        elif res < 0.7 * self.prev:
            self.theta = min(2.0 * self.theta, 1.0)
        self.prev = res
        return self.theta

    def step(self, x: np.ndarray, f: np.ndarray, res: float) -> np.ndarray:
        """The mixed next shift (kept >= 0: ``h`` is a support function)."""
        self.relax(res)
        self.record(x, f)
        return np.maximum(self.mix(x, f, self.theta), 0.0)


def shift_note(form: Any) -> str:
    """What the result says when the normal matrix had to be shifted to factor
    (:meth:`solvers.backends.fc_ipm.Normal.factor`) or iterates were pushed back inside
    the cones (:func:`solvers.backends.fc_ipm.ipm_ccp`); empty when neither happened."""
    normal, note = form._normal, ""
    if normal is not None and normal.shifted:
        note += (
            f"; normal matrix regularised on {normal.shifted} factorisations (diagonal shift "
            f"up to {normal.largest_shift:g} of its largest entry)"
        )
    if form.recentred:
        note += f"; {form.recentred} iterates on a cone's boundary pushed back inside"
    return note


class IPMBackend(FrictionBackend):
    """Primal-dual interior point on the velocity form (:mod:`solvers.backends.fc_ipm`).

    The CCP is one :func:`~solvers.backends.fc_ipm.ipm_ccp`.  The Coulomb law (De Saxcé:
    ``K ∋ r ⟂ u + h(u_t) e_n ∈ K*``, ``h`` the support function of the cone's section,
    ``mu ||u_t||`` or ``mu (|u_1| + |u_2|)`` for the box) is the fixed point
    ``x = g(x) := h(u_t(x))`` of the shift ``x`` (one entry per contact), ``u(x)`` the
    velocities of the CCP with free velocity ``q + x e_n``.  Each round solves that CCP
    from the previous round's interior point (pushed inward by the slack's change) to
    ``inner_factor`` of the current Coulomb natural map and evaluates ``f = g(x) - x``;
    the next shift (kept ``>= 0``) by the method ``acceleration``:

    - ``"newton"`` (default on the exact cone): ``(I - J) δ = f`` by GMRES (relative
      tolerance 0.1), ``J = ∇h(u_t) du_t/dx`` applied matrix-free through the interior
      point's own Newton system (:meth:`_linearise`: one LDL' of ``M + Ĉ'ΘĈ`` at the
      round's last iterate, one pair of triangular solves per product; about 6 per step
      on 200-box steps), ``δ`` cut to ``trust`` times ``max |f|``.  Safeguard on the
      Coulomb natural map: a step that raises it above the best round's is replaced by
      its half from the best round (its interior point restored); if that fails too,
      Anderson's mixing for the rest of the solve.  On ten stored 200-box ``coulomb``
      steps (1,020 contacts): median 7 rounds, 61 iterations, none capped; the plain
      iteration 46 rounds, 249 iterations (rounds then solved to 0.1 and pushed 1x; with
      today's 0.2 and 0.1x, ten successive landed steps take 52 cold, 35 warm-started).
    - ``"anderson"`` (default on polyhedral cones): type-II Anderson mixing of the last
      ``memory`` rounds (:class:`_Anderson`), history dropped and the step relaxed while
      the natural map rises.  ``h`` of the box and the pyramid has a kink per direction
      that the linearisation does not see: on a 12-box landing step (30 contacts) Newton's
      steps stall at 5e-6 where Anderson's converge in 15 rounds.
    - ``"none"``: the relaxed plain iteration ``x + θ f`` (``θ`` halved while the natural
      map rises), the method before the two above.

    Warm start of the fixed point (impulses ``r_w``, the previous step's per persistent
    contact): their Coulomb natural map is evaluated first (``W r_w + q`` through the
    factor, nothing factored); if it meets the tolerance they are returned (0 rounds, 0
    iterations).  Otherwise, on every cone (``warm_cones``) and up to ``warm_limit``,
    the first shift is De Saxcé's of their velocities, ``x_1 = h(u_t(r_w))`` (so the
    first CCP's natural map at ``r_w`` is the Coulomb one), and the first CCP starts from
    their interior point (:meth:`~solvers.backends.fc_ipm.VelocityForm.impulse_point`)
    pushed ``warm_push_fixed_point`` (1) times that natural map inside the cones, solved
    to ``warm_inner`` (0.1) of it; the rounds then go on as above.  The cold start is
    ``r = 0`` and ``x_1 = h(q_t)``.  On ten successive steps of the landed 200-box
    pile (warm natural map 8e-5 to 5e-3): median 35 iterations in 3-6 rounds against 52
    in 7-12 cold; on the 30-box pile stacked at rest, none at 1e-6 (cold 41-45) and 2
    rounds, 40 iterations at 1e-8 (cold 9 rounds, 79-85).  On the pyramid
    (``stewart-trinkle``), same pile: 1 round, 8 iterations at 1e-6 against 10 rounds, 32
    cold; twenty steps of the landed 100- and 200-box piles capped 0 and 1 (the first,
    cold, step) against 1 and 3 cold.  On the box law, until its Newton finish existed,
    the warm-started trajectory of the 12-box landing transient (``test_fc_ipm``) reached
    a step on which Anderson's mixing stalled at 4.5e-6 until the cap; with the finish
    none caps.  The Coulomb law's solution need not be unique (redundant
    contacts): on a 12-box landing step warm and cold runs return two solutions, both at
    natural map <= 4e-9, whose velocities differ by 4.2e-3 m/s.

    Box and pyramid laws: Newton's finish.  Some steps of the box piles' transients stall
    every one of these methods (and ``nsgs``) between 1e-6 and 1e-5; there the fixed point
    stops once its smallest natural map has not halved over ``stall_rounds`` (10; pyramid
    ``stall_rounds_pyramid``, 20) rounds,
    and semismooth Newton on the law's min-function
    (:class:`~solvers.backends.fc_newton.BoxNewton`; on the pyramid
    :class:`~solvers.backends.fc_newton.PyramidNewton`, on Stewart and Trinkle's LCP; at
    most ``newton`` iterations; on the box law, whenever no step decreases its merit, again
    from its best iterate with ``ρ`` the next multiple of ``rho_ladder`` (1, 10, 100, 1000
    times ``1/diag W``), and after the last ``restart_sweeps`` sweeps and the ladder anew;
    on the pyramid law the sweeps at once) finishes from the best
    round's impulses (``finish_sweeps``, 0, ``nsgs`` sweeps before it).  If it misses the
    tolerance, the fixed point runs again without the stall test on the rest of the budget
    (from the start; the message says so).  Warm impulses whose natural map is at most
    ``newton_first`` (1e-4) go to Newton first, its proximal term from
    ``newton_first_eps`` (0.1), for at most ``newton_first_cap`` (20) iterations; if it
    misses, the fixed point starts from the better of its iterate and the warm impulses.
    On recorded steps of the landed piles at rest, Newton from the warm impulses takes 1-2
    iterations (100 boxes, 3-6 ms; the warm-started fixed point 3-10 rounds, 15-50 ms)
    and 2-9 (200 boxes, 12-47 ms; fixed point 4 rounds, 40-48 ms).  The iterations
    reported are the interior point's plus Newton's plus the sweeps.

    Exact cone: Newton's finish.  When the Coulomb law's rounds and the ``polish_sweeps``
    sweeps on the exact cone stop short of the tolerance, semismooth Newton on
    Alart--Curnier's function (:class:`~solvers.backends.fc_newton.SocNewton` with
    ``soc_rho_scale``; at most ``newton`` iterations, ``restart_sweeps`` sweeps whenever no
    step decreases its merit) finishes from their impulses, before the plain fallback
    below.  On the 18 saved steps of the 100- and 200-box drop transients that the fixed
    point left at 1.1e-6 to 8.3e-6 after 3,000 iterations (accelerated rounds, then the
    plain fallback), it converges on all 18 in 7-49 Newton iterations after the rounds' 500
    (0.5-1.0 s per step instead of 1-2 s).  There the plain iteration is no remedy: on the
    100-box step 108 its natural map stays at 1.88e-6 to 1.97e-6 from round 30 to round
    9,900 (one interior-point iteration per round), and Gauss--Seidel sweeps need 46,000
    sweeps (18 s) to reach 7.6e-7.

    Plain fallback.  On a few steps of piles landing from a drop the accelerated fixed
    point (and, on the box, Newton's finish) stops short (4 of 800 saved steps'
    problems: natural map 2.6e-6 to 5.6e-5 at the cap) while the relaxed plain iteration
    converges in 1,054-1,783 iterations (``results/benchmarks/friction_transient``).  So
    when a non-associated law is still short of the tolerance at the end, the plain
    iteration runs from the start on the rest of the budget: ``fallback_iterations``
    (3,000) when no ``max_iter`` is given, else ``max_iter`` (a run given 500 iterations
    spends at most 500); the better of the two results is kept and the message says so.
    On the box and pyramid laws the fallback keeps the stall test: once it stalls, Newton's
    finish runs from its best round (a second ``newton`` allotment), then the plain
    iteration without the stall test on the rest of the budget.  If the fallback stops short
    (any law), Newton's finish runs once more from its iterate (another allotment), then
    ``final_sweeps`` (5,000) Gauss--Seidel sweeps from the best iterate.  On the six saved
    box-law drop steps that ended capped (100 boxes steps 90, 174, 267; 200 boxes 91, 196,
    203; natural map 1.6e-6 to 1.4e-5) five converge, in 937-1,512 iterations (1.3-3.5 s);
    step 90 ends at 1.5e-6 (the plain iteration with the stall test and Newton from the
    start, given 6,000 iterations, converges after 3,171 interior-point iterations).  Before
    the stall test in the fallback, Newton once more and the sweeps converged on three of
    them (174, 196; 91 by 2,819 sweeps) and on 267 sweeps wander between 8e-5 and 3e-4 over
    28,000.

    Impulses beyond rounding.  Where ``W`` annihilates a direction inside the cones (a
    hinged paddle whose contact forces' lines cross the hinge axis: ``tumble.xml``'s step
    44) the law fixes the impulses only up to that ray and the interior point follows it;
    at ``|r| = 2e14`` the natural map read 2.7e-8 out of rounding (the layer's, 2.9e-2).
    Every natural map the backend judges is at least its rounding floor
    (:func:`rounding_floor` times ``|r|_inf``), and the interior-point loops stop at an
    iterate whose map is within it, keeping their best checked iterate (reason "impulses
    beyond rounding"; the fixed point's next round starts cold).  That step then converges
    (8.9e-7 at 1e-6, 27 iterations, ``|r|_inf`` 7.8e-3; its velocities ``admm``'s).
    """

    name = "ipm"
    kind = "interior_point"
    required_modules = ("numba", "qdldl")
    description = (
        "primal-dual interior point, velocity form, sparse LDL' (CCP; Coulomb by a fixed point)"
    )
    supports_warm_start = True
    #: A warm start's impulses that miss the tolerance become an interior point pushed
    #: inside the cones by this multiple of their natural map (times the free velocity's
    #: scale; :meth:`~solvers.backends.fc_ipm.VelocityForm.impulse_point`).
    warm_push = 3.0
    #: A warm start whose natural map exceeds this is not used (the cold start is better
    #: centred: on a random 5-contact problem, impulses with natural map 0.3 and 1.8 took
    #: 18 and 21 iterations against 16 cold; on pile steps up to 3e-2 they save a quarter).
    warm_limit = 0.1
    #: The CCP's natural map is checked every other iteration while above this multiple of
    #: the tolerance (``ipm_ccp(far=...)``).
    check_far = 30.0
    #: The natural map every ``ipm`` row of ``benchmarks/bench_friction.py`` asks for
    #: (``results/benchmarks/friction.md``), so that a user's default run is the benchmark's:
    #: at 1e-8 the 200-box ``anitescu-hart`` soc run from the drop stopped at step 129 (the
    #: iterate stalled on the cone boundary at 1.2e-6).  An interior iterate spreads its
    #: error over every contact: at 1e-6 the body velocities of a three-cube step differ
    #: from the reference by 2.8e-5 m/s, at 1e-8 they agree to 1e-5 like the other
    #: backends' at 1e-6; ask for 1e-8 (``solver_tol``) where that matters.
    tolerance = Tolerance(1e-6, request=1e-6)
    #: Models pass ``W``'s factor ``(C, M^-1)`` with the local problem
    #: (``FrictionalContact.factor``).
    uses_fc_factor = True
    #: Whether a fixed-point round starts from the previous round's iterate, and how far
    #: into the interior it is pushed (times the change of the slack the new shift makes),
    #: per method: Newton's rounds 0.1 (on ten successive 200-box ``coulomb`` steps,
    #: warm-started median 35 iterations against 44 at 1.0, cold 52 against 57; 0.05 and
    #: 0.3 took 39 warm).
    warm_rounds = True
    push: ClassVar[dict[str, float]] = {"newton": 0.1, "anderson": 1.0, "none": 1.0}
    #: The Coulomb law's fixed point on De Saxcé's shift (setting ``acceleration``):
    #: ``"newton"``, ``"anderson"`` or ``"none"`` (the relaxed plain iteration); the
    #: default per cone (Newton on the exact cone; Anderson on polyhedral cones, whose
    #: ``h`` has a kink per direction that Newton's linearisation does not see).
    acceleration: ClassVar[dict[str, str]] = {
        "soc": "newton",
        "pyramid": "anderson",
        "box": "anderson",
    }
    #: Each round's CCP is solved to this fraction of the current Coulomb residual, per
    #: method (Newton's linearisation needs the tighter rounds; 0.2 rather than 0.1: on
    #: seven 200-box steps 35 iterations warm-started against 41, cold 63 against 66;
    #: 0.3 and 0.05 took more), not below ``inner_floor * tol``.
    inner_factor: ClassVar[dict[str, float]] = {"newton": 0.2, "anderson": 0.3, "none": 0.3}
    inner_floor = 0.5
    #: The Coulomb law's warm start (impulses within ``warm_limit``), per cone: the first
    #: shift ``h(u_t(r_warm))``, the first round's CCP from ``r_warm``'s interior point
    #: pushed ``warm_push_fixed_point`` times its natural map inside the cones and solved
    #: to ``warm_inner`` of it (on every cone; a warm start meeting the tolerance is
    #: returned whatever this says).
    warm_cones: ClassVar[dict[str, bool]] = {"soc": True, "pyramid": True, "box": True}
    warm_push_fixed_point = 1.0
    warm_inner = 0.1
    #: Newton: GMRES's relative tolerance on ``(I - J) δ = f``; the step at most ``trust``
    #: times ``max |f|``; after a step that raised the natural map, ``halvings`` halved
    #: steps from the best round, then ``fallback`` for the rest of the solve.
    krylov_tol = 0.1
    trust = 10.0
    halvings = 1
    fallback = "anderson"
    #: Anderson's memory (pairs of the last rounds; setting ``memory``).
    memory = 5
    #: Coulomb law (box, pyramid, exact cone): semismooth Newton iterations
    #: (:mod:`solvers.backends.fc_newton`) that may finish a fixed point stopped short of the
    #: tolerance (setting ``newton``; 0: none).  The settings below marked "box law" apply
    #: to the pyramid law too.
    newton_iterations = 300
    #: Exact cone: the ``rho_scale`` of the finish's
    #: :class:`~solvers.backends.fc_newton.SocNewton` (its docstring: 10 converges on 18 of
    #: 18 saved drop-transient steps, 1 on 17).
    soc_rho_scale = 10.0
    #: Box law with a Newton finish: the fixed point stops when its smallest natural map has
    #: not halved over this many rounds (20 before the warm start; warm-started, on ten
    #: recorded 100-box steps, 10 took 6 % less time than 20, 5 no less than 10).
    stall_rounds = 10
    #: ... on the pyramid law (its Newton iterations cost more: 6 unknowns per contact, 12 ms
    #: per factorisation at 200 boxes; on eight recorded 200-box ``stewart-trinkle`` steps
    #: where 10 handed over to Newton, 20 took 2.4 s in all against 3.2 s, 40 no better).
    stall_rounds_pyramid = 20
    #: Sweeps between two Newton runs when no step length decreases Newton's merit.
    restart_sweeps = 50
    #: Box law: the multiples of ``BoxNewton``'s ``ρ = 1/diag W`` tried in turn, from the
    #: best iterate, when no step length decreases Newton's merit (before the sweeps of
    #: ``restart_sweeps``, after which the ladder starts again).  ``ρ`` decides which side
    #: of each kink ``r - ρ u`` selects: on the 100-box drop step 90, stalled at 1.55e-6,
    #: the piece at 1, 10 and 100 keeps two corners pressed that the solution releases
    #: (the piece's least-squares solution leaves 1.60e-6 of ``||Φ|| = 1.73e-6``) and no
    #: step decreases the merit; at 500-5000 Newton converges in 4-27 iterations (1e4
    #: and above: no descent again).
    rho_ladder: ClassVar[dict[str, tuple[float, ...]]] = {"box": (1.0, 10.0, 100.0, 1000.0)}
    #: Interior-point iterations in all (accelerated rounds, then the plain fallback) when
    #: no ``max_iter`` is given and the accelerated fixed point stops short.
    fallback_iterations = 3000
    #: Gauss--Seidel sweeps that may finish a run stalled short of the tolerance.
    polish_sweeps = 200
    #: Sweeps from the best iterate when the plain fallback and Newton's second finish
    #: stop short too (class docstring, "Plain fallback").
    final_sweeps = 5000
    #: Box law with a Newton finish: sweeps before Newton starts (0: Newton from the fixed
    #: point's best round; on ten recorded 100-box steps the 200 of ``polish_sweeps`` took
    #: 77 ms where they ran and met the tolerance on 2 of 8).
    finish_sweeps = 0
    #: Box law with a Newton finish: warm impulses whose natural map is at most
    #: ``newton_first`` go to Newton first, for at most ``newton_first_cap`` iterations.
    newton_first = 1e-4
    newton_first_cap = 20
    #: ... with its proximal term starting at this (relative to ``diag W``; ``BoxNewton``'s
    #: default 1e-8 gives, at redundant corner contacts, steps whose merit is 1e12 times
    #: the start's, and the line search fails through ``ε`` = 1e-8 ... 1e-3, one
    #: factorisation each: on seven 200-box steps at rest 7 factorisations and 37 ms,
    #: at 0.1 2-4 and 12-23 ms; 0.03, 0.3 and 1 no better).
    newton_first_eps = 0.1
    #: Largest ``W`` factored by its eigendecomposition when the problem carries no factor.
    dense_limit = 600

    def check_fc(self, problem: FrictionalContact) -> None:
        super().check_fc(problem)
        if problem.factor is None and problem.n > self.dense_limit:
            raise IncompatibleProblem(
                f"ipm needs the factor W = C diag(d) C' (FrictionalContact(factor=...)) for "
                f"problems over {self.dense_limit} rows; this one has {problem.n}"
            )

    def solve_fc(self, problem: FrictionalContact, opts: SolveOptions) -> RawSolution:
        import scipy.sparse as sp

        from solvers.backends.fc_ipm import FactorResidual, VelocityForm, eig_factor, ipm_ccp
        from solvers.numerics.fc_kernels import factor_velocity, matvec, natural_map

        settings = dict(opts.settings)
        accel = str(settings.pop("acceleration", self.acceleration[problem.cone]))
        memory = int(settings.pop("memory", self.memory))
        newton_cap = int(settings.pop("newton", self.newton_iterations))
        _no_settings(self.name, settings, ("acceleration", "memory", "newton"))
        if newton_cap < 0:
            raise ProblemError("newton", f"the Newton finish's cap must be >= 0, got {newton_cap}")
        if accel not in ("anderson", "newton", "none"):
            raise ProblemError(
                "acceleration",
                f"ipm's fixed point takes 'newton', 'anderson' or 'none', got {accel!r}",
            )
        if memory < 1:
            raise ProblemError("memory", f"Anderson's memory must be >= 1, got {memory}")
        law, kind = _codes(problem)
        if problem.nc == 0:
            # bilateral rows only: no De Saxcé shift, the Coulomb law is the CCP
            law = 0
        cap = (100 if law == 0 else 500) if opts.max_iter is None else int(opts.max_iter)
        t0 = time.perf_counter()
        if problem.factor is not None:
            C, d = problem.factor
            if not (sp.issparse(C) and C.format == "csr"):
                C = sp.csr_matrix(C)
        else:
            Cd, d = eig_factor(problem.W.toarray())
            C = sp.csr_matrix(Cd)
        form = VelocityForm(problem, C, d)
        # no BLAS call on a long vector: on a loaded machine its thread start-up cost ms
        qnorm = math.sqrt(float(np.einsum("i,i->", problem.q, problem.q)))
        u = np.empty(problem.n)
        ccp_residual = None
        if problem.factor is not None:
            # u = W r + q through the factor (W itself is never formed on this path)
            fptr, fidx, fval, fd = problem.factor_arrays
            ftmp = np.empty(C.shape[1])

            def velocity(r: np.ndarray, q: np.ndarray) -> None:
                factor_velocity(fptr, fidx, fval, fd, r, q, ftmp, u)

            if law == 0:
                # the same residual as compiled data: ipm_ccp runs it inside its loop
                ccp_residual = FactorResidual((fptr, fidx, fval, fd), problem.q, kind, problem,
                                              qnorm, u)  # fmt: skip
        else:
            ptr, idx, val = _csr(problem)

            def velocity(r: np.ndarray, q: np.ndarray) -> None:
                matvec(ptr, idx, val, r, q, u)

        floor = rounding_floor(problem, qnorm)

        def residual(r: np.ndarray) -> tuple[float, np.ndarray]:
            velocity(r, problem.q)
            res = natural_map(
                law, kind, problem.mu, problem.dirs, problem.row_lo, problem.nc, r, u, qnorm
            )
            return floored(float(res), r, floor), u

        def ccp_loop_residual(r: np.ndarray) -> tuple[float, np.ndarray]:
            velocity(r, problem.q)
            res = natural_map(
                law, kind, problem.mu, problem.dirs, problem.row_lo, problem.nc, r, u, qnorm
            )
            return within_rounding(float(res), r, floor), u

        t1 = time.perf_counter()
        # the box law with Newton's finish (class docstring)
        finish = law == 1 and problem.cone in ("box", "pyramid") and newton_cap > 0
        newton_first, from_warm, total, rounds = 0, False, 0, 0
        built: list[Any] = []

        def box_newton() -> Any:
            """The law's semismooth Newton (:class:`~solvers.backends.fc_newton.BoxNewton`,
            :class:`~solvers.backends.fc_newton.PyramidNewton` or
            :class:`~solvers.backends.fc_newton.SocNewton`), built once."""
            from solvers.backends.fc_newton import BoxNewton, PyramidNewton, SocNewton

            if not built:
                d64 = np.asarray(d, dtype=np.float64)
                if problem.cone == "soc":
                    built.append(SocNewton(problem, C, d64, self.soc_rho_scale))
                else:
                    kind_newton = BoxNewton if problem.cone == "box" else PyramidNewton
                    built.append(kind_newton(problem, C, d64))
            return built[0]

        if law == 0:
            rounds = 1
            point, iterate = None, True
            if opts.x0 is not None:
                r = _start(problem, opts)
                res, _ = (ccp_residual or residual)(r)
                if res <= opts.tol:
                    total, reason, iterate = 0, "converged at the warm start", False
                elif res <= self.warm_limit:
                    push = min(max(self.warm_push * res, 1e-12), 1e-2)
                    point = form.impulse_point(r, problem.q, push)
            if iterate:
                r, total, res, reason = ipm_ccp(
                    form, problem.q, opts.tol, cap, ccp_residual or ccp_loop_residual, point=point,
                    far=self.check_far,
                )  # fmt: skip
                if reason == "not finite" and math.isfinite(res):
                    reason = "impulses beyond rounding"  # ccp_loop_residual stopped it
        else:
            warm = None if opts.x0 is None else _start(problem, opts)
            if finish and warm is not None:
                res_w, _ = residual(warm)
                if opts.tol < res_w <= self.newton_first:
                    # warm impulses near the solution: Newton straight from them (a few
                    # iterations on a pile at rest); if it misses, its best iterate (or the
                    # warm impulses) starts the fixed point
                    finisher = box_newton()
                    r_n, newton_first, res_n, _ = finisher.solve(
                        warm, opts.tol, min(self.newton_first_cap, newton_cap),
                        self.newton_first_eps,
                    )  # fmt: skip
                    if res_n <= opts.tol:
                        r, res, reason, from_warm = r_n, res_n, "converged", True
                    elif res_n < res_w:
                        warm = r_n
            if not from_warm:
                # with a Newton finish ahead, the box law's fixed point stops once it stalls
                stall = 0
                if finish:
                    pyr = problem.cone == "pyramid"
                    stall = self.stall_rounds_pyramid if pyr else self.stall_rounds
                r, total, res, reason, rounds = self._rounds(
                    form, problem, C, opts.tol, cap, residual, velocity, u, qnorm, kind, accel,
                    memory, warm, stall,
                )  # fmt: skip
        sweeps = 0
        polish = self.finish_sweeps if finish else self.polish_sweeps
        if res > opts.tol and polish and np.all(np.isfinite(r)):
            # near the cones' boundary the scaling loses digits (the iterates stall around
            # 1e-7): finish from the interior point's impulses with Gauss--Seidel sweeps
            from solvers.numerics.fc_kernels import nsgs

            r = r.copy()
            ptr, idx, val = _csr(problem)
            args = (ptr, idx, val, problem.q, law, kind, problem.mu, problem.dirs, problem.row_lo)
            sweeps, res = nsgs(*args, problem.nc, r, 1.0, opts.tol, polish, False)
            res = float(res)
            reason = "converged" if res <= opts.tol else reason
        newton_its, rerun = newton_first, False
        # the exact cone: Newton on Alart--Curnier's function when the rounds stop short
        soc_finish = law == 1 and problem.cone == "soc" and newton_cap > 0

        def newton_finish(r: np.ndarray, res: float, budget: int) -> tuple[Any, float, int, int]:
            """Newton from ``r`` for at most ``budget`` iterations, ``restart_sweeps`` sweeps
            whenever no step decreases its merit: ``(r, res, iterations, sweeps)``."""
            from solvers.numerics.fc_kernels import nsgs

            finisher = box_newton()
            ptr, idx, val = _csr(problem)
            args = (ptr, idx, val, problem.q, law, kind, problem.mu, problem.dirs, problem.row_lo)
            its_all, sweeps_all = 0, 0
            ladder = self.rho_ladder.get(problem.cone, (1.0,))
            rung = 0
            finisher.scale_rho(ladder[rung])
            while its_all < budget:
                r, its, res, why = finisher.solve(r, opts.tol, budget - its_all)
                its_all += its
                if res <= opts.tol or why != "no descent":
                    break
                if rung + 1 < len(ladder):
                    # the pieces ``r - ρ u`` select at a larger ``ρ`` (class docstring)
                    rung += 1
                    finisher.scale_rho(ladder[rung])
                    continue
                rung = 0
                finisher.scale_rho(ladder[rung])
                # no step length decreases the merit (a local minimum of 0.5 ||Φ||² on a
                # piece without a solution): a few sweeps move the iterate off it
                r = r.copy()
                more, res = nsgs(*args, problem.nc, r, 1.0, opts.tol, self.restart_sweeps, False)
                sweeps_all += int(more)
                res = float(res)
                if res <= opts.tol:
                    break
            return r, res, its_all, sweeps_all

        if res > opts.tol and (finish or soc_finish) and np.all(np.isfinite(r)):
            # the fixed point and the sweeps stopped short (a contact sliding in a corner of
            # the box makes the fixed point's Jacobian about 1): semismooth Newton on the
            # law's min-function, from the sweeps' impulses
            r, res, its, more = newton_finish(r, res, newton_cap - newton_its)
            newton_its += its
            sweeps += more
            reason = "converged" if res <= opts.tol else reason
            if res > opts.tol and reason == "stalled" and total < cap:
                # Newton did not finish either: the fixed point without the stall test, the rest
                # of the budget (from the start; slow on such steps, but it contracts)
                kept_r, kept_res = r, res
                rerun = True
                r, more, res, reason, more_rounds = self._rounds(
                    form, problem, C, opts.tol, cap - total, residual, velocity, u, qnorm,
                    kind, accel, memory,
                )  # fmt: skip
                total += more
                rounds += more_rounds
                if res > kept_res:
                    r, res = kept_r, kept_res
        fallback = False
        if law == 1 and res > opts.tol and accel != "none" and np.all(np.isfinite(r)):
            # the accelerated fixed point (and Newton's finish) stopped short: the relaxed
            # plain iteration from the start, on the rest of the budget (class docstring)
            budget = (self.fallback_iterations if opts.max_iter is None else cap) - total
            if budget > 0:
                fallback = True
                kept_r, kept_res, kept_reason = r, res, reason
                spent = total
                stall = 0
                if finish:
                    pyr = problem.cone == "pyramid"
                    stall = self.stall_rounds_pyramid if pyr else self.stall_rounds
                r, more, res, reason, more_rounds = self._rounds(
                    form, problem, C, opts.tol, budget, residual, velocity, u, qnorm,
                    kind, "none", memory, None, stall,
                )  # fmt: skip
                total += more
                rounds += more_rounds
                if finish and reason == "stalled" and np.all(np.isfinite(r)):
                    # box and pyramid laws: the plain iteration stalled too; Newton's finish
                    # from its best round (a second ``newton`` allotment), then the plain
                    # iteration without the stall test on the rest of the budget
                    r, res, its, more = newton_finish(r, res, newton_cap)
                    newton_its += its
                    sweeps += more
                    reason = "converged" if res <= opts.tol else reason
                    rest = budget - (total - spent)
                    if res > opts.tol and rest > 0:
                        kept2_r, kept2_res = r, res
                        r, more, res, reason, more_rounds = self._rounds(
                            form, problem, C, opts.tol, rest, residual, velocity, u, qnorm,
                            kind, "none", memory,
                        )  # fmt: skip
                        total += more
                        rounds += more_rounds
                        if res > kept2_res or not math.isfinite(res):
                            r, res = kept2_r, kept2_res
                if res > kept_res or not math.isfinite(res):
                    r, res, reason = kept_r, kept_res, kept_reason
                if opts.max_iter is None:
                    cap = self.fallback_iterations
            if fallback and res > opts.tol and (finish or soc_finish) and np.all(np.isfinite(r)):
                # Newton once more, from the fallback's iterate (on its own ``newton`` cap)
                r, res, its, more = newton_finish(r, res, newton_cap)
                newton_its += its
                sweeps += more
                if res <= opts.tol:
                    reason = "converged"
            if fallback and res > opts.tol and self.final_sweeps and np.all(np.isfinite(r)):
                # still short: Gauss--Seidel sweeps from the best iterate (class docstring)
                from solvers.numerics.fc_kernels import nsgs

                ptr, idx, val = _csr(problem)
                r_s = r.copy()
                more, res_s = nsgs(
                    ptr, idx, val, problem.q, law, kind, problem.mu, problem.dirs,
                    problem.row_lo, problem.nc, r_s, 1.0, opts.tol, self.final_sweeps, False,
                )  # fmt: skip
                sweeps += int(more)
                if float(res_s) < res:
                    r, res = r_s, float(res_s)
                if res <= opts.tol:
                    reason = "converged"
        t2 = time.perf_counter()
        msg = (
            f"ipm: natural-map residual {res:.3e} after {total} iterations"
            + (f", {newton_its} semismooth Newton iterations" if newton_its else "")
            + (" from the warm start" if from_warm else "")
            + (f" and {sweeps} nsgs sweeps" if sweeps else "")
            + (f" in {rounds} fixed-point rounds" if law == 1 and not from_warm else "")
            + (" (the fixed point rerun after Newton's finish)" if rerun else "")
            + (" (then the plain fixed point as fallback)" if fallback else "")
            + f" (tol {opts.tol:g}; {reason})"
            + shift_note(form)
            + (
                f"; Newton's matrix singular {built[0].singular} times (its proximal term "
                "raised tenfold each)"
                if built and built[0].singular
                else ""
            )
        )
        capped = reason in ("cap", "stalled") or total >= cap or newton_its >= newton_cap > 0
        if capped and res > opts.tol:
            reason = "iteration cap"
        status = _status(res, opts.tol, capped)
        iterations = total + newton_its + int(sweeps)
        return RawSolution(r, None, status, msg, iterations, t1 - t0, t2 - t1)

    def _rounds(  # type: ignore[no-untyped-def]
        self, form, problem, C, tol, cap, residual, velocity, u, qnorm, kind, accel, memory,
        warm=None, stall=0,
    ) -> tuple[np.ndarray, int, float, str, int]:  # fmt: skip
        """De Saxcé's fixed point ``x = h(u_t(x))`` on the per-contact shift ``x``.

        Round ``k`` solves the CCP with ``q_n + x_k`` (:func:`ipm_ccp`, warm from the
        previous round's interior point) and evaluates ``f_k = h(u_t) - x_k``; the next
        shift by ``accel`` (class docstring).  Returns ``(r, iterations, natural map,
        reason, rounds)``, the best round's ``r`` if the last one is worse.  With ``stall > 0``
        it stops (reason ``"stalled"``) once the smallest natural map has not halved over the
        last ``stall`` rounds.
        """
        import scipy.sparse.linalg as spla

        from solvers.backends.fc_ipm import FactorResidual, ipm_ccp
        from solvers.numerics.fc_kernels import natural_map, support_shift

        nc = problem.nc
        nrm = np.arange(0, 3 * nc, 3)
        q_n = problem.q[nrm].copy()
        qs = problem.q.copy()
        scratch = problem.q.copy()

        def shift_of_u() -> np.ndarray:
            support_shift(kind, problem.mu, problem.dirs, nc, problem.q, u, scratch)
            return np.asarray(scratch[nrm] - q_n)

        floor = rounding_floor(problem, qnorm)

        def inner(r_in: np.ndarray) -> tuple[float, np.ndarray]:
            velocity(r_in, qs)
            out = natural_map(0, kind, problem.mu, problem.dirs, problem.row_lo, nc, r_in, u, qnorm)
            return within_rounding(float(out), r_in, floor), u

        # through the factor: the same residual as compiled data (run inside ipm_ccp's loop)
        inner_res: Any = inner
        if problem.factor is not None:
            inner_res = FactorResidual(problem.factor_arrays, qs, kind, problem, qnorm, u)
        point = None
        if warm is not None:
            # the previous step's impulses: their Coulomb natural map (no factorisation yet)
            res, _ = residual(warm)
            if res <= tol:
                return warm, 0, float(res), "converged at the warm start", 0
        if warm is not None and res <= self.warm_limit and self.warm_cones.get(problem.cone, False):
            # De Saxcé's shift of the warm impulses' velocities, h(u_t(r_warm)); with it the
            # first round's CCP has the same natural map as the Coulomb law at r_warm, and
            # starts from r_warm's interior point pushed by the CCP warm start's rule
            r = warm
            x = shift_of_u()
            qs[nrm] = q_n + x
            push = min(max(self.warm_push_fixed_point * res, 1e-12), 1e-2)
            point = form.impulse_point(r, qs, push)
        else:
            r = np.zeros(problem.n)
            res, _ = residual(r)
            x = shift_of_u()  # h(q_t): the shift of the velocities at r = 0
        mixer = _Anderson(memory)
        total, rounds, reason = 0, 0, "cap"
        best: tuple | None = None  # (res, x, f, interior point, Newton step, r)
        fails = 0
        mode = accel
        lowest: list[float] = []  # the smallest natural map after each round
        while total < cap:
            rounds += 1
            qs[nrm] = q_n + x
            factor = self.inner_factor[mode] if rounds > 1 or point is None else self.warm_inner
            inner_tol = max(self.inner_floor * tol, factor * res)
            start = None
            if rounds > 1 and self.warm_rounds and form.last is not None:
                start = (*form.last, self.push[mode])
            r, it, _, reason = ipm_ccp(form, qs, inner_tol, cap - total, inner_res, start, point)
            point = None
            total += it
            if reason == "not finite":
                # the interior point ran off along a ray of W's null space inside the cones
                # (inner residual): its best iterate is kept, the next round starts cold
                reason, form.last = "impulses beyond rounding", None
            res, _ = residual(r)
            if res <= tol or not np.isfinite(res):
                break
            if not lowest or res < lowest[-1]:
                kept = (r, res)
            lowest.append(min(res, lowest[-1]) if lowest else res)
            if stall and len(lowest) > stall and lowest[-1] > 0.5 * lowest[-1 - stall]:
                reason = "stalled"
                r, res = kept  # the best round's impulses for the finish
                break
            f = shift_of_u() - x
            if mode == "newton" and (best is None or res <= best[0]):
                # a new best round: linearise here, Newton's step within a trust region
                try:
                    jvp = self._linearise(form, problem, C, kind, u)
                except ValueError:
                    # its normal matrix does not factor, even shifted: Anderson from here on
                    mode, best = self.fallback, None
                    x = mixer.step(x, f, res)
                    continue
                op = spla.LinearOperator((nc, nc), matvec=jvp, dtype=np.float64)
                step = np.asarray(spla.gmres(op, f, rtol=self.krylov_tol, restart=30, maxiter=1)[0])
                bound = self.trust * float(np.abs(f).max())
                big = float(np.abs(step).max())
                if big > bound:
                    step *= bound / big
                best = (res, x, f, form.last, step, r)
                fails = 0
                x = np.maximum(x + step, 0.0)
                continue
            if mode == "newton" and best is not None:
                fails += 1
                if fails <= self.halvings:
                    # Newton's step raised the natural map: a shorter one from the best round
                    res_b, x_b, _, last_b, step_b, _ = best
                    form.last, res = last_b, res_b
                    x = np.maximum(x_b + 0.5**fails * step_b, 0.0)
                    continue
                # the linearisation does not describe this step's switches: the safeguarded
                # fixed point from here on
                mode = self.fallback
                best = None
            if mode == "none":
                x = np.maximum(x + mixer.relax(res) * f, 0.0)
            else:
                x = mixer.step(x, f, res)
        if best is not None and res > best[0] and np.isfinite(best[0]):
            r, res = best[5], best[0]
        if res > tol and total >= cap:
            reason = "cap"  # the last round's CCP converged, the fixed point did not
        if res <= tol:
            reason = "converged"
        return r, total, float(res), reason, rounds

    def _linearise(self, form, problem, C, kind, u):  # type: ignore[no-untyped-def]
        """``w -> (I - J) w``, ``J = dh(u_t(x))/dx`` linearised at the last interior point.

        The sensitivity of the CCP's velocities to its free velocity is the Newton system of
        :func:`~solvers.backends.fc_ipm.ipm_ccp` at its last iterate ``(v, s, z)`` with only
        ``ŵ`` moved (``s ∘ z`` kept): ``K dv = Ĉ'Θ(-dŵ)`` with ``dŵ = T'(w e_n)``,
        ``K = D^-1 + Ĉ'ΘĈ`` factored once here (one factorisation per Newton step), one
        pair of triangular solves per product; ``du = C dv``.  At a small barrier a
        sticking contact's ``Θ`` is large (``du_t`` about 0) and a separated one's small,
        so this is the derivative of the active set's equality-constrained solution.
        """
        from solvers.backends.fc_ipm import apply_theta, csr_mul, csr_tmul, nt_scaling

        nc = problem.nc
        nrm = np.arange(0, 3 * nc, 3)
        _, s, z, _ = form.last
        bptr = form.bptr
        m, nb = s.size, bptr.size - 1
        wbar, eta, lam, theta = np.zeros(m), np.ones(nb), np.empty(m), np.zeros(9 * nb)
        nt_scaling(bptr, s, z, wbar, eta, lam, theta)
        form.normal.factor(theta)
        Ch = form.Ch
        nv = Ch.shape[1]
        cp, ci, cd = Ch.indptr.astype(np.int64), Ch.indices.astype(np.int64), Ch.data
        fp, fi, fd = C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data
        mu = problem.mu
        ut1, ut2 = u[nrm + 1], u[nrm + 2]
        # gradient of h: mu u_t / |u_t| (exact cone), mu sign(u_t) per component (box);
        # zero where h has its kink (no slip)
        if kind == 0:
            norm = np.hypot(ut1, ut2)
            safe = np.where(norm > 0.0, norm, 1.0)
            g1, g2 = mu * ut1 / safe, mu * ut2 / safe
        else:
            g1, g2 = mu * np.sign(ut1), mu * np.sign(ut2)
        dq = np.zeros(problem.n)
        trp, du = np.empty(m), np.empty(problem.n)
        rhs = np.zeros(form.normal.size)

        def jvp(w: np.ndarray) -> np.ndarray:
            dq[nrm] = w
            dwh, _ = form.lift(dq)
            apply_theta(bptr, theta, -dwh, trp)
            csr_tmul(cp, ci, cd, trp, rhs[:nv])
            dv = form.normal.solve(rhs)[:nv]
            csr_mul(fp, fi, fd, dv, du)
            return np.asarray(w - (g1 * du[nrm + 1] + g2 * du[nrm + 2]))

        return jvp
