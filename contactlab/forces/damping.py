"""Viscous damping of body twists (Sueda's notes §1.9.1)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.forces.base import Array, Force, IntArray, Triplets, body_indices, nonnegative
from contactlab.scene import Scene


@dataclass(frozen=True)
class BodyDamping(Force):
    """Wrench ``-(c_w omega, c_v nu)`` on each body's own twist.

    A drag relative to the world frame, expressed in body coordinates.  The
    damping matrix is the constant diagonal ``D = diag(c_w I, c_v I)`` per
    body (Sueda's notes §1.9.1, ``D = d I`` when ``c_w = c_v = d``); ``K = 0`` and
    no energy is stored.

    Parameters
    ----------
    angular : c_w [N m s/rad].
    linear : c_v [N s/m].
    bodies_named : the damped bodies; ``None`` (default) damps every body.
    """

    angular: float
    linear: float
    bodies_named: Sequence[str] | None = None

    def __post_init__(self) -> None:
        nonnegative(self.angular, "BodyDamping angular coefficient [N m s/rad]")
        nonnegative(self.linear, "BodyDamping linear coefficient [N s/m]")
        if self.bodies_named is not None:
            names = tuple(self.bodies_named)
            if not names or not all(isinstance(n, str) for n in names):
                raise ConfigurationError(
                    "BodyDamping bodies_named must be a non-empty sequence of body names "
                    "or None for every body"
                )
            if len(set(names)) != len(names):
                raise ConfigurationError(f"BodyDamping bodies_named repeats a body: {names}")
            object.__setattr__(self, "bodies_named", names)

    def _coefficients(self) -> Array:
        return np.repeat([self.angular, self.linear], 3)

    def bodies(self, scene: Scene) -> IntArray:
        if self.bodies_named is None:
            return np.arange(scene.n_bodies)
        return body_indices(scene, list(self.bodies_named))

    def local_energy(self, scene: Scene, E: Array, phi: Array) -> float:
        return 0.0

    def local_wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        return -self._coefficients() * phi[self.bodies(scene)]

    def damping_triplets(self, scene: Scene, E: Array, phi: Array) -> Triplets | None:
        idx = (6 * self.bodies(scene)[:, None] + np.arange(6)).reshape(-1)
        return idx, idx, np.tile(self._coefficients(), len(idx) // 6)
