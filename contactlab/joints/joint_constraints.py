"""Joint constraints in maximal coordinates, vectorized over the joints of one kind.

A joint connects a parent body ``a`` (or the world) and a child body ``b``;
its frames ``F_a``, ``F_b`` sit in the body frames, and with the world joint
frames ``J_a = E_a F_a``, ``J_b = E_b F_b`` the joint holds when
``J_a^{-1} J_b = Q(q)`` for some ``q`` (the reduced formulation's joint map,
:mod:`contactlab.joints.kinds`, same axes and defaults).

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
they annihilate exactly the joint's allowed relative twists.

A joint kind is described once, by its joint map (``Q``, ``S``, ``Sdot``,
:mod:`contactlab.joints.maps`); the joint map also declares these rows in its
joint frame (``Joint.constraint_geometry``, built from the primitives of
:mod:`contactlab.joints.row_geometry`), and :class:`JointMapRows` evaluates them for every
joint of a kind at once.  Any registered joint kind whose joint map declares rows
runs in maximal coordinates; the built-in ones (axes in the joint frame, defaults
as in the reduced formulation):

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
composite       translation then rotation (or the reverse when ...
                the rotation keeps the slide directions): the
                factors' rows (:func:`row_geometry.series_geometry`)
==============  ============================================  =====

The rotation lock is ``vee(R - R^T)/2`` of ``R = J_a^T J_b`` (sin of the
angle times the axis); the alignment is ``(e1_a . a_b, e2_a . a_b)``, the
misalignment of the child axis in the parent's normal plane.  Kinds without
rows (spline curves and surfaces, transform joints) are refused with one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from contactlab.errors import ConfigurationError
from contactlab.joints.body_constraints import (
    Constraint,
    ConstraintRows,
    body_index_map,
    register_constraint,
)
from contactlab.joints.kinds import joint_from_spec
from contactlab.joints.row_geometry import Geometry, joint_geometry
from contactlab.scene import JointSpec, Scene
from contactlab.se3 import unit_axis

Array = NDArray[np.float64]
IntArray = NDArray[np.int64]

_Z = np.array([0.0, 0.0, 1.0])

__all__ = ["Geometry", "HingeLoopRows", "JointConstraint", "JointMapRows", "joint_geometry"]


class JointConstraint(Constraint):
    """All joints of one kind, evaluated with batched array operations.

    Subclasses declare only :meth:`geometry`, the joint's rows in its joint
    frame as a function of ``axis`` and ``params`` (:class:`JointMapRows` takes
    them from the joint map of each joint's kind).
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
    def geometry(cls, axis: Array | None, params: Mapping[str, Any]) -> Geometry:
        """Translational directions and rotational rows in the joint frame."""
        raise NotImplementedError(f"{cls.__name__} declares no geometry(axis, params)")

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


@register_constraint("joint")
class JointMapRows(JointConstraint):
    """Joints of any kind whose joint map declares rows in maximal coordinates.

    The rows of each joint are ``Joint.constraint_geometry()`` of the joint its
    spec builds (:func:`contactlab.joints.kinds.joint_from_spec`): one
    description of the kind serves both formulations.  Joints of one kind with
    equally many rows are one vectorized group.
    """

    def __init__(
        self,
        scene: Scene,
        specs: Sequence[JointSpec],
        geometries: Sequence[Geometry] | None = None,
    ) -> None:
        self._given = None if geometries is None else list(geometries)
        super().__init__(scene, specs)
        self._given = None

    def _checked_geometry(self, spec: JointSpec) -> Geometry:
        if self._given:
            return self._given.pop(0)
        return spec_geometry(spec)

    @classmethod
    def from_joints(cls, scene: Scene, specs: Sequence[JointSpec]) -> list[Constraint]:
        groups: dict[tuple[int, int], list[tuple[JointSpec, Geometry]]] = {}
        for spec in specs:
            geo = spec_geometry(spec)
            groups.setdefault((geo[0].shape[0], geo[1].shape[0]), []).append((spec, geo))
        return [
            cls(scene, [s for s, _ in group], [g for _, g in group]) for group in groups.values()
        ]


def spec_geometry(spec: JointSpec) -> Geometry:
    """The maximal rows the joint map of ``spec`` declares; one error line when it has none."""
    geo = joint_from_spec(spec).constraint_geometry()
    if geo is None:
        raise ConfigurationError(
            f"joint {spec.name!r} of kind {spec.kind!r} has no maximal equivalent: its joint map "
            "declares no constraint rows (Joint.constraint_geometry); run the scene with "
            "--formulation reduced"
        )
    return geo


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
