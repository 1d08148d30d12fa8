"""Springs between two points: zero rest length (seed 000 §1.9.3) and spring-damper (§1.9.6).

Each end is a point fixed on a body (local coordinates [m]) or, with the body
name ``None``, a fixed point in world coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.forces.base import (
    Array,
    Force,
    IntArray,
    as_point,
    body_indices,
    nonnegative,
    positive,
)
from contactlab.forces.path import PathForce, PathPoint, path_kinematics
from contactlab.scene import Scene


def _ends(body1: str | None, body2: str | None, what: str) -> None:
    if body1 is None and body2 is None:
        raise ConfigurationError(f"{what}: both ends are in the world; name at least one body")


@dataclass(frozen=True)
class ZeroLengthSpring(Force):
    """Linear spring of zero rest length between two points (seed 000 §1.9.3).

    .. math::

        V = \\tfrac12 k |\\Delta x|^2,\\qquad \\Delta x = x_2 - x_1,

    (eq. 1.36); the wrenches ``k (Gamma_1^T R_1^T dx, -Gamma_2^T R_2^T dx)``
    (eq. 1.35) pull the points together and are defined even when they meet.

    Parameters
    ----------
    body1, body2 : body names, ``None`` for a world point.
    point1, point2 : (3,) the points in body (or world) coordinates [m].
    spring_constant : k [N/m].
    """

    body1: str | None
    point1: Array
    body2: str | None
    point2: Array
    spring_constant: float

    def __post_init__(self) -> None:
        _ends(self.body1, self.body2, "ZeroLengthSpring")
        object.__setattr__(self, "point1", as_point(self.point1, "ZeroLengthSpring point1"))
        object.__setattr__(self, "point2", as_point(self.point2, "ZeroLengthSpring point2"))
        nonnegative(self.spring_constant, "ZeroLengthSpring spring_constant [N/m]")

    def _state(self, scene: Scene, E: Array, phi: Array):  # type: ignore[no-untyped-def]
        idx = body_indices(scene, [self.body1, self.body2])
        _, kin = path_kinematics(idx, np.stack([self.point1, self.point2]), E, phi)
        dx = kin.x[1] - kin.x[0]
        return kin, dx

    def bodies(self, scene: Scene) -> IntArray:
        idx = body_indices(scene, [self.body1, self.body2])
        return np.unique(idx[idx >= 0])

    def energy(self, scene: Scene, E: Array, phi: Array) -> float:
        _, dx = self._state(scene, E, phi)
        return 0.5 * self.spring_constant * float(dx @ dx)

    def local_wrench(self, scene: Scene, E: Array, phi: Array) -> Array:
        kin, dx = self._state(scene, E, phi)
        return (self.spring_constant * kin.generalized(np.stack([dx, -dx]))).reshape(-1, 6)

    def local_stiffness(self, scene: Scene, E: Array, phi: Array) -> Array:
        # d/d delta of -k B^T dx with B = A_2 - A_1 = d dx / d delta
        kin, dx = self._state(scene, E, phi)
        B = kin.J[1] - kin.J[0]
        return self.spring_constant * (kin.rotation_term(np.stack([dx, -dx])) - B.T @ B)


@dataclass(frozen=True)
class SpringDamper(PathForce):
    """Spring-damper with rest length ``L`` between two points (seed 000 §1.9.6).

    .. math::

        F = k\\,\\frac{l - L}{L} + d\\,\\frac{\\dot l}{L},\\qquad
        V = \\frac{k}{2L}(l - L)^2,

    a tension along the segment (eq. 1.65: the stiffness acts on the strain
    ``(l - L)/L``).  The seed prints ``- d ldot / L``; with the wrench of
    eq. 1.66 (positive F pulls the ends together) that sign would make the
    damper add energy, so the damping term enters with ``+`` (a lengthening
    spring is resisted), as in seed 001 §0.12.1.

    Parameters
    ----------
    body1, body2 : body names, ``None`` for a world point.
    point1, point2 : (3,) the points in body (or world) coordinates [m].
    spring_constant : k [N] per unit strain (axial stiffness ``k/L`` [N/m]).
    damping_coefficient : d [N s] per unit strain rate (axial damping ``d/L`` [N s/m]).
    rest_length : L [m], positive.
    """

    body1: str | None
    point1: Array
    body2: str | None
    point2: Array
    spring_constant: float
    damping_coefficient: float
    rest_length: float

    def __post_init__(self) -> None:
        _ends(self.body1, self.body2, "SpringDamper")
        object.__setattr__(self, "point1", as_point(self.point1, "SpringDamper point1"))
        object.__setattr__(self, "point2", as_point(self.point2, "SpringDamper point2"))
        nonnegative(self.spring_constant, "SpringDamper spring_constant [N]")
        nonnegative(self.damping_coefficient, "SpringDamper damping_coefficient [N s]")
        positive(self.rest_length, "SpringDamper rest_length [m]")

    def path(self) -> tuple[PathPoint, ...]:
        return ((self.body1, self.point1), (self.body2, self.point2))

    def tension(self, length: float, rate: float) -> tuple[float, float, float]:
        L = self.rest_length
        F = self.spring_constant * (length - L) / L + self.damping_coefficient * rate / L
        return F, self.spring_constant / L, self.damping_coefficient / L

    def potential(self, length: float) -> float:
        return 0.5 * self.spring_constant * (length - self.rest_length) ** 2 / self.rest_length
