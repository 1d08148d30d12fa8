"""Constraints in reduced coordinates: loops, couplings, prescribed motion, joint limits.

Sueda's notes §2.8–2.9.  A constraint acts on the joint velocities through rows
``G`` (m, nq).  Rows that live on the bodies (loop closures, prescribed
body twists) are maximal rows ``G_m`` mapped by the tree Jacobian,
``G = G_m J`` and ``Gdot qdot = Gdot_m phi + G_m Jdot qdot`` (eq. 2.98);
rows on the joint coordinates (couplings, prescribed joints, limits) are
written directly (eq. 2.96–2.97).

Every equality constraint provides :class:`ConstraintTerms`: the rows, the
bias ``Gdot qdot``, the position error ``g`` (``None`` for a constraint on
velocities, such as a prescribed twist) and the target rate ``r(t)`` with
``G qdot = r`` (non-zero only for prescribed motion).  Baumgarte
stabilization (Sueda's notes, eq. 1.82) then gives

* velocity level (the time step, eq. 2.95 and 2.103):
  ``G qdot+ = r_step - gamma g``, with ``r_step`` the mean target rate
  over the step, ``(p(t+h) - p(t))/h`` for a prescribed joint — so that with
  ``gamma = 1/h`` the joint lands exactly on ``p(t+h)``;
* acceleration level (eq. 2.94, 2.99, 2.102):
  ``G qddot = rdot - Gdot qdot - 2 alpha (G qdot - r) - beta^2 g``;
  the time step uses it discretised, ``qddot = (qdot+ - qdot)/h``.

Joint limits are unilateral rows ``L qdot+ >= l`` that keep
``q + h qdot+`` inside ``[lower, upper]`` (solved as a QP by the contact
models).  The acceleration-level solves live in
:mod:`contactlab.reduced.constrained_dynamics`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.joints.body_constraints import Constraint, joint_constraints, stack_rows
from contactlab.joints.joint_constraints import HingeLoopRows
from contactlab.maximal import assembly as asm
from contactlab.maximal.joint_coordinates import (
    JointCoupling,
    PrescribedBodyTwist,
    PrescribedCoordinate,
)
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.tree import Array, Tree
from contactlab.scene import JointSpec, Scene


class ReducedConstraint(ABC):
    """Rows acting on ``qdot+``: ``G qdot+ = g`` (bilateral) or ``L qdot+ >= l`` (unilateral).

    Subclasses compute their rows from the tree's kinematics; maximal rows
    ``G_m`` become ``G_m J`` (Sueda's notes, eq. 2.98).
    """

    #: ``True`` for inequality rows (joint limits), ``False`` for equalities.
    unilateral: bool = False

    @abstractmethod
    def rows(
        self, tree: Tree, kin: Kinematics, h: float, t: float = 0.0
    ) -> tuple[Array, Array, Array]:
        """``(rows (m, nq), rhs (m,), position error (m,))`` at the state at time ``t`` [s]."""


#: ``p(t) -> (position, velocity, acceleration)`` of a prescribed joint, each (ndof,).
Trajectory = Callable[[float], tuple[Any, Any, Any]]
#: ``v(t) -> (value, rate)`` of prescribed twist components, each (k,).
TwistProfile = Callable[[float], tuple[Any, Any]]


@dataclass
class ConstraintTerms:
    """One equality constraint at one state (see the module docstring).

    G : (m, nq) rows.
    bias : (m,) ``Gdot qdot``.
    error : (m,) position error ``g``, or ``None`` for a velocity constraint.
    rate, rate_dot : (m,) target ``r(t)`` of ``G qdot`` and its time derivative.
    rate_step : (m,) target of ``G qdot+`` over a step of size ``h``.
    """

    G: Array
    bias: Array
    error: Array | None
    rate: Array
    rate_dot: Array
    rate_step: Array


def _zeros_terms(G: Array, bias: Array, error: Array | None) -> ConstraintTerms:
    z = np.zeros(G.shape[0])
    return ConstraintTerms(G, bias, error, z, z, z)


class EqualityConstraint(ReducedConstraint):
    """Equality rows with Baumgarte stabilization; subclasses give :meth:`terms`.

    ``stabilization`` is "velocity" (default), "acceleration" or "off", the
    forms of :class:`contactlab.maximal.MaximalFormulation`; the factors come
    from the scene's :class:`~contactlab.scene.StabilizationParams`.
    """

    unilateral = False
    name: str = ""
    stabilization: str = "velocity"

    def bind(self, tree: Tree, stabilization: str = "velocity") -> EqualityConstraint:
        """Resolve names against ``tree`` and choose the stabilization form."""
        if stabilization not in ("velocity", "acceleration", "off"):
            raise ConfigurationError(
                f"stabilization must be 'velocity', 'acceleration' or 'off', got {stabilization!r}"
            )
        self.stabilization = stabilization
        self._tree = tree
        return self

    def _bound(self, tree: Tree) -> None:
        # constraints handed to a formulation directly are bound on first use
        if getattr(self, "_tree", None) is not tree:
            self.bind(tree, self.stabilization)

    @abstractmethod
    def terms(self, tree: Tree, kin: Kinematics, t: float, h: float) -> ConstraintTerms:
        """The constraint's :class:`ConstraintTerms` at ``kin`` and time ``t`` [s]."""

    def rows(
        self, tree: Tree, kin: Kinematics, h: float, t: float = 0.0
    ) -> tuple[Array, Array, Array]:
        self._bound(tree)
        c = self.terms(tree, kin, t, h)
        b = asm.resolve_baumgarte(tree.scene, h, self.stabilization)
        g = np.zeros(c.G.shape[0]) if c.error is None else c.error
        if b.form == "acceleration":
            Gv = c.G @ kin.qdot
            acc = c.rate_dot - c.bias - 2.0 * b.alpha * (Gv - c.rate) - b.beta**2 * g
            return c.G, Gv + h * acc, g
        return c.G, c.rate_step - b.gamma * g, g

    def acceleration_rows(
        self, tree: Tree, kin: Kinematics, t: float, alpha: float, beta: float
    ) -> tuple[Array, Array]:
        """``(G, rhs)`` of ``G qddot = rhs`` with Baumgarte factors ``alpha``, ``beta`` [1/s]."""
        self._bound(tree)
        c = self.terms(tree, kin, t, 0.0)
        g = np.zeros(c.G.shape[0]) if c.error is None else c.error
        rhs = c.rate_dot - c.bias - 2.0 * alpha * (c.G @ kin.qdot - c.rate) - beta**2 * g
        return c.G, rhs


# -- loop closures ------------------------------------------------------------
class MaximalRows(EqualityConstraint):
    """Maximal constraints ``G_m Phi = 0`` in reduced coordinates (eq. 2.98).

    ``G = G_m J``, ``Gdot qdot = Gdot_m Phi + G_m Jdot qdot``; the position
    error is the maximal one.
    """

    def __init__(self, constraints: Sequence[Constraint], name: str = "loop") -> None:
        self.constraints = list(constraints)
        self.name = name

    def terms(self, tree: Tree, kin: Kinematics, t: float, h: float) -> ConstraintTerms:
        rows = stack_rows(self.constraints, kin.E, kin.phi, with_bias=True)
        Gm = rows.G
        assert rows.bias is not None
        bias = rows.bias + Gm @ kin.Jdot_times(kin.qdot).reshape(-1)
        return _zeros_terms(np.asarray(Gm @ kin.J), np.asarray(bias), rows.g)


def loop_closures(scene: Scene, specs: Sequence[JointSpec]) -> list[MaximalRows]:
    """One :class:`MaximalRows` per loop-closing joint.

    The closure has the rows of the joint's own kind in maximal coordinates
    (a full point / frame closure: a spherical loop keeps the points
    together, a revolute loop the points and the axis, a fixed loop the
    frames); a revolute loop with ``params["loop_rows"] = "hinge"`` uses the
    2-row form of eq. 2.90–2.91 instead, as planar loops need.
    """
    out = []
    for spec in specs:
        form = spec.params.get("loop_rows", "full")
        if form == "hinge":
            if spec.kind not in ("revolute", "continuous"):
                raise ConfigurationError(
                    f"loop joint {spec.name!r}: loop_rows='hinge' needs a revolute joint, "
                    f"got kind {spec.kind!r}"
                )
            cons: list[Constraint] = [HingeLoopRows(scene, [spec])]
        elif form == "full":
            cons = joint_constraints(scene, [spec])
        else:
            raise ConfigurationError(
                f"loop joint {spec.name!r}: loop_rows must be 'full' or 'hinge', got {form!r}"
            )
        out.append(MaximalRows(cons, spec.name))
    return out


# -- constraints on joint coordinates ------------------------------------------
def _joint_dofs(tree: Tree, joint: str, what: str) -> slice:
    try:
        return tree.dofs(joint)
    except ConfigurationError as err:
        raise ConfigurationError(f"{what}: {err}") from err


class Coupling(EqualityConstraint):
    """``q_b = ratio q_a + offset`` between two one-coordinate joints (gears, eq. 2.96).

    Parameters
    ----------
    joint_a, joint_b : joint names.
    ratio : ``k`` [-] (the gear ratio, negative for meshing gears).
    offset : [rad or m]; ``None`` keeps the initial ``q_b - k q_a``.
    """

    def __init__(
        self, joint_a: str, joint_b: str, ratio: float, offset: float | None = None
    ) -> None:
        self.joint_a, self.joint_b = joint_a, joint_b
        self.ratio = float(ratio)
        self.offset = offset
        self.name = f"coupling:{joint_b}={ratio:g}*{joint_a}"

    def bind(self, tree: Tree, stabilization: str = "velocity") -> Coupling:
        super().bind(tree, stabilization)
        a = _joint_dofs(tree, self.joint_a, f"coupling {self.name!r}")
        b = _joint_dofs(tree, self.joint_b, f"coupling {self.name!r}")
        if a.stop - a.start != 1 or b.stop - b.start != 1:
            raise ConfigurationError(
                f"coupling {self.name!r} joins one-coordinate joints; {self.joint_a!r} and "
                f"{self.joint_b!r} have {a.stop - a.start} and {b.stop - b.start}"
            )
        self.ia, self.ib = a.start, b.start
        if self.offset is None:
            q0, _ = tree.initial_coordinates()
            self.offset = float(q0[self.ib] - self.ratio * q0[self.ia])
        return self

    def maximal_constraint(self) -> Constraint:
        """The coupling in maximal coordinates (:mod:`contactlab.maximal.joint_coordinates`)."""
        return JointCoupling(self.joint_a, self.joint_b, self.ratio, self.offset, self.name)

    def terms(self, tree: Tree, kin: Kinematics, t: float, h: float) -> ConstraintTerms:
        G = np.zeros((1, tree.nq))
        G[0, self.ib], G[0, self.ia] = 1.0, -self.ratio
        assert self.offset is not None
        g = np.array([kin.q[self.ib] - self.ratio * kin.q[self.ia] - self.offset])
        return _zeros_terms(G, np.zeros(1), g)


class PrescribedJoint(EqualityConstraint):
    """A joint that follows ``p(t)`` (hybrid dynamics, Sueda's notes §2.9, eq. 2.102–2.103).

    ``trajectory(t)`` returns position, velocity and acceleration (each
    (ndof,)).  The multipliers of its rows are the joint forces that produce
    the motion (:func:`prescribed_forces`).
    """

    #: the motion does work no potential records (see :mod:`contactlab.divergence`)
    supplies_energy = True

    def __init__(self, joint: str, trajectory: Trajectory) -> None:
        self.joint, self.trajectory = joint, trajectory
        self.name = f"prescribed:{joint}"

    def maximal_constraint(self) -> Constraint:
        """The prescription in maximal coordinates (one-coordinate joints)."""
        return PrescribedCoordinate(self.joint, self.trajectory, self.name)

    def bind(self, tree: Tree, stabilization: str = "velocity") -> PrescribedJoint:
        super().bind(tree, stabilization)
        self.dofs = _joint_dofs(tree, self.joint, f"prescribed joint {self.joint!r}")
        return self

    def _p(self, t: float) -> tuple[Array, Array, Array]:
        k = self.dofs.stop - self.dofs.start
        p, v, a = (np.broadcast_to(np.asarray(x, dtype=float), (k,)) for x in self.trajectory(t))
        return p, v, a

    def terms(self, tree: Tree, kin: Kinematics, t: float, h: float) -> ConstraintTerms:
        k = self.dofs.stop - self.dofs.start
        G = np.zeros((k, tree.nq))
        G[:, self.dofs] = np.eye(k)
        p, v, a = self._p(t)
        step = v if h == 0.0 else (self._p(t + h)[0] - p) / h
        return ConstraintTerms(G, np.zeros(k), kin.q[self.dofs] - p, v, a, step)


class PrescribedTwist(EqualityConstraint):
    """Components of a body's twist follow ``v(t)`` (maximal hybrid dynamics, eq. 2.98).

    Parameters
    ----------
    body : body name.
    components : indices into the body twist ``(omega, nu)`` (body frame).
    profile : ``v(t) -> (value (k,), rate (k,))`` [rad/s, m/s].
    """

    #: the motion does work no potential records (see :mod:`contactlab.divergence`)
    supplies_energy = True

    def __init__(self, body: str, components: Sequence[int], profile: TwistProfile) -> None:
        self.body, self.profile = body, profile
        self.components = np.array(components, dtype=np.int64)
        if self.components.size == 0 or np.any((self.components < 0) | (self.components > 5)):
            raise ConfigurationError(
                f"prescribed twist of {body!r}: components must be indices 0..5, got {components}"
            )
        self.name = f"twist:{body}"

    def maximal_constraint(self) -> Constraint:
        """The prescription in maximal coordinates (rows on the body twist)."""
        return PrescribedBodyTwist(self.body, self.components, self.profile, self.name)

    def bind(self, tree: Tree, stabilization: str = "velocity") -> PrescribedTwist:
        super().bind(tree, stabilization)
        self.rows_index = 6 * tree.scene.body_index(self.body) + self.components
        return self

    def _v(self, t: float) -> tuple[Array, Array]:
        k = self.components.size
        v, a = (np.broadcast_to(np.asarray(x, dtype=float), (k,)) for x in self.profile(t))
        return v, a

    def terms(self, tree: Tree, kin: Kinematics, t: float, h: float) -> ConstraintTerms:
        G = kin.J[self.rows_index]
        bias = kin.Jdot_times(kin.qdot).reshape(-1)[self.rows_index]
        v, a = self._v(t)
        return ConstraintTerms(G, bias, None, v, a, self._v(t + h)[0])


class JointLimit(ReducedConstraint):
    """``lower <= q <= upper`` for a joint's coordinates (inequalities, eq. 2.100–2.101).

    Rows ``qdot+ >= (lower - q)/h`` and ``-qdot+ >= (q - upper)/h`` keep the
    coordinate inside after the step ``q + h qdot+``; the error reported is
    the violation (0 inside).
    """

    unilateral = True

    def __init__(self, joint: str, lower: Any, upper: Any) -> None:
        self.joint = joint
        self.lower = np.atleast_1d(np.asarray(lower, dtype=float))
        self.upper = np.atleast_1d(np.asarray(upper, dtype=float))
        if np.any(self.lower > self.upper):
            raise ConfigurationError(
                f"joint limit of {joint!r}: lower {self.lower} exceeds upper {self.upper}"
            )
        self.name = f"limit:{joint}"

    def maximal_limits(self) -> list[tuple[str, float, float]]:
        """``(joint, lower, upper)`` for the maximal formulation (one-coordinate joints)."""
        if self.lower.size != 1 or self.upper.size != 1:
            raise ConfigurationError(
                f"joint limit of {self.joint!r}: in maximal coordinates only one-coordinate "
                "joints are limited; run it with --formulation reduced"
            )
        return [(self.joint, float(self.lower[0]), float(self.upper[0]))]

    def bind(self, tree: Tree, stabilization: str = "velocity") -> JointLimit:
        self.dofs = _joint_dofs(tree, self.joint, f"joint limit {self.name!r}")
        self._tree = tree
        return self

    def rows(
        self, tree: Tree, kin: Kinematics, h: float, t: float = 0.0
    ) -> tuple[Array, Array, Array]:
        if getattr(self, "_tree", None) is not tree:
            self.bind(tree)
        k = self.dofs.stop - self.dofs.start
        eye = np.zeros((k, tree.nq))
        eye[:, self.dofs] = np.eye(k)
        q = kin.q[self.dofs]
        L = np.vstack([eye, -eye])
        lo, up = np.broadcast_to(self.lower, (k,)), np.broadcast_to(self.upper, (k,))
        rhs = np.concatenate([(lo - q) / h, (q - up) / h])
        violation = np.concatenate([np.minimum(q - lo, 0.0), np.minimum(up - q, 0.0)])
        return L, rhs, violation


def scene_constraints(
    scene: Scene, tree: Tree, stabilization: str = "velocity"
) -> list[ReducedConstraint]:
    """Loop closures of ``tree`` and the scene's constraints, bound to ``tree``.

    A maximal :class:`~contactlab.joints.body_constraints.Constraint` (a
    position-level function of the body transforms and its maximal rows) is
    mapped as the loop closures are, ``G = G_m J`` (:class:`MaximalRows`), so
    the same constraint description runs in both formulations.
    """
    out: list[ReducedConstraint] = list(loop_closures(scene, tree.loop_joints))
    for item in scene.constraints:
        if isinstance(item, Constraint):
            name = str(getattr(item, "name", "") or type(item).__name__)
            out.append(MaximalRows([item.bind(scene)], name))
            continue
        if not isinstance(item, (EqualityConstraint, JointLimit)):
            raise ConfigurationError(
                f"scene {scene.name!r}: constraint {item!r} is not a reduced-coordinate "
                "constraint (Coupling, PrescribedJoint, PrescribedTwist, JointLimit, or a "
                "subclass of contactlab.reduced.constraints.EqualityConstraint) nor a maximal "
                "one (a subclass of contactlab.maximal.Constraint)"
            )
        out.append(item)
    for c in out:
        c.bind(tree, stabilization)  # type: ignore[attr-defined]
    return out


def constraint_errors(tree: Tree, constraints: Sequence[Any], q: Array, t: float = 0.0) -> Array:
    """Position errors of every constraint at ``q`` (violations for limits)."""
    kin = forward_kinematics(tree, q)
    parts = [c.rows(tree, kin, 1.0, t)[2] for c in constraints]
    return np.concatenate(parts) if parts else np.zeros(0)


def prescribed_forces(
    constraints: Sequence[Any], owners: Sequence[str], lambda_G: Array, h: float, nq: int
) -> dict[str, Array]:
    """Joint forces (nq,) that produce each :class:`PrescribedJoint`'s motion in one step.

    ``owners`` names the constraint of every bilateral row
    (:attr:`StepProblem.G_owner <contactlab.problem.StepProblem.G_owner>`);
    the force is ``G_p^T lambda_p / h`` (eq. 2.102, ``tau_p = G_p^T lambda_p``,
    with the step's impulses divided by ``h``), zero outside the prescribed
    joint's coordinates.
    """
    out: dict[str, Array] = {}
    owner = np.asarray(owners)
    lam = np.asarray(lambda_G)
    for c in constraints:
        if isinstance(c, PrescribedJoint):
            tau = np.zeros(nq)
            tau[c.dofs] = lam[owner == c.name] / h
            out[c.joint] = tau
    return out
