"""A constraint type of the maximal formulation: a body's centre of mass held at a height."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from contactlab.joints.body_constraints import Constraint, body_index_map
from contactlab.scene import JointSpec, Scene


class FixedHeight(Constraint):
    """One row ``g(E) = p_z - height`` [m]; its velocity row is ``e_z^T R nu`` (angular first)."""

    name = "plugin-fixed-height"

    def __init__(self, body: int, height: float) -> None:
        self.body, self.height = body, float(height)

    n_rows = 1

    @classmethod
    def from_joints(cls, scene: Scene, specs: Sequence[JointSpec]) -> list[Constraint]:
        index = body_index_map(scene)
        return [cls(index[s.child], s.params["height"]) for s in specs]

    def error(self, E: np.ndarray) -> np.ndarray:
        return np.array([E[self.body, 2, 3] - self.height])

    def jacobian(self, E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        block = np.zeros((1, 1, 6))
        block[0, 0, 3:] = E[self.body, 2, :3]  # d p_z / dt = e_z . (R nu)
        return block, np.array([[self.body]])
