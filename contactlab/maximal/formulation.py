"""The maximal-coordinate formulation: one SE(3) transform and one twist per body.

Each step poses the KKT problem of Sueda's notes, eq. 1.73, in the sign
convention of :mod:`contactlab.problem` (``M phi+ = f + G^T lambda``, so the
seed's ``lambda`` is minus ours), with the joints and registered constraints
as rows ``G`` (:mod:`contactlab.joints.joint_constraints`), Baumgarte right-hand sides
(:mod:`contactlab.maximal.assembly`), and contact rows when a contact set is
given; positions follow by ``E <- E exp(h [phi+])`` (eq. 1.29).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from numpy.typing import NDArray

from contactlab import se3
from contactlab.collision.contacts import ContactSet
from contactlab.csr import empty_csr
from contactlab.errors import ConfigurationError, SingularSystemError
from contactlab.formulation import Formulation, register_formulation
from contactlab.jointfriction.joint_contact_rows import joint_friction_layout
from contactlab.joints.body_constraints import (
    Constraint,
    StackedRows,
    TimedConstraint,
    row_owners,
    scene_constraints,
    stack_errors,
    stack_errors_at,
    stack_rows,
    timed_rhs,
)
from contactlab.joints.placement import place_bodies
from contactlab.maximal import assembly as asm
from contactlab.maximal import integrators as integ
from contactlab.maximal.attachment_map import AttachmentMap
from contactlab.maximal.joint_coordinates import CoordinateLimits, JointSprings, JointTorques
from contactlab.maximal.multiplier_reactions import multiplier_maps
from contactlab.maximal.regularization import Regularization, augment, per_owner
from contactlab.maximal.sleeping import Sleep, SleepRule, after_step, before_step, hold
from contactlab.metrics import state_metrics
from contactlab.problem import StepProblem, StepSolution
from contactlab.scene import Scene, State

Array = NDArray[np.float64]

#: Relative pivot size below which the constraint rows count as dependent.
_RANK_TOL = 1e-10


@register_formulation("maximal")
class MaximalFormulation(Formulation):
    """Maximal coordinates (Sueda's notes §1.6–1.12).

    Parameters
    ----------
    scene : the scene.
    stabilization : "velocity" (``G phi+ = -gamma g``, default),
        "acceleration" (eq. 1.82, second form) or "off" (``G phi+ = 0``).
        Factors come from ``scene.stabilization``; unset ones get the
        defaults ``gamma = 1/h`` and ``alpha = beta = 10`` [1/s] (see
        :mod:`contactlab.maximal.assembly` for why not ``1/h``).
    implicit : linearly implicit Euler (``M + hD - h^2 K``, eq. 1.30) for the
        force elements; ``None`` (default) turns it on when the scene has forces.
    coriolis : "midpoint" (default): Euler's equations stepped by the implicit
        midpoint rule (:func:`~contactlab.maximal.assembly.midpoint_momentum`),
        which keeps the rotational kinetic energy, ``|I omega|`` and a symmetric
        body's spin; "rotated": the body momenta ``M phi`` turned by
        ``exp(-h [omega])``, first-order equal to Sueda's notes eq. 1.28's
        ``M phi + h ad(phi)^T M phi`` and norm-preserving, but it feeds the spin
        of thin links about their long axis (the REDMAX double spherical
        pendulum diverges with it at h = 10 ms); "explicit": eq. 1.28 as printed,
        whose explicit gyroscopic terms add energy every step (``|m nu|`` grows
        by ``sqrt(1 + h^2 |omega x nu|^2/|nu|^2)``).
    check_rank : check at the initial state that the constraint rows are
        independent and raise :class:`SingularSystemError` naming the
        redundant joints otherwise.
    integrator : "linearly-implicit" (default, the step above), "symplectic-euler",
        "implicit-euler", "trapezoidal" or "bridson-marino" (ArtiSynth notes
        §0.9–0.10, see :mod:`contactlab.maximal.integrators`).
    jacobian : "exact" (default: the non-symmetric K of §0.23, by defect
        correction) or "symmetric" (``(K + K^T)/2``), for "implicit-euler" and
        "trapezoidal".
    projection : correct the bilateral errors after every step by mass-weighted
        projection (§0.5); ``None`` (default) turns it on for every integrator
        but "linearly-implicit".  Soft rows are not projected.
    compliance : [m/N, or rad/(N m) for rotational rows] ``alpha`` of soft
        constraints (§0.11, :mod:`contactlab.maximal.regularization`): a number for every
        joint and contact normal, or a mapping from joint/constraint names and
        ``"contacts"`` to numbers; 0 (default) is the hard constraint.
    compliance_damping : [s] ``beta`` of the soft constraints, same forms.
    compiled : take the compiled contact step (:mod:`contactlab.maximal.compiled_step`)
        when the scene, the model and the solver are in its scope (default); ``False``
        steps through the general layers.
    sleep : let islands of bodies at rest sleep (:mod:`contactlab.maximal.sleeping`);
        off by default. Scenes of free bodies under gravity with the default integrator.
    sleep_speed : [m/s] a body rests while its speed and its angular speed times its
        radius of gyration are below this (default 0.01).
    sleep_steps : steps in a row every body of an island rests before it sleeps (default 20).
    """

    has_joint_drift = True
    supports_attachments = True
    provides = frozenset({"contact_geometry", "joint_contacts", "reactions_by_multipliers"})

    def __init__(
        self,
        scene: Scene,
        stabilization: str = "velocity",
        implicit: bool | None = None,
        check_rank: bool = True,
        coriolis: str = "midpoint",
        integrator: str = integ.DEFAULT,
        jacobian: str = "exact",
        projection: bool | None = None,
        compliance: float | Mapping[str, float] = 0.0,
        compliance_damping: float | Mapping[str, float] = 0.0,
        compiled: bool = True,
        sleep: bool = False,
        sleep_speed: float = 0.01,
        sleep_steps: int = 20,
    ) -> None:
        super().__init__(scene)
        self.compiled = bool(compiled)
        degenerate = [b.name for b in scene.bodies if not b.physical]
        if degenerate:
            raise ConfigurationError(
                f"scene {scene.name!r}: bodies {degenerate} have zero mass or non-physical "
                "moments of inertia (taken as a model file states them); the maximal "
                "formulation needs positive definite body inertias: use the reduced formulation"
            )
        rotor = next((j.name for j in scene.joints if np.any(j.armature > 0)), None)
        if rotor is not None:
            raise ConfigurationError(
                f"joint {rotor!r} has armature (rotor inertia on its coordinate), which the "
                "maximal formulation cannot represent (no joint coordinates); use the reduced one"
            )
        dry = next((j.name for j in scene.joints if np.any(j.dry_friction > 0)), None)
        if dry is not None:
            raise ConfigurationError(
                f"joint {dry!r} has dry friction (a constant friction bound on its coordinates), "
                "which the maximal formulation cannot represent (no joint coordinates); use the "
                "reduced one"
            )
        self.integrator = integ.check_integrator(integrator)
        self.jacobian = integ.check_jacobian(jacobian)
        self.projection = integrator != integ.DEFAULT if projection is None else bool(projection)
        # Bridson–Marino's second half-kick needs the step's ``M + h/2 D``
        self._half_kick: tuple[int, sp.csc_matrix] | None = None
        if stabilization not in ("velocity", "acceleration", "off"):
            raise ConfigurationError(
                f"stabilization must be 'velocity', 'acceleration' or 'off', got {stabilization!r}"
            )
        if coriolis not in ("rotated", "explicit", "midpoint"):
            raise ConfigurationError(
                f"coriolis must be 'rotated', 'explicit' or 'midpoint', got {coriolis!r}"
            )
        self.stabilization = stabilization
        self.coriolis = coriolis
        self.implicit = bool(scene.forces) if implicit is None else bool(implicit)
        self.check_rank = check_rank
        self.constraints: list[Constraint] = scene_constraints(scene)
        self.row_owners = row_owners(self.constraints)
        self.mass_diagonal = asm.mass_diagonal(scene)
        #: joint-contact layout of the joints with friction (``None`` without any)
        self.joint_layout = joint_friction_layout(scene)
        #: joint springs and dampers (JointSpec.stiffness, damping) read through the joint maps
        self.joint_springs = JointSprings(scene)
        #: applied joint forces (Scene.joint_torque) read through the joint maps
        self.joint_torques = JointTorques(scene)
        #: joint limits (unilateral rows on joint coordinates read from the bodies)
        limits = [
            triple
            for item in scene.constraints
            if hasattr(item, "maximal_limits")
            for triple in item.maximal_limits()
        ]
        self.limits = CoordinateLimits(scene, limits) if limits else None
        #: constraints with a target moving in time (prescribed motion)
        self.timed = any(isinstance(c, TimedConstraint) for c in self.constraints)
        if self.timed and self.stabilization == "acceleration":
            raise ConfigurationError(
                f"scene {scene.name!r} prescribes motion in time, which the maximal formulation "
                "stabilizes at velocity level only; use stabilization='velocity'"
            )
        #: the null-space reduction of the scene's attachments (``None`` without any)
        self.attach: AttachmentMap | None = None
        if scene.attachments:
            if self.joint_layout is not None:
                raise ConfigurationError(
                    f"scene {scene.name!r} has both attachments and joints with friction; "
                    "the staggered joint-friction maps are not reduced by attachments: replace "
                    "the attachments by fixed joints"
                )
            self.attach = AttachmentMap(scene, self._initial_pose()[0])
        #: when bodies rest and islands sleep (``None`` unless the option ``sleep`` is on)
        self.sleep: SleepRule | None = None
        if not isinstance(sleep, bool):
            raise ConfigurationError(f"option sleep must be true or false, got {sleep!r}")
        if sleep:
            if self.integrator != integ.DEFAULT:
                raise ConfigurationError(
                    f"sleeping islands are stepped with the default integrator, not "
                    f"{self.integrator!r}; drop the integrator option or run with sleep=false"
                )
            self.sleep = SleepRule.build(scene, self.mass_diagonal, sleep_speed, sleep_steps)
        #: the sleep state and contacts :meth:`assemble` posed a state's step with
        self._posed_sleep: tuple[int, Sleep, ContactSet | None] | None = None
        #: per-row compliance and damping of the soft constraints (§0.11)
        self.soft = Regularization.build(compliance, compliance_damping, self.row_owners)
        if self.soft.any and self.joint_layout is not None:
            raise ConfigurationError(
                f"scene {scene.name!r} has joints with friction, whose staggered model reads "
                "the hard rows; run it without compliance"
            )

    @classmethod
    def check_options(cls, options: Any) -> None:
        super().check_options(options)
        if "integrator" in options:
            integ.check_integrator(options["integrator"])
        if "jacobian" in options:
            integ.check_jacobian(options["jacobian"])
        for key in ("compliance", "compliance_damping"):
            if key in options and not isinstance(options[key], Mapping):
                # names are checked against the scene when it is built
                per_owner(options[key], [], key, "")

    # -- state -----------------------------------------------------------
    def _initial_pose(self) -> tuple[Array, Array]:
        sc = self.scene
        if sc.initial_E is not None:
            E = np.array(sc.initial_E, dtype=float)
            phi = np.zeros((sc.n_bodies, 6)) if sc.initial_phi is None else sc.initial_phi.copy()
        else:
            E, phi = place_bodies(sc)
            if sc.initial_phi is not None:
                phi = sc.initial_phi.copy()
        return E, phi

    def initial_state(self) -> State:
        E, phi = self._initial_pose()
        if self.attach is not None:  # attached bodies follow their roots from the start
            E = self.attach.place(E, 0.0)
            phi = self.attach.expand(
                self.attach.restrict(phi),
                self.attach.drive_twists(0.0, 0.0) if self.attach.driven else None,
            )
        state = State(0.0, E, phi, sleep=None if self.sleep is None else Sleep.awake(len(E)))
        state.check_finite()
        if self.check_rank:
            self.check_independent(self.rows(E, phi))
        return state

    def rows(self, E: Array, phi: Array, with_bias: bool = False) -> StackedRows:
        """Every bilateral row at ``(E, phi)`` (see :func:`stack_rows`)."""
        return stack_rows(self.constraints, E, phi, with_bias)

    # -- step ------------------------------------------------------------
    def compiled_step(self, model: Any, collide: Any) -> Any:
        """The compiled contact step for ``model`` and the collision function ``collide``
        (:class:`~contactlab.maximal.compiled_step.CompiledContactStep`), or ``None`` when
        the set-up is outside its scope or ``compiled=False``."""
        if type(self) is not MaximalFormulation or not self.compiled:
            return None
        from contactlab.maximal.compiled_step import compiled_step_for
        from contactlab.maximal.cone_step import cone_step_for
        from contactlab.maximal.lemke_step import lemke_step_for

        step: Any = compiled_step_for(self, model, collide)
        if self.sleep is not None:  # sleeping islands: the pile step only
            return step
        step = step if step is not None else cone_step_for(self, model, collide)
        return step if step is not None else lemke_step_for(self, model, collide)

    def assemble(self, state: State, h: float, contacts: ContactSet | None = None) -> StepProblem:
        E, phi = state.E, state.phi
        sleep = None
        if self.sleep is not None:
            if not isinstance(state.sleep, Sleep):
                raise ConfigurationError(
                    "sleep=true: the state carries no sleep record; start from "
                    "initial_state() of this formulation"
                )
            sleep, contacts = before_step(state.sleep, contacts)
            self._posed_sleep = (id(state), sleep, contacts)
        if self.integrator == integ.DEFAULT:
            M, f = asm.free_momentum(
                self.scene, self.mass_diagonal, E, phi, h, self.implicit, self.coriolis
            )
        else:
            free = integ.free_step(
                self.scene,
                self.mass_diagonal,
                E,
                phi,
                h,
                self.integrator,
                self.coriolis,
                self.jacobian,
            )
            M, f = free.M, free.f
            if free.half_kick is not None:
                self._half_kick = (id(state), free.half_kick)
        if self.joint_springs.coords is not None:
            f = f + h * self.joint_springs.wrench(E, phi).reshape(-1)
        if self.joint_torques.coords is not None:
            f = f + h * self.joint_torques.wrench(state.t, E, phi).reshape(-1)
        b = asm.resolve_baumgarte(self.scene, h, self.stabilization)
        rows = self.rows(E, phi, with_bias=b.form == "acceleration")
        rhs = asm.constraint_rhs(rows, phi, h, b)
        if self.timed:
            rows.g = rows.g.copy()
            timed_rhs(self.constraints, E, state.t, h, b.gamma, rhs, rows.g)
        extra: dict[str, Any] = {}
        N = empty_csr(M.shape[0])
        if contacts is not None and len(contacts) > 0:
            from contactlab.contact.rows import contact_restitution, contact_rows

            N, c, T, mu = contact_rows(
                contacts,
                E,
                self.scene.n_bodies,
                h,
                self.scene.contact,
                phi=phi,  # pre-step twists: restitution reads the impact velocity
                restitution=contact_restitution(self.scene, contacts),
            )
            extra = {"N": N, "c": c, "T": T, "mu": mu, "contacts": contacts}
        if self.limits is not None:
            extra["L"], extra["l"] = self.limits.rows(E, h)
        if self.joint_layout is not None:
            extra["joint_friction"] = multiplier_maps(
                self.joint_layout, E, rows.G, self.row_owners, M, N
            )
        v = phi.reshape(-1)
        if sleep is not None and sleep.asleep.any():
            f, v = hold(f, v, sleep.asleep)
        drive = None
        if self.attach is not None:  # null-space reduction (ArtiSynth's notes §0.17)
            a = self.attach
            M, f, v = a.reduce_mass(M), a.reduce_force(f), a.restrict(phi)
            if a.driven:  # §0.21: the prescribed velocity as the column of s = 1
                drive = a.drive_twists(state.t, h)
                m_s = float(M.diagonal().mean()) if M.shape[0] else 1.0
                M = sp.csc_matrix(sp.block_diag([M, sp.csc_matrix([[m_s]])]))
                f, v = np.append(f, m_s), np.append(v, 1.0)
            rows = StackedRows(a.reduce_rows(rows.G, drive), rows.g, rows.bias)
            if "N" in extra:
                extra["N"] = a.reduce_rows(extra["N"], drive)
                extra["T"] = a.reduce_rows(extra["T"], drive)
            if "L" in extra:
                extra["L"] = a.reduce_rows(extra["L"], drive)
        if self.soft.any:
            problem = self._soft_problem(h, M, f, v, rows, rhs, extra)
        else:
            problem = StepProblem(
                h=h,
                M=M,
                f=f,
                v=v,
                G=rows.G,
                g=rhs,
                directions=self.scene.contact.directions,
                G_owner=self.row_owners,
                G_error=rows.g,
                **extra,
            )
        return problem if drive is None else _hold_drive(problem, M.shape[0] - 1)

    def _soft_problem(
        self,
        h: float,
        M: sp.spmatrix,
        f: Array,
        phi: Array,
        rows: StackedRows,
        rhs: Array,
        extra: dict[str, Any],
    ) -> StepProblem:
        """The step problem with the soft rows regularized (:func:`augment`)."""
        n = M.shape[0]
        contacts = extra.get("contacts")
        N = extra.get("N", sp.csr_matrix((0, n)))
        aug = augment(
            self.soft,
            h,
            M,
            f,
            phi,
            rows.G,
            rhs,
            rows.g,
            N,
            extra.get("c", np.zeros(0)),
            extra.get("T", sp.csr_matrix((0, n))),
            contacts.distance if contacts is not None else np.zeros(0),
        )
        if contacts is not None:
            extra = {**extra, "N": aug.N, "c": aug.c, "T": aug.T}
        return StepProblem(
            h=h,
            M=aug.M,
            f=aug.f,
            v=aug.v,
            G=aug.G,
            g=aug.g,
            directions=self.scene.contact.directions,
            G_owner=self.row_owners,
            G_error=rows.g,
            **extra,
        )

    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        # soft rows add one velocity each after the (active) body twists (:mod:`.soft`)
        attach = self.attach
        n = state.phi.size if attach is None else attach.P.shape[1]
        phi_solved = np.asarray(solution.v, dtype=float)[:n]
        if attach is None:
            phi = phi_solved.reshape(-1, 6)
        else:  # driven bodies move with their exact prescribed twists
            drive = attach.drive_twists(state.t, h) if attach.driven else None
            phi = attach.expand(phi_solved, drive)
        if self.integrator == "trapezoidal":
            E = se3.integrate(state.E, 0.5 * (state.phi + phi), h)
        else:
            E = se3.integrate(state.E, phi, h)
        t = state.t + h
        if attach is not None:
            E = attach.place(E, t)
        if self.projection and self.constraints:
            E = integ.project_positions(
                E,
                self.mass_diagonal,
                lambda X: self._errors_and_rows(X, t),
                attach,
                lambda X: self._hard_errors(X, t),
                t,
            )
        if self.integrator == "bridson-marino":
            if self._half_kick is None or self._half_kick[0] != id(state):
                raise ConfigurationError(
                    "bridson-marino: advance() needs the problem that assemble() posed for "
                    "the same state; call assemble(state, ...) first"
                )
            phi = integ.second_half_kick(
                self.scene,
                self.mass_diagonal,
                E,
                state.phi,
                phi,
                h,
                self._half_kick[1],
                attach,
                self.coriolis,
                self._errors_and_rows(E, t)[0] if self.constraints else None,
            )
            self._half_kick = None
        if self.sleep is None:
            return replace(state, t=t, E=E, phi=phi)
        if self._posed_sleep is None or self._posed_sleep[0] != id(state):
            raise ConfigurationError(
                "sleep=true: advance() needs the problem that assemble() posed for the same "
                "state; call assemble(state, ...) first"
            )
        _, sleep, contacts = self._posed_sleep
        self._posed_sleep = None
        phi = np.where(sleep.asleep[:, None], 0.0, phi)  # held bodies keep their poses
        E = np.where(sleep.asleep[:, None, None], state.E, E)
        sleep, phi = after_step(sleep, self.sleep, phi, contacts)
        return replace(state, t=t, E=E, phi=phi, sleep=sleep)

    def _hard_errors(self, E: Array, t: float) -> Array:
        """Errors of the hard rows at ``E`` and time ``t`` [s] (without the rows).

        Prescribed motions are measured against their targets at ``t``.
        """
        g = (
            stack_errors_at(self.constraints, E, t)
            if self.timed
            else stack_errors(self.constraints, E)
        )
        return g[~self.soft.soft_rows] if self.soft.soft_rows.any() else g

    def _errors_and_rows(self, E: Array, t: float) -> tuple[sp.csr_matrix, Array]:
        """Hard rows and errors at ``E`` and time ``t`` [s] (soft rows keep their sag)."""
        rows = self.rows(E, np.zeros((E.shape[0], 6)))
        g = stack_errors_at(self.constraints, E, t) if self.timed else rows.g
        if self.soft.soft_rows.any():
            hard = ~self.soft.soft_rows
            return rows.G[hard], g[hard]
        return rows.G, g

    def maximal(self, state: State) -> tuple[Array, Array]:
        return state.E, state.phi

    # -- measurements ----------------------------------------------------
    def metrics(self, state: State) -> dict[str, float]:
        E, phi = state.E, state.phi
        md = self.mass_diagonal
        kinetic = 0.5 * float(np.sum(md * phi * phi))
        potential = (
            asm.gravity_energy(md, self.scene.gravity, E)
            + asm.force_energy(self.scene, E, phi)
            + self.joint_springs.energy(E)
        )
        g = stack_errors_at(self.constraints, E, state.t)
        drift = float(np.max(np.abs(g))) if g.size else 0.0
        out = state_metrics(E, phi, md, kinetic, potential, drift)
        if isinstance(state.sleep, Sleep):
            out["sleeping_bodies"] = state.sleep.sleeping
        return out

    def reaction_wrenches(
        self, problem: StepProblem, solution: StepSolution, h: float | None = None
    ) -> dict[str, Array]:
        """Per joint/constraint, the body wrenches (nb, 6) its rows apply [N m, N].

        ``G^T lambda_G / h`` restricted to the owner's rows: the seed's
        ``-G^T lambda / h`` (eq. 1.74) in this package's sign convention.
        Each wrench is in the body frame, angular part first; the parent
        receives the opposite of the child's reaction (transported).  ``h``
        defaults to the problem's step size.
        """
        if self.attach is not None:
            raise ConfigurationError(
                f"scene {self.scene.name!r}: reaction wrenches per body are not available with "
                "attachments (the rows act on the reduced twists); replace the attachments by "
                "fixed joints to read them"
            )
        h = problem.h if h is None else h
        owners = np.asarray(problem.G_owner, dtype=str)
        lam = np.asarray(solution.lambda_G, dtype=float)
        G = sp.csr_matrix(problem.G)
        out: dict[str, Array] = {}
        for name in dict.fromkeys(owners.tolist()):
            sel = np.flatnonzero(owners == name)
            w = G[sel].T @ lam[sel] / h
            nbody = 6 * self.scene.n_bodies  # soft rows' extra columns dropped
            out[str(name)] = np.asarray(w)[:nbody].reshape(-1, 6)
        return out

    def check_independent(self, rows: StackedRows) -> None:
        """Raise :class:`SingularSystemError` naming the joints whose rows are dependent.

        The rows are independent exactly when the Schur complement
        ``G M^{-1} G^T`` of the KKT matrix (eq. 1.73) is non-singular; its
        sparse LU (banded for chains) detects a tiny pivot, and a pivoted QR
        of the scaled rows then names the dependent ones.
        """
        G = rows.G
        m = G.shape[0]
        if m == 0:
            return
        if self.attach is None:
            W = sp.diags(np.sqrt(1.0 / self.mass_diagonal.reshape(-1)))
        else:  # rows and masses of the active bodies: W W^T = (P^T M P)^-1, 6x6 blocks
            full = np.sqrt(np.asarray(G.multiply(G).sum(axis=1)).ravel())
            G = self.attach.reduce_rows(G)
            kept = np.sqrt(np.asarray(G.multiply(G).sum(axis=1)).ravel())
            lost = np.flatnonzero(kept <= _RANK_TOL * full)
            if lost.size:
                names = list(dict.fromkeys(self.row_owners[lost].tolist()))
                raise SingularSystemError(
                    f"the rows of {', '.join(repr(n) for n in names)} in scene "
                    f"{self.scene.name!r} act only between bodies attached to each other (they "
                    "repeat the attachment); remove those joints or the attachment"
                )
            M = sp.diags(self.mass_diagonal.reshape(-1))
            blocks = sp.bsr_matrix(self.attach.reduce_mass(M), blocksize=(6, 6)).data
            L = np.linalg.cholesky(blocks)
            W = sp.block_diag(list(np.linalg.inv(L).transpose(0, 2, 1)), format="csr")
        S = sp.csc_matrix((G @ W) @ (G @ W).T)
        scale = max(float(abs(S).max()), 1e-300)
        ratio = 0.0  # smallest / largest pivot (0: the factorisation failed)
        try:
            lu = spla.splu(S / scale)
            pivots = np.abs(lu.U.diagonal())
            ratio = float(pivots.min() / max(pivots.max(), 1e-300))
            singular = bool(pivots.min() < _RANK_TOL * pivots.max())
        except RuntimeError:
            singular = True
        if not singular:
            return
        dependent = self._dependent_rows(G @ W)
        names = list(dict.fromkeys(self.row_owners[dependent].tolist()))
        if not names:
            # no row is a combination of the others: the rows are independent but the
            # system is too ill-conditioned to factor (e.g. very light bodies in a chain)
            raise SingularSystemError(
                f"the KKT system of scene {self.scene.name!r} is numerically singular: its "
                f"joint rows are independent but ill-conditioned (smallest / largest pivot "
                f"{ratio:.1e}, below {_RANK_TOL:g}; e.g. bodies of very different masses "
                "chained by joints); run the scene with --formulation reduced, or make the "
                "masses less disparate"
            )
        raise SingularSystemError(
            f"the KKT system of scene {self.scene.name!r} is singular: the rows of "
            f"{', '.join(repr(n) for n in names)} repeat what other joints already constrain "
            "(redundant joints); remove the redundant joints or replace them by joints that "
            "constrain fewer directions"
        )

    @staticmethod
    def _dependent_rows(A: sp.spmatrix) -> NDArray[np.int64]:
        """Rows of ``A`` outside a maximal independent set (pivoted QR of ``A^T``)."""
        import scipy.linalg as la

        dense = A.toarray()
        _, r, perm = la.qr(dense.T, mode="economic", pivoting=True)
        d = np.abs(np.diag(r))
        rank = int(np.sum(d > _RANK_TOL * max(d.max(), 1e-300) * 1e2))
        return np.sort(perm[rank:])


def _hold_drive(problem: StepProblem, column: int) -> StepProblem:
    """``problem`` with the bilateral row ``s = 1`` on the prescribed column (attachment_map.py)."""
    n = problem.M.shape[0]
    row = sp.csr_matrix(([1.0], ([0], [column])), shape=(1, n))
    g = np.asarray(problem.g, dtype=float)
    g_error = np.zeros(g.size) if problem.G_error is None else problem.G_error
    return replace(
        problem,
        G=sp.vstack([problem.G, row], format="csr"),
        g=np.append(g, 1.0),
        G_owner=np.append(np.asarray(problem.G_owner, dtype=str), "drive"),
        G_error=np.append(g_error, 0.0),
    )
