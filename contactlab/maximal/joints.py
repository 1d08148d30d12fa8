"""Joint constraints in maximal coordinates, vectorized over the joints of one kind.

A joint connects a parent body ``a`` (or the world) and a child body ``b``;
its frames ``F_a``, ``F_b`` sit in the body frames, and with the world joint
frames ``J_a = E_a F_a``, ``J_b = E_b F_b`` the joint holds when
``J_a^{-1} J_b = Q(q)`` for some ``q`` (the reduced formulation's joint map,
:mod:`contactlab.reduced.registry`, same axes and defaults).

Sueda's notes §1.10 (eq. 1.69) obtains the velocity rows by keeping rows of
``Ad(J_b^{-1} E_b) phi_b - Ad(J_b^{-1} E_a) phi_a``.  Here every row is the
time derivative of an explicit position-level function, so that
``G Phi = d/dt g(E)`` holds at every configuration, not only on the joint
manifold, and the Baumgarte terms (eq. 1.82) use the same ``g``.  Two
primitives, both exact:

* offset along a parent direction: ``g = (R_a u) . (o_b - o_a)`` with the
  joint origins ``o = R x + p`` (``u``, ``x`` fixed in the bodies); its rate
  is ``(R_a u) . (o_b' - o_a' - omega_a x (o_b - o_a))``;
* dot product of body-fixed directions: ``g = (R_a u) . (R_b v) - c0`` with
  rate ``(omega_b - omega_a) . ((R_b v) x (R_a u))`` (world angular
  velocities ``omega = R omega_body``).

On the joint manifold these rows span exactly the seed's adjoint rows, so
they annihilate exactly the joint's allowed relative twists.  Kinds (axes in
the joint frame; defaults as in the reduced formulation):

==============  ============================================  =====
kind            rows                                           m
==============  ============================================  =====
fixed           origin (3) + rotation lock (3)                 6
revolute        origin (3) + axis alignment (2); axis z        5
prismatic       offsets normal to the axis (2) + lock (3); x   5
cylindrical     offsets normal to the axis (2) + alignment (2) 4
planar          offset along the normal (1) + lock (3)         4
universal       origin (3) + ``a1 . a2`` kept (1); x, y        4
spherical       origin (3)                                     3
translational   rotation lock (3)                              3
free            none                                           0
==============  ============================================  =====

The rotation lock is ``vee(R - R^T)/2`` of ``R = J_a^T J_b`` (sin of the
angle times the axis); the alignment is ``(e1_a . a_b, e2_a . a_b)``, the
misalignment of the child axis in the parent's normal plane.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from contactlab.maximal.constraints import (
    Constraint,
    ConstraintRows,
    body_index_map,
    register_constraint,
)
from contactlab.scene import JointSpec, Scene
from contactlab.se3 import unit_axis

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

_EYE = np.eye(3)
_X, _Y, _Z = _EYE

#: Per kind: translational directions (kt, 3) and rotational rows
#: ``sum_t C[k, t] (u_kt)_a . (v_kt)_b - c0_k`` with U, V (kr, 2, 3), C (kr, 2), c0 (kr,).
Geometry = tuple[Array, Array, Array, Array, Array]


def _basis(a: Array) -> tuple[Array, Array]:
    """Unit ``e1, e2`` with ``(e1, e2, a)`` right-handed orthonormal."""
    e1 = np.cross(a, _X if abs(a[0]) < 0.9 else _Y)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(a, e1)


def _lock() -> tuple[Array, Array, Array]:
    """Rows ``vee(R - R^T)/2``: ``R_ij = x_i^a . x_j^b``."""
    U = np.array([[_Z, _Y], [_X, _Z], [_Y, _X]])
    V = np.array([[_Y, _Z], [_Z, _X], [_X, _Y]])
    C = np.tile([0.5, -0.5], (3, 1))
    return U, V, C


def _align(a: Array) -> tuple[Array, Array, Array]:
    e1, e2 = _basis(a)
    U = np.array([[e1, e1], [e2, e2]])
    V = np.array([[a, a], [a, a]])
    C = np.array([[1.0, 0.0], [1.0, 0.0]])
    return U, V, C


def joint_geometry(
    trans: Array, rot: tuple[Array, Array, Array] | None, c0: Array | None = None
) -> Geometry:
    """A joint's :data:`Geometry` from its translational directions (kt, 3).

    ``rot`` is ``(U, V, C)`` of the rotational rows (``None``: no rotational
    row) and ``c0`` their constants (``None``: zero), as a subclass's
    :meth:`JointConstraint.geometry` returns them.
    """
    if rot is None:
        rot = (np.zeros((0, 2, 3)), np.zeros((0, 2, 3)), np.zeros((0, 2)))
    U, V, C = rot
    return (
        np.asarray(trans, dtype=float).reshape(-1, 3),
        U,
        V,
        C,
        np.zeros(len(C)) if c0 is None else c0,
    )


class JointConstraint(Constraint):
    """All joints of one kind, evaluated with batched array operations.

    Subclasses declare only :meth:`geometry`, the joint's rows in its joint
    frame as a function of ``axis`` and ``params``.
    """

    def __init__(self, scene: Scene, specs: Sequence[JointSpec]) -> None:
        self.specs = tuple(specs)
        nj = len(self.specs)
        index = body_index_map(scene)
        self.ia = np.array([index[s.parent] for s in self.specs], dtype=np.int64)
        self.ib = np.array([index[s.child] for s in self.specs], dtype=np.int64)
        Fa = np.array([s.frame_parent for s in self.specs]).reshape(nj, 4, 4)
        Fb = np.array([s.frame_child for s in self.specs]).reshape(nj, 4, 4)
        geos = [self._checked_geometry(s) for s in self.specs]
        trans = np.array([g[0] for g in geos]).reshape(nj, -1, 3)
        # directions and points in body coordinates (constant for the run)
        self.xa, self.xb = Fa[:, :3, 3], Fb[:, :3, 3]
        self.Da = np.einsum("jab,jkb->jka", Fa[:, :3, :3], trans)
        self.Ua = np.einsum(
            "jab,jktb->jkta", Fa[:, :3, :3], np.array([g[1] for g in geos]).reshape(nj, -1, 2, 3)
        )
        self.Vb = np.einsum(
            "jab,jktb->jkta", Fb[:, :3, :3], np.array([g[2] for g in geos]).reshape(nj, -1, 2, 3)
        )
        self.C = np.array([g[3] for g in geos]).reshape(nj, -1, 2)
        self.c0 = np.array([g[4] for g in geos]).reshape(nj, -1)
        self.kt, self.kr = self.Da.shape[1], self.C.shape[1]

    @classmethod
    @abstractmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        """Translational directions and rotational rows in the joint frame."""

    def _checked_geometry(self, spec: JointSpec) -> Geometry:
        try:
            return self.geometry(spec.axis, spec.params)
        except ConfigurationError as err:
            raise ConfigurationError(f"joint {spec.name!r} ({spec.kind}): {err}") from err

    @classmethod
    def from_joints(cls, scene: Scene, specs: Sequence[JointSpec]) -> list[Constraint]:
        return [cls(scene, specs)]

    @property
    def n_rows(self) -> int:
        return len(self.specs) * (self.kt + self.kr)

    def row_owners(self) -> list[str]:
        return [s.name for s in self.specs for _ in range(self.kt + self.kr)]

    @property
    def joint_rows(self) -> int:
        """Rows per joint."""
        return self.kt + self.kr

    # -- evaluation ------------------------------------------------------
    def _kinematics(self, E: Array, phi: Array | None) -> dict[str, Array]:
        Eext = np.concatenate([E, np.eye(4)[None]], axis=0)
        Ea, Eb = Eext[self.ia], Eext[self.ib]
        Ra, Rb = Ea[:, :3, :3], Eb[:, :3, :3]
        k: dict[str, Array] = {"Ra": Ra, "Rb": Rb}
        k["oa"] = np.einsum("jab,jb->ja", Ra, self.xa) + Ea[:, :3, 3]
        k["ob"] = np.einsum("jab,jb->ja", Rb, self.xb) + Eb[:, :3, 3]
        k["u"] = np.einsum("jab,jkb->jka", Ra, self.Da)  # (nj, kt, 3) world
        k["ur"] = np.einsum("jab,jktb->jkta", Ra, self.Ua)  # (nj, kr, 2, 3)
        k["vr"] = np.einsum("jab,jktb->jkta", Rb, self.Vb)
        if phi is not None:
            pext = np.concatenate([phi, np.zeros((1, 6))], axis=0)
            pa, pb = pext[self.ia], pext[self.ib]
            k["wa"] = np.einsum("jab,jb->ja", Ra, pa[:, :3])
            k["wb"] = np.einsum("jab,jb->ja", Rb, pb[:, :3])
            k["va"] = np.einsum("jab,jb->ja", Ra, np.cross(pa[:, :3], self.xa) + pa[:, 3:])
            k["vb"] = np.einsum("jab,jb->ja", Rb, np.cross(pb[:, :3], self.xb) + pb[:, 3:])
        return k

    def _error(self, k: dict[str, Array]) -> Array:
        r = k["ob"] - k["oa"]
        gt = np.einsum("jka,ja->jk", k["u"], r)
        gr = (
            np.einsum("jkt,jkt->jk", self.C, np.einsum("jkta,jkta->jkt", k["ur"], k["vr"]))
            - self.c0
        )
        return np.concatenate([gt, gr], axis=1).reshape(-1)

    def _blocks(self, k: dict[str, Array]) -> tuple[Array, IntArray]:
        nj = len(self.specs)
        Ra, Rb, u = k["Ra"], k["Rb"], k["u"]
        r = k["ob"] - k["oa"]
        ub = np.einsum("jba,jkb->jka", Rb, u)  # u in b coordinates
        bt = np.zeros((nj, self.kt, 2, 6))
        bt[:, :, 1, :3] = np.cross(self.xb[:, None, :], ub)
        bt[:, :, 1, 3:] = ub
        rxu = np.cross(r[:, None, :], u)
        bt[:, :, 0, :3] = -np.cross(self.xa[:, None, :], self.Da) - np.einsum(
            "jba,jkb->jka", Ra, rxu
        )
        bt[:, :, 0, 3:] = -self.Da
        n = np.einsum("jkt,jkta->jka", self.C, np.cross(k["vr"], k["ur"]))  # world
        br = np.zeros((nj, self.kr, 2, 6))
        br[:, :, 0, :3] = -np.einsum("jba,jkb->jka", Ra, n)
        br[:, :, 1, :3] = np.einsum("jba,jkb->jka", Rb, n)
        blocks = np.concatenate([bt, br], axis=1).reshape(-1, 2, 6)
        bodies = np.broadcast_to(
            np.stack([self.ia, self.ib], axis=1)[:, None, :], (nj, self.kt + self.kr, 2)
        ).reshape(-1, 2)
        return blocks, bodies

    def _bias(self, k: dict[str, Array]) -> Array:
        """Closed-form ``d^2 g/dt^2`` at constant body twists (derivation in the module doc).

        World angular velocities are constant along that flow, a body-fixed
        vector ``y`` moves as ``omega x y`` and a joint origin's velocity as
        ``omega x o'``.
        """
        wa, wb, va, vb, u = k["wa"], k["wb"], k["va"], k["vb"], k["u"]
        r = k["ob"] - k["oa"]
        s = vb - va - np.cross(wa, r)
        sdot = np.cross(wb - wa, vb)
        bt = np.einsum("jka,ja->jk", np.cross(wa[:, None, :], u), s) + np.einsum(
            "jka,ja->jk", u, sdot
        )
        ur, vr = k["ur"], k["vr"]
        wa4, wb4 = wa[:, None, None, :], wb[:, None, None, :]
        d = np.cross(np.cross(wb4, vr), ur) + np.cross(vr, np.cross(wa4, ur))
        br = np.einsum("jkt,jkt->jk", self.C, np.einsum("jkta,jkta->jkt", (wb4 - wa4), d))
        return np.concatenate([bt, br], axis=1).reshape(-1)

    def error(self, E: Array) -> Array:
        return self._error(self._kinematics(E, None))

    def jacobian(self, E: Array) -> tuple[Array, IntArray]:
        return self._blocks(self._kinematics(E, None))

    def bias(self, E: Array, phi: Array) -> Array:
        return self._bias(self._kinematics(E, phi))

    def evaluate(self, E: Array, phi: Array, with_bias: bool = False) -> ConstraintRows:
        k = self._kinematics(E, phi if with_bias else None)
        blocks, bodies = self._blocks(k)
        return ConstraintRows(self._error(k), blocks, bodies, self._bias(k) if with_bias else None)


@register_constraint("fixed")
class FixedConstraint(JointConstraint):
    """Weld: origins coincide, frames aligned (6 rows)."""

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        return joint_geometry(_EYE, _lock())


@register_constraint("revolute")
class RevoluteConstraint(JointConstraint):
    """Hinge about ``axis`` (joint frame, default z): origins coincide, axes aligned (5 rows)."""

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        return joint_geometry(_EYE, _align(unit_axis(axis, _Z, "revolute axis")))


register_constraint("continuous")(type("ContinuousConstraint", (RevoluteConstraint,), {}))


@register_constraint("hinge-loop")
class HingeLoopRows(JointConstraint):
    """The 2-row loop closure of a hinge (Sueda's notes, eq. 2.90–2.91), maximal rows.

    The joint origins of both bodies move alike along two directions normal
    to the hinge axis; the directions ``v1, v2`` of eq. 2.90 are fixed in the
    parent's joint frame, so their rate is exact (``G Phi = dg/dt``).  For a
    planar loop the other three rows of a full hinge would repeat what the
    tree already enforces and make the KKT matrix singular.  A loop-closing
    revolute joint with ``params["loop_rows"] = "hinge"`` gets these rows in
    both formulations.
    """

    @classmethod
    def geometry(cls, axis: Array | None, params: Any) -> Geometry:
        a = unit_axis(axis, _Z, "loop hinge axis")
        v1 = np.zeros(3)
        v1[int(np.argmin(np.abs(a)))] = 1.0  # eq. 2.90: 1 at the smallest |a_k|
        v2 = np.cross(a, v1)
        v2 /= np.linalg.norm(v2)
        v1 = np.cross(v2, a)
        v1 /= np.linalg.norm(v1)
        return joint_geometry(np.array([v1, v2]), None)


@register_constraint("prismatic")
class PrismaticConstraint(JointConstraint):
    """Slider along ``axis`` (default x): no rotation, no offset normal to the axis (5 rows)."""

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        e1, e2 = _basis(unit_axis(axis, _X, "prismatic axis"))
        return joint_geometry(np.array([e1, e2]), _lock())


@register_constraint("cylindrical")
class CylindricalConstraint(JointConstraint):
    """Rotation about and sliding along ``axis`` (default z) (4 rows)."""

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        a = unit_axis(axis, _Z, "cylindrical axis")
        return joint_geometry(np.array(_basis(a)), _align(a))


@register_constraint("planar")
class PlanarConstraint(JointConstraint):
    """Translation in the plane normal to ``axis`` (default z), no rotation (4 rows).

    As the reduced formulation's planar joint (Sueda's notes, eq. 2.25): two
    in-plane translations; a turning plate is a planar joint in series with
    a revolute about the normal.
    """

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        n = unit_axis(axis, _Z, "planar joint normal")
        return joint_geometry(n[None], _lock())


@register_constraint("universal")
class UniversalConstraint(JointConstraint):
    """Rotations about ``params['axes']`` (default x then y): ``Q = exp(a1 q1) exp(a2 q2)``.

    Origins coincide and ``(R_a a1) . (R_b a2) = a1 . a2`` (4 rows).
    """

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        axes = params.get("axes")
        a1, a2 = (_X, _Y) if axes is None else (unit_axis(a, _Z, "universal axis") for a in axes)
        if abs(float(a1 @ a2)) > 1.0 - 1e-9:
            raise ConfigurationError("universal joint axes must not be parallel")
        rot = (np.array([[a1, a1]]), np.array([[a2, a2]]), np.array([[1.0, 0.0]]))
        return joint_geometry(_EYE, rot, np.array([float(a1 @ a2)]))


@register_constraint("spherical")
class SphericalConstraint(JointConstraint):
    """Ball joint: origins coincide (3 rows)."""

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        return joint_geometry(_EYE, None)


register_constraint("spherical_euler")(type("SphericalEulerConstraint", (SphericalConstraint,), {}))


@register_constraint("translational")
class TranslationalConstraint(JointConstraint):
    """Free translation, no rotation (3 rows)."""

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        return joint_geometry(np.zeros((0, 3)), _lock())


@register_constraint("free")
class FreeConstraint(JointConstraint):
    """No constraint (0 rows); the joint only places the child initially."""

    @classmethod
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        return joint_geometry(np.zeros((0, 3)), None)
