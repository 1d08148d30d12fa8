"""Fixed-step integrators of the reduced formulation besides linearly implicit Euler.

Each integrator poses the velocity-level problem of
:mod:`contactlab.reduced.formulation` (a symmetric step matrix ``Mhat`` and a
free momentum ``b``; the contact model adds constraint and contact impulses)
and then moves the coordinates.  They integrate the equations of motion in
the joints' charts, ``d/dt (q, qdot) = (qdot, a)``, ``a = M_r^{-1} f_r``
(Sueda's notes eq. 2.21), with the exact linearization of
:mod:`contactlab.reduced.linearization` at the start of the step:
``K = M da/dq`` and ``D = -M da/dqdot`` (both at ``qddot = a``, so ``K``
holds ``-(dM/dq) a``), made symmetric for the contact model by one defect
correction (:func:`~contactlab.reduced.linearization.symmetric_step`).
Spherical charts switch after every step (:meth:`Tree.reparameterize`).

``implicit-euler`` (first order)
    ``(M + h D - h^2 K) qdot+ = M qdot + h f + h D qdot``, ``q+ = q + h qdot+``:
    one Newton step of backward Euler, ``K`` and ``D`` as above (at
    ``qddot = a``; without the ``-(dM/dq) a`` term of ``K`` the step gains
    energy on a spinning spherical double pendulum).  The default
    ``linearly-implicit`` step keeps only the springs' and force elements'
    stiffness (eq. 2.75).
``trapezoidal`` (second order)
    one Newton step of the trapezoidal rule from ``(q, qdot)``:
    ``(M + h/2 D - h^2/4 K) qdot+ = M qdot + h f + h/2 D qdot + h^2/4 K qdot``,
    ``q+ = q + h/2 (qdot + qdot+)`` (the rows of the maximal formulation's
    ``trapezoidal``, ArtiSynth notes §0.9.3).  Its linearization error is
    ``O(h |qdot+ - qdot|^2) = O(h^3)`` per step, so the step keeps order 2
    with ``M`` varying with ``q`` because ``K`` holds ``-(dM/dq) a``.
``bridson-marino`` (second order)
    the velocity/position split of ArtiSynth's §0.9.4: a half-kick implicit
    in velocity, ``(M + h/2 D) qdot' = M qdot + h/2 f + h/2 D qdot``
    (constrained by the contact model), the drift ``q+ = q + h qdot'``, then an
    explicit half-kick ``qdot+ = qdot' + h/2 a(q+, qdot')`` kept in the null
    space of the bilateral rows at ``q+`` (RATTLE).  Backward then forward
    Euler over the halves is the implicit midpoint rule in the velocity, so
    the Coriolis forces keep order 2 (``D`` holds their velocity Jacobian);
    the position Jacobian ``K`` is not used: stiff springs are explicit.
``midpoint`` (second order, symplectic)
    the implicit midpoint rule on Hamilton's equations in the joint
    coordinates, ``p = M(q) qdot``:
    ``M(m) v = p + h/2 g(m, v)``, ``m = q + h/2 v``, ``q+ = q + h v``,
    ``p+ = p + h g(m, v)``, with ``g = dL/dq + Q = f_r + Mdot qdot``
    (:func:`lagrangian_force`).  It is also the variational integrator of
    the discrete Lagrangian ``h L(m, v)``, so on a conservative scene its
    energy error stays bounded (no drift) over long runs.  The nonlinear
    equation in ``v`` is solved by Newton iterations with the Jacobian
    ``M + h/2 D - h^2/4 K`` of the start of the step, to ``1e-12`` of
    ``|p|`` (or of ``M`` times the velocity scale); the contact model
    then constrains ``v`` with the symmetric part of that Jacobian, and its
    impulse enters ``p+`` once.
``midpoint4`` (fourth order, symplectic)
    the triple jump of the midpoint rule (Yoshida 1990; Hairer, Lubich & Wanner,
    *Geometric Numerical Integration*, II.4): midpoint steps of ``g h``,
    ``(1 - 2 g) h``, ``g h`` with ``g = 1 / (2 - 2^(1/3))`` (the middle one
    backwards in time).  The composition of a symmetric method with these
    weights is symmetric, symplectic and of order 4.  It takes substeps of
    ``DEFAULT_SUBSTEP_ANGLE["midpoint4"]`` (0.025 rad) unless told otherwise
    (:func:`step_midpoint`).  It integrates the smooth
    equations: a step with contacts, joint friction or constraint rows is refused.
``dop853``
    the adaptive explicit integrator (:func:`contactlab.reduced.integrators.simulate_adaptive`,
    Dormand–Prince 8(5,3)) over each step, to ``rtol`` and ``atol``; the
    step problem then only reports the velocity it reached.  It integrates
    the smooth equations: a step with contacts, joint friction or
    constraint rows is refused with a clear error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab.errors import ConfigurationError, StepFailure, UnknownNameError
from contactlab.reduced import dynamics as dyn
from contactlab.reduced.derivatives import inverse_dynamics_derivatives
from contactlab.reduced.dynamics import ImplicitTerms
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.linearization import exact_terms, model_of, symmetric_step
from contactlab.reduced.tree import Array, Tree

if TYPE_CHECKING:
    from contactlab.reduced.formulation import ReducedFormulation
    from contactlab.reduced.model import Model
    from contactlab.scene import State

#: integrator name -> one-line description (the reduced formulation's ``integrator`` option)
INTEGRATORS: dict[str, str] = {
    "linearly-implicit": "linearly implicit Euler, springs' and force elements' K (default)",
    "implicit-euler": "linearized implicit Euler with the exact K = df_r/dq and D = -df_r/dqdot",
    "trapezoidal": "linearized trapezoidal rule in the charts, second order",
    "bridson-marino": "implicit/explicit half-kicks around a drift, second order",
    "midpoint": "implicit midpoint rule on (q, p), symplectic: bounded energy error",
    "midpoint4": "triple jump of the midpoint rule, symplectic, fourth order (0.025 rad substeps)",
    "dop853": "adaptive Dormand-Prince 8(5,3) over each step (options rtol, atol; no contact)",
}
DEFAULT = "linearly-implicit"
#: Newton tolerance of the midpoint step, relative to the momentum scale
MIDPOINT_TOL = 1e-12
MIDPOINT_ITERATIONS = 40
#: chord iterations with the start-of-step Jacobian before it is replaced by
#: forward differences of the residual at the iterate
MIDPOINT_CHORD = 6
#: times a midpoint step is split in two more when Newton's method does not converge
MIDPOINT_SPLITS = 4
#: the substep angle [rad] of an integrator whose ``substep_angle`` option is unset
#: (``midpoint`` then takes one step: it is also the step of scenes with contacts)
DEFAULT_SUBSTEP_ANGLE: dict[str, float] = {"midpoint4": 0.025}


def check_integrator(name: str) -> str:
    """``name`` if it is a reduced integrator, else :class:`UnknownNameError` (one line)."""
    if name not in INTEGRATORS:
        raise UnknownNameError("integrator", str(name), list(INTEGRATORS))
    return name


def substep_angle_option(integrator: str, angle: float | str | None) -> float | None:
    """The substep angle [rad] ``integrator`` steps with: ``angle`` when given, ``None``
    (one step) for ``inf``, the integrator's :data:`DEFAULT_SUBSTEP_ANGLE` when unset."""
    if angle is None:
        return DEFAULT_SUBSTEP_ANGLE.get(integrator)
    try:
        value = float(angle)
    except (TypeError, ValueError):
        value = float("nan")
    if not value > 0.0:
        raise ConfigurationError(
            f"substep_angle must be a positive angle in radians (or inf: one step), got {angle!r}"
        )
    return None if np.isinf(value) else value


def lagrangian_force(kin: Kinematics, tau: Array | None = None) -> Array:
    """``g = dL/dq + Q = f_r + Mdot qdot`` (nq,) at ``kin`` (chart kinematics, ``step=False``).

    With ``p = M qdot`` Lagrange's equations read ``dp/dt = g``.  ``Mdot qdot =
    J^T M (Jdot qdot) + Jdot^T M phi``; the first term cancels ``f_r``'s bias
    ``-J^T M Jdot qdot``.
    """
    tree = kin.tree
    inertia = tree.scene_inertia
    mphi = (inertia * kin.phi).reshape(-1)
    return (
        dyn.reduced_forces(kin, tau)
        + kin.JT_times(inertia * kin.bias_acceleration)
        + (kin.Jdot.T @ mphi)
    )


@dataclass
class _Pending:
    """What :meth:`Stepper.advance` needs from the :meth:`Stepper.free_step` of the same state."""

    state_id: int
    data: dict[str, Any]


class Stepper:
    """One integrator of the reduced formulation (module docstring)."""

    def __init__(self, formulation: ReducedFormulation, name: str) -> None:
        self.f = formulation
        self.name = name
        self._pending: _Pending | None = None

    @property
    def tree(self) -> Tree:
        return self.f.tree

    def _tau(self, t: float, q: Array, qdot: Array) -> Array | None:
        jt = self.f.joint_torque
        return None if jt is None else np.asarray(jt(t, q, qdot), dtype=float)

    def _remember(self, state: State, **data: Any) -> None:
        self._pending = _Pending(id(state), data)

    def _recall(self, state: State) -> dict[str, Any]:
        if self._pending is None or self._pending.state_id != id(state):
            raise ConfigurationError(
                f"{self.name}: advance() needs the problem that assemble() posed for the "
                "same state; call assemble(state, ...) first"
            )
        data = self._pending.data
        self._pending = None
        return data

    # -- the step -----------------------------------------------------------
    def free_step(
        self, state: State, kin: Kinematics, h: float, contacts: bool
    ) -> tuple[Array, Array]:
        """``(Mhat, b)`` of the step from ``state`` (``kin``: its chart kinematics)."""
        tau = self._tau(state.t, kin.q, kin.qdot)
        M = dyn.mass_matrix(kin)
        f = dyn.reduced_forces(kin, tau)
        v = kin.qdot
        name = self.name
        if name == "implicit-euler":  # K = M da/dq, with -(dM/dq) a (module docstring)
            T = exact_terms(kin, dyn.solve_mass(M, f))
            return symmetric_step(M + h * T.D - h * h * T.K, M @ v + h * f + h * (T.D @ v))
        if name == "trapezoidal":
            T = exact_terms(kin, dyn.solve_mass(M, f))
            Mhat = M + 0.5 * h * T.D - 0.25 * h * h * T.K
            b = M @ v + h * f + 0.5 * h * (T.D @ v) + 0.25 * h * h * (T.K @ v)
            return symmetric_step(Mhat, b)
        if name == "bridson-marino":
            T = exact_terms(kin)
            return symmetric_step(M + 0.5 * h * T.D, M @ v + 0.5 * h * f + 0.5 * h * (T.D @ v))
        if name == "midpoint":
            return self._midpoint(state, kin, M, f, h, contacts)
        if name == "midpoint4":
            return self._midpoint4(state, kin, M, h, contacts)
        if name == "dop853":
            return self._adaptive(state, kin, M, h, contacts)
        raise UnknownNameError("integrator", name, list(INTEGRATORS))

    def _midpoint(
        self, state: State, kin: Kinematics, M: Array, f: Array, h: float, contacts: bool
    ) -> tuple[Array, Array]:
        form = self.f
        jt = form.joint_torque
        if not (
            contacts
            or form.constraints
            or form.joint_layout is not None
            or form.dry_friction is not None
        ):
            # nothing to constrain: the whole step (and its substeps) here
            tau = None if jt is None else (lambda t, q, v: np.asarray(jt(t, q, v), dtype=float))
            q, v = step_midpoint(self.tree, kin.q, kin.qdot, h, form.substep_angle, tau, state.t)
            self._remember(state, q=q)
            return M, M @ v
        t_mid = state.t + 0.5 * h
        tau_mid = None if jt is None else (lambda q, v: np.asarray(jt(t_mid, q, v), dtype=float))
        v, p, p_mid, jac, _, _ = midpoint_velocity(kin, h, M, f, tau_mid)
        S = 0.5 * (jac + jac.T)
        self._remember(state, p=p, p_mid=p_mid, v_free=v, S=S)
        return S, S @ v

    def _refuse_nonsmooth(self, state: State, contacts: bool) -> None:
        """One clear error when the step has contacts, constraint rows or joint friction
        (integrators that take the smooth equations of motion only)."""
        f = self.f
        if contacts or f.constraints or f.joint_layout is not None or f.dry_friction is not None:
            what = (
                "contacts"
                if contacts
                else (
                    "constraint rows"
                    if f.constraints
                    else (
                        "joints with friction"
                        if f.joint_layout is not None
                        else "joints with dry friction"
                    )
                )
            )
            raise ConfigurationError(
                f"integrator {self.name!r} integrates the smooth equations of motion, but scene "
                f"{f.scene.name!r} has {what} at t={state.t:.6g} s; use a fixed-step integrator "
                "(implicit-euler, trapezoidal, bridson-marino or midpoint)"
            )

    def _midpoint4(
        self, state: State, kin: Kinematics, M: Array, h: float, contacts: bool
    ) -> tuple[Array, Array]:
        self._refuse_nonsmooth(state, contacts)
        jt = self.f.joint_torque
        tau = None if jt is None else (lambda t, q, v: np.asarray(jt(t, q, v), dtype=float))
        q, v = step_midpoint(
            self.tree, kin.q, kin.qdot, h, self.f.substep_angle, tau, state.t, order=4
        )
        self._remember(state, q=q)
        return M, M @ v

    def _adaptive(
        self, state: State, kin: Kinematics, M: Array, h: float, contacts: bool
    ) -> tuple[Array, Array]:
        from contactlab.reduced.integrators import simulate_adaptive

        f = self.f
        self._refuse_nonsmooth(state, contacts)
        t0 = state.t
        jt = f.joint_torque
        tau = None if jt is None else (lambda t, q, qd: jt(t0 + t, q, qd))
        traj = simulate_adaptive(
            self.tree, kin.q, kin.qdot, h, rtol=f.rtol, atol=f.atol, t_eval=np.array([h]), tau=tau
        )
        q_end, v_end = traj.q[-1], traj.qdot[-1]
        self._remember(state, q=q_end)
        return M, M @ v_end

    def advance(self, state: State, v: Array, h: float) -> tuple[Array, Array]:
        """``(q, qdot)`` at ``t + h`` from the solved velocity ``v`` of the step problem."""
        tree = self.tree
        q0 = np.asarray(state.q, dtype=float)
        qd0 = np.asarray(state.qdot, dtype=float)
        name = self.name
        if name == "implicit-euler":
            q, qdot = q0 + h * v, v
        elif name == "trapezoidal":
            q, qdot = q0 + 0.5 * h * (qd0 + v), v
        elif name == "bridson-marino":
            q, v_half, _ = tree.reparameterize(q0 + h * v, v)
            qdot = self._second_half_kick(state, q, v_half, h)
        elif name == "midpoint":
            d = self._recall(state)
            if "q" in d:  # the step without contacts or constraints, taken in free_step
                q, qdot = d["q"], v
                return q, qdot
            q = q0 + h * v
            # impulse of the contact model on the midpoint momentum, applied once
            impulse = d["S"] @ (v - d["v_free"])
            p_new = 2.0 * d["p_mid"] - d["p"] + impulse
            qdot = dyn.solve_mass(dyn.mass_matrix(forward_kinematics(tree, q)), p_new)
        elif name in ("dop853", "midpoint4"):
            q, qdot = self._recall(state)["q"], v
        else:
            raise UnknownNameError("integrator", name, list(INTEGRATORS))
        q, qdot, _ = tree.reparameterize(q, qdot)
        return q, qdot

    def _second_half_kick(self, state: State, q: Array, v: Array, h: float) -> Array:
        """``v + dv``, ``M dv = h/2 f(q, v)`` in the null space of the bilateral rows at ``q``."""
        kin = forward_kinematics(self.tree, q, v)
        t = state.t + h
        M = dyn.mass_matrix(kin)
        r = 0.5 * h * dyn.reduced_forces(kin, self._tau(t, q, v))
        rows = [c.rows(self.tree, kin, h, t)[0] for c in self.f.constraints if not c.unilateral]
        if not rows:
            return v + dyn.solve_mass(M, r)
        G = np.vstack(rows)
        n, m = M.shape[0], G.shape[0]
        K = np.block([[M, G.T], [G, np.zeros((m, m))]])
        rhs = np.concatenate([r, np.zeros(m)])
        dv = np.linalg.lstsq(K, rhs, rcond=None)[0][:n]
        return v + dv


def _model_lagrangian_force(model: Model, q: Array, v: Array) -> tuple[Array, Array]:
    """``(g, M)`` at ``(q, v)`` by the compiled model (trees without force elements).

    ``dT/dq_j = v^T (dM/dq_j) v / 2`` with ``(dM/dq_j) v`` the difference of the
    inverse dynamics' ``q``-derivatives at zero velocity and accelerations ``v``
    and ``0``; ``Q = -ID(q, 0, 0) - d v`` (gravity, joint springs, joint dampers).
    """
    z = np.zeros(model.nq)
    dq_v, _, M = inverse_dynamics_derivatives(model, q, z, v)
    dq_0 = inverse_dynamics_derivatives(model, q, z, z)[0]
    g = 0.5 * ((dq_v - dq_0).T @ v) - model.inverse_dynamics(q, z, z) - model.dofp[1] * v
    return g, M


def midpoint_velocity(
    kin: Kinematics,
    h: float,
    M: Array | None = None,
    f: Array | None = None,
    tau: Callable[[Array, Array], Array] | None = None,
    terms: ImplicitTerms | None = None,
) -> tuple[Array, Array, Array, Array, ImplicitTerms, bool]:
    """The midpoint velocity ``v`` of the implicit midpoint rule on ``(q, p)`` from ``kin``.

    Solves ``M(m) v = p + h/2 g(m, v)``, ``m = q + h/2 v``, ``p = M(q) qdot``
    (module docstring; ``tau(q, v)``: applied joint torques at the midpoint) by
    Newton's method: chord iterations with the Jacobian
    ``M + h/2 D - h^2/4 K`` (``M`` of the start of the step; ``K``, ``D`` of
    ``terms``, or exact at the start of the step when ``None``), then, if the
    residual is still above ``MIDPOINT_TOL`` of the momentum scale, with forward
    differences of the residual at the iterate (light, fast coordinates make the
    chord contract slowly).  Trees without force elements and Python-evaluated
    joints evaluate ``g`` and ``M`` by the compiled model.  Returns
    ``(v, p, M(m) v, Jacobian, (K, D), whether differences were needed)``.
    """
    tree = kin.tree
    q, v0 = kin.q, kin.qdot
    model = model_of(kin)
    compiled = tau is None and not tree.scene.forces and not model.has_other_joints
    if compiled:  # M, f_r and the partials from the model: no kinematics in Python
        z = np.zeros(model.nq)
        f = -model.inverse_dynamics(q, v0, z)
        M = model.mass_matrix(q)
        a = dyn.solve_mass(M, f)
    else:
        M = dyn.mass_matrix(kin) if M is None else M
        f = dyn.reduced_forces(kin, None if tau is None else tau(q, v0)) if f is None else f
        a = dyn.solve_mass(M, f)

    def exact_at_start() -> ImplicitTerms:
        if compiled:
            dq, dqd, _ = inverse_dynamics_derivatives(model, q, v0, a)
            return ImplicitTerms(-dq, dqd)
        return exact_terms(kin, a, model)

    stale = terms is not None  # a linearization from elsewhere (an earlier substep)
    T = exact_at_start() if terms is None else terms
    p = M @ v0
    jac = M + 0.5 * h * T.D - 0.25 * h * h * T.K
    lu = _inverse(jac)
    # momentum scale: |p|, or M times a velocity of the scene's own size when at rest
    scale = max(float(np.abs(p).max(initial=0.0)), float(np.abs(M).max(initial=0.0)) * 1e-3)

    def residual_at(v: Array) -> tuple[Array, Array]:
        m = q + 0.5 * h * v
        if compiled:
            g, Mm = _model_lagrangian_force(model, m, v)
        else:
            km = forward_kinematics(tree, m, v)
            Mm = dyn.mass_matrix(km)
            g = lagrangian_force(km, None if tau is None else tau(m, v))
        return Mm @ v - p - 0.5 * h * g, Mm

    v = v0 + 0.5 * h * a
    r, Mm = residual_at(v)
    norm = float(np.abs(r).max(initial=0.0))
    best = (norm, v, r, Mm)
    differences = False
    chord = 0
    for k in range(MIDPOINT_ITERATIONS):
        if norm <= MIDPOINT_TOL * scale:
            break
        if stale and (k - chord >= MIDPOINT_CHORD or not norm <= best[0]):
            # slow with the linearization of elsewhere: the exact one of this step
            norm, v, r, Mm = best
            T, stale, chord = exact_at_start(), False, k
            jac = M + 0.5 * h * T.D - 0.25 * h * h * T.K
            lu = _inverse(jac)
        elif not differences and (k - chord >= MIDPOINT_CHORD or not norm <= best[0]):
            # slow or no contraction: back to the best iterate, the Jacobian there
            norm, v, r, Mm = best
            lu = _inverse(_difference_jacobian(lambda x: residual_at(x)[0], v, r))
            differences = True
        elif not norm <= best[0]:
            break  # no progress with the Jacobian at the iterate
        best = (norm, v, r, Mm) if norm <= best[0] else best
        v = v - lu @ r
        r, Mm = residual_at(v)
        norm = float(np.abs(r).max(initial=0.0)) if np.all(np.isfinite(r)) else np.inf
    if not norm <= MIDPOINT_TOL * scale:
        raise StepFailure(
            f"midpoint step: Newton's method did not converge (residual {min(norm, best[0]):.3g} "
            f"of momentum {scale:.3g}); reduce h"
        )
    return v, p, Mm @ v, jac, T, differences


def step_midpoint(
    tree: Tree,
    q: Array,
    qdot: Array,
    h: float,
    substep_angle: float | None = None,
    tau: Callable[[float, Array, Array], Array] | None = None,
    t: float = 0.0,
    order: int = 2,
) -> tuple[Array, Array]:
    """A step of ``h`` [s] by the implicit midpoint rule on ``(q, p)``, without contacts.

    Returns ``(q, qdot)`` at ``t + h`` (charts switched).  ``substep_angle`` [rad]:
    the step is taken in substeps ``hs`` with ``hs max|v| <= substep_angle`` for the
    midpoint velocity ``v`` of each substep, and in which the velocity changes by at
    most ``substep_angle`` of the speed (``max|qdot+ - qdot| <= substep_angle
    max(|qdot|, substep_angle / h)``; :func:`_substep_too_long`): a substep that
    exceeds either by more than twice is taken again at half its length, and the next
    substep's length is predicted from the speed and from the velocity's rate of
    change over the last two.  Coordinates that turn fast keep their accuracy, and
    near a configuration where they race (a contact point crossing a surface whose
    relative curvature degenerates) the substeps shrink with the distance to it;
    ``None``: one step.  ``order`` 4 takes each substep as the triple jump of
    three midpoint steps (module docstring).  A step whose Newton iteration does not converge is
    halved, up to ``MIDPOINT_SPLITS`` times (8 more with ``substep_angle``,
    after which the rest of the step is taken by DOP853 at rtol 1e-10: a
    chart singularity such as a gimbal-locked universal joint).
    ``tau(t, q, qdot)``: applied joint torques.
    """
    left, hs, halvings = h, h, 0
    floor = h / 4096  # the shortest substep the accuracy rules ask for
    # the linearization (K, D) of the first substep serves the chord iterations of the
    # step's other substeps (the answer is the same to the Newton tolerance)
    cache: list[ImplicitTerms | None] = [None]
    retake = False  # a substep taken again is halved, not grown back by the speed rule
    # max|qdot change| / hs over the last two substeps taken: at a peak of the speed the
    # change over one substep nearly vanishes while the acceleration reverses
    rates = [0.0, 0.0]
    while left > 1e-12 * h:
        if substep_angle is not None and not retake:
            speed = float(np.abs(qdot).max(initial=0.0))
            hs = min(2.0 * hs, h if speed == 0.0 else max(substep_angle / speed, floor))
            rate = max(rates)
            if rate > 0.0:  # the velocity's rate of change over the last substeps
                allowed = substep_angle * max(speed, substep_angle / h) / rate
                hs = min(hs, max(allowed, floor))
        hs, retake = min(hs, left), False
        try:
            q_new, qdot_new, moved = _composed_substep(tree, q, qdot, hs, tau, t, order, cache)
        except StepFailure:
            cache[0] = None
            if halvings < MIDPOINT_SPLITS + (0 if substep_angle is None else 8):
                hs, halvings, retake = 0.5 * hs, halvings + 1, True
                continue
            if substep_angle is None:
                raise
            # no substep converges (a singular chart, e.g. a gimbal-locked universal
            # joint): the rest of the step by the adaptive integrator
            q, qdot = _adaptive_rest(tree, q, qdot, left, tau, t)
            break
        if substep_angle is not None:
            change = float(np.abs(qdot_new - qdot).max(initial=0.0))
            too_long = _substep_too_long(moved, change, h, qdot, qdot_new, substep_angle)
            if hs > floor and too_long:
                hs, retake = 0.5 * hs, True
                continue
            rates = [rates[1], change / hs]
        q, qdot, t, left = q_new, qdot_new, t + hs, left - hs
    return q, qdot


def _substep_too_long(
    moved: float, change: float, h: float, qdot: Array, qdot_new: Array, angle: float
) -> bool:
    """Whether a substep of a step of ``h`` [s] exceeds twice what ``substep_angle``
    allows: a coordinate moved by more than ``2 angle``, or the velocity changed by
    more than ``2 angle`` of the larger speed at its ends (at least ``angle / h``, the
    speed below which the angle does not split the step).

    A method of order ``p`` errs by ``O(hs^(p+1) |q^(p+1)|)`` per substep; near a
    configuration where the coordinates race (the surfaces' relative curvature
    degenerating), at a distance ``theta`` [rad] of it, ``qddot ~ |qdot|^2 / theta``
    and ``q^(p+1) ~ |qdot|^(p+1) / theta^p``, so a bound on the angle alone leaves an
    error ``angle^(p+1) / theta^p`` that grows without bound as ``theta`` falls.  The
    relative change of the velocity, ``rho = hs |qddot| / |qdot| = hs |qdot| / theta``,
    measures the substep's angle against ``theta``: the error is ``(hs |qdot|) rho^p``,
    and ``rho <= angle`` bounds it by ``angle^(p+1)`` however close the configuration,
    the order of the error of a substep of that angle away from it.  (A looser bound
    for the triple jump, ``rho <= sqrt(angle)``, left it ``angle^3``: on the windmill
    a race to 3560 rad/s then lost 4.2e-4 J in one step at 0.0125 rad, against 6e-9 J
    with ``rho <= angle``; docs/reduced-integration.md.)
    """
    speed = max(float(np.abs(qdot).max(initial=0.0)), float(np.abs(qdot_new).max(initial=0.0)))
    return moved > 2.0 * angle or change > 2.0 * angle * max(speed, angle / h)


def _adaptive_rest(
    tree: Tree,
    q: Array,
    qdot: Array,
    span: float,
    tau: Callable[[float, Array, Array], Array] | None,
    t: float,
) -> tuple[Array, Array]:
    """``(q, qdot)`` after ``span`` [s] by DOP853 at rtol 1e-10 (charts switched)."""
    from contactlab.reduced.integrators import simulate_adaptive

    torque = None if tau is None else (lambda s, x, y: tau(t + s, x, y))
    traj = simulate_adaptive(
        tree, q, qdot, span, rtol=1e-10, atol=1e-12, t_eval=np.array([span]), tau=torque
    )
    q_new, qdot_new, _ = tree.reparameterize(traj.q[-1], traj.qdot[-1])
    return q_new, qdot_new


#: Suzuki-Yoshida triple jump: midpoint substeps of (g, 1 - 2 g, g) times the step,
#: ``g = 1 / (2 - 2^(1/3))``, compose a symmetric symplectic method of order 4
TRIPLE_JUMP = (
    1.0 / (2.0 - 2.0 ** (1.0 / 3.0)),
    1.0 - 2.0 / (2.0 - 2.0 ** (1.0 / 3.0)),
    1.0 / (2.0 - 2.0 ** (1.0 / 3.0)),
)


def _composed_substep(
    tree: Tree,
    q: Array,
    qdot: Array,
    hs: float,
    tau: Callable[[float, Array, Array], Array] | None,
    t: float,
    order: int,
    cache: list[ImplicitTerms | None],
) -> tuple[Array, Array, float]:
    """A substep of ``hs`` by the midpoint rule (``order`` 2) or its triple jump (4):
    ``(q, qdot, hs max|v|)`` with ``v`` the stages' midpoint velocities.

    ``cache[0]``: the linearization ``(K, D)`` for the chord iterations (``None``:
    exact at the stage's start, then kept); dropped when the chord did not converge.
    """
    speed = 0.0
    for g in (1.0,) if order == 2 else TRIPLE_JUMP:
        hg = g * hs
        kin = forward_kinematics(tree, q, qdot)
        t_mid = t + 0.5 * hg
        tau_mid = None if tau is None else (lambda x, y, s=t_mid: tau(s, x, y))
        v, p, p_mid, _, terms, differences = midpoint_velocity(kin, hg, tau=tau_mid, terms=cache[0])
        cache[0] = None if differences else terms
        q_new = kin.q + hg * v
        M_new = model_of(kin).mass_matrix(q_new)
        q, qdot, _ = tree.reparameterize(q_new, dyn.solve_mass(M_new, 2.0 * p_mid - p))
        speed, t = max(speed, float(np.abs(v).max(initial=0.0))), t + hg
    return q, qdot, hs * speed


def _difference_jacobian(fun: Any, x: Array, fx: Array) -> Array:
    """Forward differences of ``fun`` at ``x`` (``fx = fun(x)``), step ``1e-7 (1 + |x_k|)``."""
    out = np.empty((fx.size, x.size))
    for k in range(x.size):
        step = 1e-7 * (1.0 + abs(x[k]))
        e = x.copy()
        e[k] += step
        out[:, k] = (fun(e) - fx) / step
    return out


def _inverse(A: Array) -> Array:
    """``A^{-1}`` of a Newton Jacobian (small dense matrices, applied many times)."""
    try:
        inv = np.linalg.inv(A)
    except np.linalg.LinAlgError as err:
        raise StepFailure("the midpoint step's Jacobian is singular; reduce h") from err
    if not np.all(np.isfinite(inv)):
        raise StepFailure("the midpoint step's Jacobian is singular; reduce h")
    return inv
