"""A joint kind of the reduced formulation: a helical (screw) joint about the joint frame's z."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from contactlab import se3
from contactlab.reduced.joints import Joint


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
