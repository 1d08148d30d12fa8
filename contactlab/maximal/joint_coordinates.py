"""Joint coordinates in maximal coordinates: ``q`` and ``qdot`` of one-coordinate joints.

The joint map of a joint's kind (``Q``, ``S``, :mod:`contactlab.joints.maps`) also
reads its coordinate back from the body transforms: with the joint frames
``J_a = E_a F_a``, ``J_b = E_b F_b``, the relative transform ``X = J_a^{-1} J_b`` is
``Q(q)`` on the joint, so ``q = chart(X)`` (``Joint.chart``, Newton on ``log``
from ``q = 0``: the principal angle of a hinge).  Its rate is ``qdot = s^T psi / s^T s``
with the joint's column ``s = S(q)`` and the relative twist of the child joint frame,
in that frame (Sueda's notes, eq. 1.15 and 2.29),

.. math::

    \\psi = \\mathrm{Ad}(F_b^{-1}) \\phi_b - \\mathrm{Ad}(J_b^{-1} E_a) \\phi_a ,

exact on the joint (where ``psi = s qdot``).  With these, joint-coordinate
descriptions of a scene run in maximal coordinates too:

* :class:`JointCoupling`: ``q_b = k q_a + c`` (:class:`contactlab.reduced.constraints.Coupling`,
  gears) as one bilateral row ``qdot_b - k qdot_a`` with error ``q_b - k q_a - c``;
* :class:`PrescribedCoordinate`: a one-coordinate joint following ``p(t)``
  (:class:`contactlab.reduced.constraints.PrescribedJoint`): the rate row with target
  ``(p(t+h) - p(t))/h`` and error ``q - p(t)``;
* :class:`PrescribedBodyTwist`: components of a body twist following ``v(t)``
  (:class:`contactlab.reduced.constraints.PrescribedTwist`): unit rows on the body's
  twist with target ``v(t+h)``, on velocities only;
* :class:`CoordinateLimits`: ``lower <= q <= upper``
  (:class:`contactlab.reduced.constraints.JointLimit`) as the unilateral rows
  ``qdot+ >= (lower - q)/h`` and ``-qdot+ >= (q - upper)/h`` (eq. 2.100–2.101);
* :class:`JointSprings`: the joint spring and damper of ``JointSpec.stiffness``,
  ``damping``, ``rest``: the generalized force ``tau = -k (q - rest) - d qdot`` applied
  as the body wrenches ``tau`` times the rate row (``tau qdot`` is their power).

A hinge's coordinate is read modulo ``2 pi``: a coupling error with an integer ratio
and a spring's stretch ``q - rest`` are wrapped into ``(-pi, pi]``; a non-integer
ratio needs both hinges inside ``(-pi, pi]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.joints import row_geometry
from contactlab.joints.body_constraints import Constraint, TimedConstraint, body_index_map
from contactlab.joints.kinds import build_joint
from contactlab.joints.maps import PrismaticJoint, RevoluteJoint
from contactlab.joints.topology import tree_order
from contactlab.scene import JointSpec, Scene

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

TWO_PI = 2.0 * np.pi


def wrap_angle(x: Array) -> Array:
    """``x`` moved by multiples of ``2 pi`` into ``(-pi, pi]``."""
    return np.asarray(np.pi - np.mod(np.pi - x, TWO_PI), dtype=float)


class JointCoordinates:
    """Coordinate and rate row of one-coordinate joints, read through their joint maps."""

    def __init__(self, scene: Scene, specs: Sequence[JointSpec], what: str) -> None:
        index = body_index_map(scene)
        self.specs = tuple(specs)
        self.joints = [build_joint(s) for s in self.specs]
        for spec, joint in zip(self.specs, self.joints):
            if joint.ndof != 1:
                raise ConfigurationError(
                    f"{what}: joint {spec.name!r} ({spec.kind}) has {joint.ndof} coordinates; "
                    "in maximal coordinates only one-coordinate joints are read back; run it "
                    "with --formulation reduced"
                )
        self.ia = np.array([index[s.parent] for s in self.specs], dtype=np.int64)
        self.ib = np.array([index[s.child] for s in self.specs], dtype=np.int64)
        self.Fa = np.array([s.frame_parent for s in self.specs]).reshape(-1, 4, 4)
        self.Fb = np.array([s.frame_child for s in self.specs]).reshape(-1, 4, 4)
        self.hinge = np.array([type(j) is RevoluteJoint for j in self.joints], dtype=bool)
        self.slider = np.array([type(j) is PrismaticJoint for j in self.joints], dtype=bool)
        self.axis = np.array(
            [
                getattr(j, "axis", np.zeros(3)) if h or s else np.zeros(3)
                for j, h, s in zip(self.joints, self.hinge, self.slider)
            ]
        ).reshape(-1, 3)
        self.normal = np.array(
            [row_geometry.basis(a)[0] if h else np.zeros(3) for a, h in zip(self.axis, self.hinge)]
        ).reshape(-1, 3)
        #: the joints' constant columns S (hinges, sliders; others are evaluated at q)
        self.column = np.array([j.S(np.zeros(1))[:, 0] for j in self.joints]).reshape(-1, 6)
        self.periodic = np.array(
            [
                np.allclose(j.Q(np.array([TWO_PI])), j.Q(np.zeros(1)), atol=1e-12)
                for j in self.joints
            ]
        )

    def _frames(self, E: Array) -> tuple[Array, Array, Array]:
        Eext = np.concatenate([E, np.eye(4)[None]], axis=0)
        Ea, Eb = Eext[self.ia], Eext[self.ib]
        return Ea, Ea @ self.Fa, Eb @ self.Fb

    def q(self, E: Array) -> Array:
        """(nj,) joint coordinates at ``E``.

        Hinges and sliders in closed form (``atan2`` of the turn of a direction
        normal to the axis; the offset along the axis), others by ``Joint.chart``.
        """
        _, Ja, Jb = self._frames(E)
        X = se3.inverse(Ja) @ Jb
        out = np.empty(len(self.joints))
        h, s = self.hinge, self.slider
        if h.any():
            e1, a = self.normal[h], self.axis[h]
            Re1 = np.einsum("jab,jb->ja", X[h, :3, :3], e1)
            out[h] = np.arctan2(
                np.einsum("ja,ja->j", np.cross(e1, Re1), a), np.einsum("ja,ja->j", e1, Re1)
            )
        if s.any():
            out[s] = np.einsum("ja,ja->j", X[s, :3, 3], self.axis[s])
        for j in np.flatnonzero(~(h | s)):
            out[j] = self.joints[j].chart(X[j], np.zeros(1))[0]
        return out

    def rates(self, E: Array) -> tuple[Array, Array, IntArray]:
        """``q`` (nj,), rate blocks (nj, 2, 6) on ``(parent, child)`` and their bodies (nj, 2).

        ``qdot_j = blocks[j, 0] . phi_parent + blocks[j, 1] . phi_child``.
        """
        Ea, _, Jb = self._frames(E)
        q = self.q(E)
        s = self.column.copy()
        for j in np.flatnonzero(~(self.hinge | self.slider)):
            s[j] = self.joints[j].S(q[j : j + 1])[:, 0]
        s = s / np.einsum("ja,ja->j", s, s)[:, None]
        Ab = se3.adjoint(se3.inverse(self.Fb))  # (nj, 6, 6)
        Aa = se3.adjoint(se3.inverse(Jb) @ Ea)
        blocks = np.stack([-np.einsum("ja,jab->jb", s, Aa), np.einsum("ja,jab->jb", s, Ab)], axis=1)
        return q, blocks, np.stack([self.ia, self.ib], axis=1)


def _merge(blocks: Array, bodies: IntArray) -> tuple[Array, IntArray]:
    """Blocks of one row on the same body added into one slot (the other becomes world)."""
    blocks, bodies = blocks.copy(), bodies.copy()
    for r in range(bodies.shape[0]):
        for k in range(bodies.shape[1]):
            if bodies[r, k] < 0:
                continue
            for m in range(k + 1, bodies.shape[1]):
                if bodies[r, m] == bodies[r, k]:
                    blocks[r, k] += blocks[r, m]
                    blocks[r, m] = 0.0
                    bodies[r, m] = -1
    return blocks, bodies


class JointCoupling(Constraint):
    """``q_b = ratio q_a + offset`` of two one-coordinate joints, as a maximal row.

    ``offset`` ``None`` keeps the joints' initial ``q0_b - ratio q0_a`` (as
    :class:`contactlab.reduced.constraints.Coupling`).
    """

    def __init__(
        self, joint_a: str, joint_b: str, ratio: float, offset: float | None, name: str
    ) -> None:
        self.joint_a, self.joint_b = joint_a, joint_b
        self.ratio, self.offset = float(ratio), offset
        self.name = name  # type: ignore[misc]

    @property
    def n_rows(self) -> int:
        return 1

    def bind(self, scene: Scene) -> JointCoupling:
        by_name = {j.name: j for j in scene.joints}
        missing = [n for n in (self.joint_a, self.joint_b) if n not in by_name]
        if missing:
            raise ConfigurationError(
                f"coupling {self.name!r}: no joint named {missing[0]!r} in scene {scene.name!r}"
            )
        specs = [by_name[self.joint_a], by_name[self.joint_b]]
        self.coords = JointCoordinates(scene, specs, f"coupling {self.name!r}")
        if self.offset is None:
            q0 = [0.0 if s.q0 is None else float(s.q0[0]) for s in specs]
            self.offset = q0[1] - self.ratio * q0[0]
        self.wrap = bool(self.coords.periodic.all()) and float(self.ratio).is_integer()
        return self

    def _error(self, q: Array) -> Array:
        assert self.offset is not None
        g = q[1] - self.ratio * q[0] - self.offset
        return np.array([wrap_angle(g) if self.wrap else g], dtype=float)

    def error(self, E: Array) -> Array:
        return self._error(self.coords.q(E))

    def jacobian(self, E: Array) -> tuple[Array, IntArray]:
        _, blocks, bodies = self.coords.rates(E)
        row = np.concatenate([-self.ratio * blocks[0], blocks[1]])[None]
        return _merge(row, bodies.reshape(1, 4))


def joint_force_wrench(
    coords: JointCoordinates,
    nb: int,
    E: Array,
    phi: Array,
    force: Callable[[Array, Array], Array],
) -> Array:
    """(nb, 6) body wrenches of the joint forces ``tau = force(q, qdot)`` (nj,) [N m or N].

    A joint force ``tau`` along a joint's rate row ``qdot = b_a . phi_a + b_b . phi_b``
    does the power ``tau qdot``, so its body wrenches are ``tau b_a`` and ``tau b_b``
    (the transpose of the rate row, as ``J^T tau`` in reduced coordinates).
    """
    out = np.zeros((nb + 1, 6))
    q, blocks, bodies = coords.rates(E)
    phi_ext = np.concatenate([phi, np.zeros((1, 6))], axis=0)
    qdot = np.einsum("jka,jka->j", blocks, phi_ext[bodies])
    tau = np.asarray(force(q, qdot), dtype=float)
    np.add.at(out, bodies.reshape(-1), (blocks * tau[:, None, None]).reshape(-1, 6))
    return out[:-1]


class JointTorques:
    """Applied joint forces ``Scene.joint_torque(t, q, qdot)`` as body wrenches.

    ``q`` and ``qdot`` are read back from the bodies through the joint maps in
    the reduced formulation's tree order, so the same torque function drives
    both formulations; every tree joint must have one coordinate (hinge
    angles are read in (-pi, pi]).
    """

    def __init__(self, scene: Scene) -> None:
        self.nb = scene.n_bodies
        self.torque = scene.joint_torque
        self.coords: JointCoordinates | None = None
        if self.torque is not None:
            order, _ = tree_order(scene)
            self.coords = JointCoordinates(scene, order, "joint torque (Scene.joint_torque)")

    def wrench(self, t: float, E: Array, phi: Array) -> Array:
        """(nb, 6) body wrenches of the joint torques at time ``t`` [N m, N]."""
        if self.coords is None or self.torque is None:
            return np.zeros((self.nb, 6))
        torque, n = self.torque, len(self.coords.specs)

        def force(q: Array, qdot: Array) -> Array:
            tau = np.asarray(torque(t, q, qdot), dtype=float).reshape(-1)
            if tau.shape != (n,) or not np.all(np.isfinite(tau)):
                raise ConfigurationError(
                    f"Scene.joint_torque must return {n} finite joint forces (one per tree "
                    f"joint), got shape {tau.shape}"
                )
            return tau

        return joint_force_wrench(self.coords, self.nb, E, phi, force)


class JointSprings:
    """Joint springs and dampers (``JointSpec.stiffness``, ``damping``, ``rest``), body wrenches."""

    def __init__(self, scene: Scene) -> None:
        specs = [j for j in scene.joints if j.stiffness != 0.0 or j.damping != 0.0]
        self.nb = scene.n_bodies
        self.coords = JointCoordinates(scene, specs, "joint spring") if specs else None
        self.k = np.array([s.stiffness for s in specs], dtype=float)
        self.d = np.array([s.damping for s in specs], dtype=float)
        self.rest = np.array([0.0 if s.rest is None else float(s.rest[0]) for s in specs])

    def _stretch(self, q: Array) -> Array:
        assert self.coords is not None
        x = q - self.rest
        return np.where(self.coords.periodic, wrap_angle(x), x)

    def wrench(self, E: Array, phi: Array) -> Array:
        """(nb, 6) body wrenches of ``tau = -k (q - rest) - d qdot`` [N m, N]."""
        if self.coords is None:
            return np.zeros((self.nb, 6))
        return joint_force_wrench(
            self.coords, self.nb, E, phi, lambda q, qdot: -self.k * self._stretch(q) - self.d * qdot
        )

    def energy(self, E: Array) -> float:
        """Spring energy ``sum k (q - rest)^2 / 2`` [J]."""
        if self.coords is None:
            return 0.0
        return float(0.5 * np.sum(self.k * self._stretch(self.coords.q(E)) ** 2))


class PrescribedCoordinate(TimedConstraint):
    """A one-coordinate joint following ``p(t)`` (hybrid dynamics, Sueda's notes §2.9).

    ``trajectory(t)`` returns position, velocity and acceleration, as for
    :class:`contactlab.reduced.constraints.PrescribedJoint`; the row asks
    ``qdot+ = (p(t+h) - p(t))/h - gamma (q - p(t))``.
    """

    def __init__(self, joint: str, trajectory: Callable[[float], Any], name: str) -> None:
        self.joint, self.trajectory = joint, trajectory
        self.name = name  # type: ignore[misc]

    @property
    def n_rows(self) -> int:
        return 1

    def bind(self, scene: Scene) -> PrescribedCoordinate:
        spec = next((j for j in scene.joints if j.name == self.joint), None)
        if spec is None:
            raise ConfigurationError(
                f"prescribed joint {self.joint!r}: no joint of that name in scene {scene.name!r}"
            )
        self.coords = JointCoordinates(scene, [spec], f"prescribed joint {self.joint!r}")
        return self

    def _p(self, t: float) -> float:
        return float(np.asarray(self.trajectory(t)[0], dtype=float).reshape(-1)[0])

    def terms_at(self, E: Array, t: float, h: float) -> tuple[Array | None, Array]:
        p = self._p(t)
        g = self.coords.q(E)[0] - p
        if self.coords.periodic[0]:
            g = float(wrap_angle(np.array(g)))
        if h == 0.0:
            rate = float(np.asarray(self.trajectory(t)[1], dtype=float).reshape(-1)[0])
        else:
            rate = (self._p(t + h) - p) / h
        return np.array([g]), np.array([rate])

    def jacobian(self, E: Array) -> tuple[Array, IntArray]:
        _, blocks, bodies = self.coords.rates(E)
        return blocks, bodies


class PrescribedBodyTwist(TimedConstraint):
    """Components of a body's twist following ``v(t)`` (maximal hybrid dynamics, eq. 2.98).

    ``profile(t)`` returns value and rate (each (k,)), as for
    :class:`contactlab.reduced.constraints.PrescribedTwist`; the rows select the
    components of the body twist and ask ``phi+_k = v(t+h)`` (no position error).
    """

    def __init__(
        self,
        body: str,
        components: Sequence[int] | IntArray,
        profile: Callable[[float], Any],
        name: str,
    ) -> None:
        self.body, self.profile = body, profile
        self.components = np.asarray(components, dtype=np.int64)
        self.name = name  # type: ignore[misc]

    @property
    def n_rows(self) -> int:
        return int(self.components.size)

    def bind(self, scene: Scene) -> PrescribedBodyTwist:
        self.index = scene.body_index(self.body)
        return self

    def _v(self, t: float) -> Array:
        k = self.components.size
        return np.broadcast_to(np.asarray(self.profile(t)[0], dtype=float), (k,)).copy()

    def terms_at(self, E: Array, t: float, h: float) -> tuple[Array | None, Array]:
        return None, self._v(t + h)

    def jacobian(self, E: Array) -> tuple[Array, IntArray]:
        k = self.components.size
        blocks = np.zeros((k, 1, 6))
        blocks[np.arange(k), 0, self.components] = 1.0
        return blocks, np.full((k, 1), self.index, dtype=np.int64)


class CoordinateLimits:
    """``lower <= q <= upper`` of one-coordinate joints as unilateral rows ``L phi+ >= l``.

    ``limits``: ``(joint, lower, upper)`` triples, as
    :class:`contactlab.reduced.constraints.JointLimit` holds them.
    """

    def __init__(self, scene: Scene, limits: Sequence[tuple[str, float, float]]) -> None:
        by_name = {j.name: j for j in scene.joints}
        missing = [name for name, _, _ in limits if name not in by_name]
        if missing:
            raise ConfigurationError(
                f"joint limit: no joint named {missing[0]!r} in scene {scene.name!r}"
            )
        self.nb = scene.n_bodies
        specs = [by_name[name] for name, _, _ in limits]
        self.coords = JointCoordinates(scene, specs, "joint limit") if specs else None
        self.lower = np.array([lo for _, lo, _ in limits], dtype=float)
        self.upper = np.array([up for _, _, up in limits], dtype=float)

    def rows(self, E: Array, h: float) -> tuple[sp.csr_matrix, Array]:
        """``L`` (2 nj, 6 nb) and ``l`` (2 nj,): lower limits first, then upper ones."""
        assert self.coords is not None
        q, blocks, bodies = self.coords.rates(E)
        nj = q.size
        K = np.zeros((nj, 6 * (self.nb + 1)))
        for k in range(2):
            cols = 6 * np.where(bodies[:, k] < 0, self.nb, bodies[:, k])[:, None] + np.arange(6)
            np.add.at(K, (np.arange(nj)[:, None], cols), blocks[:, k])
        K = K[:, : 6 * self.nb]
        L = sp.csr_matrix(np.vstack([K, -K]))
        return L, np.concatenate([(self.lower - q) / h, (q - self.upper) / h])
