"""A constant world force applied at a point fixed on a body (Sueda's notes §1.9.2)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactlab import se3
from contactlab.errors import ConfigurationError
from contactlab.forces.base import Array, Force, IntArray, as_point, body_indices
from contactlab.scene import Scene


@dataclass(frozen=True)
class PointForce(Force):
    """Constant world force ``F`` [N] at the body point ``point`` [m].

    .. math::

        V = -F \\cdot x,\\qquad
        \\text{wrench} = \\Gamma(r)^T R^T F,\\qquad
        K = \\Gamma(r)^T \\,[[R^T F],\\ 0]

    (Sueda's notes, eqs. 1.31–1.33 with ``k a = F``; ``x = R r + p`` is the world
    point, ``Gamma(r) = ([r]^T, I)``).  ``K`` is exact and not symmetric: the
    force does not depend on translations, so its translational columns are
    zero.  ``D = 0``.

    Parameters
    ----------
    body : name of the body.
    point : (3,) application point in body coordinates [m].
    force : (3,) force in world coordinates [N].
    """

    body: str
    point: Array
    force: Array

    def __post_init__(self) -> None:
        if not isinstance(self.body, str):
            raise ConfigurationError(
                f"PointForce body must be a body name (a force on the world does nothing), "
                f"got {self.body!r}"
            )
        object.__setattr__(self, "point", as_point(self.point, "PointForce point"))
        F = np.array(self.force, dtype=float).reshape(-1)
        if F.shape != (3,) or not np.all(np.isfinite(F)):
            raise ConfigurationError(f"PointForce force must be a finite 3-vector [N], got {F}")
        F.setflags(write=False)
        object.__setattr__(self, "force", F)

    def bodies(self, scene: Scene) -> IntArray:
        return body_indices(scene, [self.body])

    def local_energy(self, scene: Scene, E: Array, phi: Array) -> float:
        i = self.bodies(scene)[0]
        return -float(self.force @ se3.transform_points(E[i], self.point))

    def local_wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        i = self.bodies(scene)[0]
        RtF = E[i, :3, :3].T @ self.force
        return (se3.gamma(self.point).T @ RtF)[None, :]

    def local_stiffness(self, scene: Scene, E: Array, phi: Array) -> Array:
        i = self.bodies(scene)[0]
        RtF = E[i, :3, :3].T @ self.force
        K = np.zeros((6, 6))
        K[:, :3] = se3.gamma(self.point).T @ se3.bracket3(RtF)  # Sueda's notes, eq. (1.33)
        return K
