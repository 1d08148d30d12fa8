"""Joint kinds: a helical (screw) joint about the joint frame's z (reduced coordinates only)
and a pin in a slot, which also declares its rows in maximal coordinates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.joints.maps import Joint
from contactlab.joints.row_geometry import Geometry, align, joint_geometry


class HelicalJoint(Joint):
    """Rotation ``q`` about z with translation ``pitch * q`` along z: ``S = (e_z, pitch e_z)``.

    The child frame turns about the axis it moves along, so its body twist
    ``Q^-1 Qdot = (e_z, pitch e_z) qdot`` is constant in the joint frame:
    ``S`` is constant and ``Sdot = 0``.
    """

    ndof = 1

    def __init__(self, pitch: float) -> None:
        self.pitch = float(pitch)  # [m/rad]

    def evaluate(self, q: np.ndarray, qdot: np.ndarray) -> tuple[np.ndarray, ...]:
        e_z = np.array([0.0, 0.0, 1.0])
        Q = se3.make_transform(se3.exp_so3(e_z * q[0]), e_z * self.pitch * q[0])
        S = np.concatenate([e_z, self.pitch * e_z]).reshape(6, 1)
        return Q, S, np.zeros((6, 1))


def helical(axis: Any, params: Mapping[str, Any]) -> Joint:
    """Builder registered as joint kind ``plugin-helical``; ``params['pitch']`` [m/rad]."""
    return HelicalJoint(params.get("pitch", 0.1))


class PinSlotJoint(Joint):
    """A pin sliding in a slot: slide ``q1`` along x, then turn ``q2`` about z.

    ``Q = Tr(q1 e_x) Rot_z(q2)``; the slide, seen from the turned child frame, is
    ``Rot_z(q2)^T e_x = (cos q2, -sin q2, 0)``, so ``S = [(0, R^T e_x), (e_z, 0)]`` and
    ``Sdot`` has ``(0, (-sin q2, -cos q2, 0) q2dot)`` in its first column.  Its rows in
    maximal coordinates: no offset along y and z, axes z aligned (4 rows), so the kind
    runs in both formulations.
    """

    ndof = 2

    def evaluate(self, q: np.ndarray, qdot: np.ndarray) -> tuple[np.ndarray, ...]:
        e_x, e_z = np.array([1.0, 0.0, 0.0]), np.array([0.0, 0.0, 1.0])
        c, s = np.cos(q[1]), np.sin(q[1])
        Q = se3.make_transform(se3.exp_so3(e_z * q[1]), e_x * q[0])
        S = np.zeros((6, 2))
        S[3:, 0] = (c, -s, 0.0)
        S[:3, 1] = e_z
        Sdot = np.zeros((6, 2))
        Sdot[3:, 0] = np.array([-s, -c, 0.0]) * qdot[1]
        return Q, S, Sdot

    def constraint_geometry(self) -> Geometry:
        return joint_geometry(np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]), align(np.eye(3)[2]))


def pin_slot(axis: Any, params: Mapping[str, Any]) -> Joint:
    """Builder registered as joint kind ``plugin-pin-slot``."""
    return PinSlotJoint()
