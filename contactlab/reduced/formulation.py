"""The reduced-coordinate formulation: joint coordinates ``q``, velocities ``qdot``.

Every step poses the velocity-level problem of Sueda's notes, eq. 2.73–2.75 and
2.95 in the sign convention of :mod:`contactlab.problem`:

.. math::

    (M_r + h D_r - h^2 K_r)\\, \\dot q^+ = M_r \\dot q + h f_r + h D_r \\dot q
        + G^T \\lambda_G + N^T \\lambda_N + T^T \\lambda_T,

with contact rows mapped from maximal coordinates, ``N = N_m J``,
``T = T_m J`` (eq. 2.95: maximal constraints right-multiplied by ``J``).
Positions follow by :meth:`Tree.advance`: each joint moves by
``exp(h [S qdot+])`` (re-charted on subgroup joints such as free and
spherical ones, whose joint twist is then kept; ``q + h qdot+`` for the
others), then spherical charts switch; the bias ``Jdot qdot`` of the step is
taken along that motion (docs/reduced-integration.md).  Body transforms and
twists are recomputed from ``(q, qdot)``, so joints never drift.

Bilateral and unilateral rows other than contact (loop closures, couplings,
prescribed motion, joint limits) plug in as :class:`ReducedConstraint`
objects; the scene's loop-closing joints and ``Scene.constraints`` are built
by :mod:`contactlab.reduced.constraints`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from contactlab.collision.contacts import ContactSet
from contactlab.errors import ConfigurationError
from contactlab.formulation import Formulation, register_formulation
from contactlab.jointfriction.joint_contact_rows import joint_friction_layout
from contactlab.memory import ModelMemory
from contactlab.metrics import state_metrics
from contactlab.problem import StepProblem, StepSolution
from contactlab.reduced import dynamics as dyn
from contactlab.reduced import steppers
from contactlab.reduced.constraints import ReducedConstraint, scene_constraints
from contactlab.reduced.dry_friction import dry_friction
from contactlab.reduced.kinematics import forward_kinematics
from contactlab.reduced.traversal_reactions import traversal_maps
from contactlab.reduced.tree import Array, Tree
from contactlab.scene import Scene, State

JointTorque = Callable[[float, Array, Array], Array]


@register_formulation("reduced")
class ReducedFormulation(Formulation):
    """Reduced coordinates (REDMAX, Sueda's notes §2).

    Parameters
    ----------
    scene : a scene whose joints form a tree (every body the child of one joint).
    implicit : take joint springs/dampers and force elements implicitly
        (``M_r + h D_r - h^2 K_r``, eq. 2.75); default on.
    joint_torque : applied joint forces ``tau(t, q, qdot)`` (nq,) [N m or N].
    constraints : extra :class:`ReducedConstraint` rows.
    stabilization : Baumgarte form of the loop closures and the scene's
        constraints (:mod:`contactlab.reduced.constraints`): "velocity",
        "acceleration" or "off".
    coriolis : "rotated_linear" (default: each body's linear momentum turned by
        its step rotation, the angular gyroscopic term explicit), "rotated"
        (both turned, the maximal formulation's default) or "explicit" (eq. 2.73
        as printed); see :func:`contactlab.reduced.dynamics.free_momentum`.
    integrator : "linearly-implicit" (default, the step above), "implicit-euler",
        "trapezoidal", "bridson-marino", "midpoint", "midpoint4" or "dop853"
        (:mod:`contactlab.reduced.steppers`; ``implicit`` and ``coriolis`` then
        do not apply).
    rtol, atol : tolerances of the "dop853" integrator.
    substep_angle : [rad] "midpoint" without contacts or constraints, and
        "midpoint4": split each step so that no coordinate moves more than this
        and the velocity changes by at most this fraction of the speed per
        substep; unset: 0.025 for "midpoint4", one step for "midpoint"
        (:data:`~contactlab.reduced.steppers.DEFAULT_SUBSTEP_ANGLE`); ``inf``: one step.
    compiled : take the compiled contact step (:mod:`contactlab.reduced.compiled_step`)
        when the scene, the model and the solver are in its scope (default); ``False``
        steps through the general layers.
    """

    has_joint_drift = False
    provides = frozenset({"contact_geometry", "joint_contacts", "reactions_by_traversal"})
    #: advance joints on their groups (:meth:`Tree.advance`) with the matching bias
    #: ``Jdot qdot``; ``False`` steps every coordinate by ``q + h qdot`` with the
    #: chart's ``Sdot`` (the hyper-reduced formulation: it keeps ``q`` affine)
    group_integration = True

    def __init__(
        self,
        scene: Scene,
        implicit: bool = True,
        joint_torque: JointTorque | None = None,
        constraints: Sequence[ReducedConstraint] = (),
        stabilization: str = "velocity",
        coriolis: str = "rotated_linear",
        integrator: str = steppers.DEFAULT,
        rtol: float = 1e-6,
        atol: float = 1e-9,
        substep_angle: float | None = None,
        compiled: bool = True,
    ) -> None:
        super().__init__(scene)
        if coriolis not in dyn.CORIOLIS_FORMS:
            raise ConfigurationError(
                f"coriolis must be one of {', '.join(dyn.CORIOLIS_FORMS)}, got {coriolis!r}"
            )
        self.coriolis = coriolis
        self.tree = Tree.from_scene(scene)
        self.implicit = bool(implicit)
        # a scene may carry its applied joint forces, tau(t, q, qdot)
        self.joint_torque = joint_torque or scene.joint_torque
        self.constraints = scene_constraints(scene, self.tree, stabilization) + list(constraints)
        #: joint-contact layout of the joints with friction (``None`` without any)
        self.joint_layout = joint_friction_layout(scene)
        #: the coordinates with dry friction (rows ``D`` of every step), ``None`` without any
        self.dry_friction = dry_friction(scene, self.tree)
        self.integrator = steppers.check_integrator(integrator)
        self.rtol, self.atol = float(rtol), float(atol)
        self.substep_angle = steppers.substep_angle_option(integrator, substep_angle)
        if integrator != steppers.DEFAULT and not self.group_integration:
            raise ConfigurationError(
                f"formulation {self.name!r} steps with the linearly-implicit integrator only, "
                f"got integrator={integrator!r}"
            )
        #: the integrator's own step (``None``: linearly implicit Euler, below)
        self.stepper = (
            None if integrator == steppers.DEFAULT else steppers.Stepper(self, integrator)
        )
        self.compiled = bool(compiled)

    @classmethod
    def check_options(cls, options: Any) -> None:
        super().check_options(options)
        if "integrator" in options:
            steppers.check_integrator(str(options["integrator"]))

    # -- state -----------------------------------------------------------
    def _state(self, t: float, q: Array, qdot: Array, cache: Any = None) -> State:
        kin = forward_kinematics(self.tree, q, qdot)
        return State(t, kin.E, kin.phi, q, qdot, ModelMemory(cache))

    def initial_state(self) -> State:
        """Coordinates from the joints' ``q0``/``qdot0`` (the scene's ``initial_E`` is not used)."""
        q, qdot = self.tree.initial_coordinates()
        q, qdot, _ = self.tree.reparameterize(q, qdot)
        return self._state(0.0, q, qdot)

    # -- step ------------------------------------------------------------
    def compiled_step(self, model: Any, collide: Any) -> Any:
        """The compiled contact step for ``model`` and the collision function ``collide``
        (:class:`~contactlab.reduced.compiled_step.CompiledContactStep`), or ``None`` when
        the set-up is outside its scope, ``compiled=False`` or the integrator is not the
        linearly implicit step the compiled one reproduces."""
        # subclasses (hyper-reduced) step otherwise
        if (
            type(self) is not ReducedFormulation
            or not self.compiled
            or self.stepper is not None
            or self.dry_friction is not None
        ):
            return None
        from contactlab.reduced.compiled_step import compiled_step_for
        from contactlab.reduced.cone_step import cone_step_for
        from contactlab.reduced.lemke_step import lemke_step_for

        return (
            cone_step_for(self, model, collide)
            or lemke_step_for(self, model, collide)
            or compiled_step_for(self, model, collide)
        )

    def assemble(self, state: State, h: float, contacts: ContactSet | None = None) -> StepProblem:
        tree = self.tree
        q, qdot = np.asarray(state.q, dtype=float), np.asarray(state.qdot, dtype=float)
        # the bias acceleration along the motion advance() realizes (joint twists of
        # subgroup joints held constant), see docs/reduced-integration.md
        # (the other integrators step in the joints' charts, with the chart's Sdot)
        stepper = self.stepper
        kin = forward_kinematics(tree, q, qdot, step=self.group_integration and stepper is None)
        if stepper is not None:
            M, f = stepper.free_step(state, kin, h, contacts is not None and len(contacts) > 0)
        else:
            M, f = self._linearly_implicit(state, kin, h)
        rows: dict[str, Any] = {}
        eq = [c for c in self.constraints if not c.unilateral]
        bil = [c.rows(tree, kin, h, state.t) for c in eq]
        uni = [c.rows(tree, kin, h, state.t) for c in self.constraints if c.unilateral]
        sizes = [len(r[1]) for r in bil]
        if bil:
            rows["G"] = sp.csr_matrix(np.vstack([r[0] for r in bil]))
            rows["g"] = np.concatenate([r[1] for r in bil])
            rows["G_owner"] = np.repeat([_owner(c) for c in eq], sizes)
            rows["G_error"] = np.concatenate([r[2] for r in bil])
        if uni:
            rows["L"] = sp.csr_matrix(np.vstack([r[0] for r in uni]))
            rows["l"] = np.concatenate([r[1] for r in uni])
        if self.dry_friction is not None:
            rows["D"], rows["d"] = self.dry_friction.rows(tree.nq, h)
        N_m = T_m = sp.csr_matrix((0, 6 * self.scene.n_bodies))
        if contacts is not None and len(contacts) > 0:
            from contactlab.contact.rows import contact_restitution, contact_rows

            N_m, c, T_m, mu = contact_rows(
                contacts,
                kin.E,
                self.scene.n_bodies,
                h,
                self.scene.contact,
                phi=kin.phi,  # pre-step twists: restitution reads the impact velocity
                restitution=contact_restitution(self.scene, contacts),
            )
            J = kin.J
            rows.update(
                N=sp.csr_matrix(N_m @ J), c=c, T=sp.csr_matrix(T_m @ J), mu=mu, contacts=contacts
            )
        if self.joint_layout is not None:
            rows["joint_friction"] = traversal_maps(
                self.joint_layout, tree, kin, h, qdot, N_m, T_m, eq, sizes
            )
        return StepProblem(
            h=h,
            M=sp.csc_matrix(0.5 * (M + M.T)),
            f=f,
            v=qdot,
            directions=self.scene.contact.directions,
            **rows,
        )

    def _linearly_implicit(self, state: State, kin: Any, h: float) -> tuple[Array, Array]:
        """``M_r + h D_r - h^2 K_r`` and the free momentum of the default step (eq. 2.75)."""
        q, qdot = kin.q, kin.qdot
        M = dyn.mass_matrix(kin)
        tau = None if self.joint_torque is None else self.joint_torque(state.t, q, qdot)
        f = dyn.free_momentum(kin, h, tau, self.coriolis)
        if self.implicit:
            terms = dyn.implicit_terms(kin)
            M = M + h * terms.D - h * h * terms.K
            f = f + h * (terms.D @ qdot)
        return M, f

    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        q, qdot = np.asarray(state.q, dtype=float), np.asarray(solution.v, dtype=float)
        if self.stepper is not None:
            q, qdot = self.stepper.advance(state, qdot, h)
        elif self.group_integration:
            q, qdot = self.tree.advance(q, qdot, h)
        else:
            q, qdot, _ = self.tree.reparameterize(q + h * qdot, qdot)
        return self._state(state.t + h, q, qdot, state.cache)

    def maximal(self, state: State) -> tuple[Array, Array]:
        return state.E, state.phi

    # -- measurements ----------------------------------------------------
    def metrics(self, state: State) -> dict[str, float]:
        kin = forward_kinematics(self.tree, np.asarray(state.q), np.asarray(state.qdot))
        e = dyn.energies(kin)
        errors = [np.abs(c.rows(self.tree, kin, 1.0, state.t)[2]) for c in self.constraints]
        drift = max((float(x.max()) for x in errors if x.size), default=0.0)
        return state_metrics(
            kin.E,
            kin.phi,
            self.scene.spatial_inertia,
            e["kinetic_energy"],
            e["potential_energy"],
            drift,
        )


def _owner(constraint: ReducedConstraint) -> str:
    """The name a constraint's rows are reported under (its class name if it has none)."""
    return str(getattr(constraint, "name", "") or type(constraint).__name__)
