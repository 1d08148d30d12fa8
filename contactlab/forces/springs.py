"""Springs between two points: zero rest length (Sueda's notes §1.9.3) and spring-damper (§1.9.6).

Each end is a point fixed on a body (local coordinates [m]) or, with the body
name ``None``, a fixed point in world coordinates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from contactlab.errors import ConfigurationError
from contactlab.forces.base import (
    Array,
    Force,
    IntArray,
    Triplets,
    as_point,
    body_indices,
    nonnegative,
    positive,
)
from contactlab.forces.pairs import PairKinematics, pair_kinematics
from contactlab.forces.path import PathForce, PathPoint, as_path
from contactlab.scene import Scene


@dataclass(frozen=True)
class _TwoPoints:
    """The two ends of a spring: points fixed on bodies, or (body ``None``) in the world."""

    body1: str | None
    point1: Array
    body2: str | None
    point2: Array

    def _check_ends(self) -> None:
        what = type(self).__name__
        if self.body1 is None and self.body2 is None:
            raise ConfigurationError(f"{what}: both ends are in the world; name at least one body")
        object.__setattr__(self, "point1", as_point(self.point1, f"{what} point1"))
        object.__setattr__(self, "point2", as_point(self.point2, f"{what} point2"))


class _BatchTension(PathForce):
    """A path force whose tension law is written for many springs at once."""

    def tension(self, length: float, rate: float) -> tuple[float, float, float]:
        F, F_l, F_v = self.batch_tension([self], np.array([length]), np.array([rate]))
        return float(F[0]), float(F_l[0]), float(F_v[0])


@dataclass(frozen=True)
class ZeroLengthSpring(_TwoPoints, Force):
    """Linear spring of zero rest length between two points (Sueda's notes §1.9.3).

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

    spring_constant: float

    def __post_init__(self) -> None:
        self._check_ends()
        nonnegative(self.spring_constant, "ZeroLengthSpring spring_constant [N/m]")

    def bodies(self, scene: Scene) -> IntArray:
        idx = body_indices(scene, [self.body1, self.body2])
        return np.unique(idx[idx >= 0])

    @staticmethod
    def _pairs(
        items: Sequence[Force], scene: Scene, E: Array, phi: Array
    ) -> tuple[PairKinematics, Array, Array]:
        springs = [f for f in items if isinstance(f, ZeroLengthSpring)]
        n = len(springs)
        b = body_indices(scene, [f.body1 for f in springs] + [f.body2 for f in springs])
        kin = pair_kinematics(
            b[:n],
            np.array([f.point1 for f in springs]).reshape(n, 3),
            b[n:],
            np.array([f.point2 for f in springs]).reshape(n, 3),
            E,
            phi,
        )
        k = np.array([f.spring_constant for f in springs])
        return kin, k, kin.x2 - kin.x1

    @classmethod
    def batch_energy(cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array) -> float:
        _, k, dx = cls._pairs(items, scene, E, phi)
        return 0.5 * float(np.sum(k * np.sum(dx * dx, axis=1)))  # Sueda's notes, eq. (1.36)

    @classmethod
    def batch_wrench(cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array) -> Array:
        kin, k, dx = cls._pairs(items, scene, E, phi)
        return kin.scatter(k[:, None] * kin.generalized(dx, -dx), scene.n_bodies)  # eq. (1.35)

    @classmethod
    def batch_stiffness_triplets(
        cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array, symmetric: bool
    ) -> list[Triplets | None]:
        # d/d delta of -k B^T dx, with B = d dx / d delta
        kin, k, dx = cls._pairs(items, scene, E, phi)
        B = kin.B
        K = k[:, None, None] * (kin.rotation_term(dx, -dx) - np.swapaxes(B, 1, 2) @ B)
        if symmetric:
            K = 0.5 * (K + np.swapaxes(K, 1, 2))
        return [kin.triplets(K)]

    @classmethod
    def batch_damping_triplets(
        cls, items: Sequence[Force], scene: Scene, E: Array, phi: Array
    ) -> list[Triplets | None]:
        return []


@dataclass(frozen=True)
class SpringDamper(_TwoPoints, _BatchTension):
    """Spring-damper with rest length ``L`` between two points (Sueda's notes §1.9.6).

    .. math::

        F = k\\,\\frac{l - L}{L} + d\\,\\frac{\\dot l}{L},\\qquad
        V = \\frac{k}{2L}(l - L)^2,

    a tension along the segment (eq. 1.65: the stiffness acts on the strain
    ``(l - L)/L``).  The seed prints ``- d ldot / L``; with the wrench of
    eq. 1.66 (positive F pulls the ends together) that sign would make the
    damper add energy, so the damping term enters with ``+`` (a lengthening
    spring is resisted), as in ArtiSynth notes §0.12.1.

    Parameters
    ----------
    body1, body2 : body names, ``None`` for a world point.
    point1, point2 : (3,) the points in body (or world) coordinates [m].
    spring_constant : k [N] per unit strain (axial stiffness ``k/L`` [N/m]).
    damping_coefficient : d [N s] per unit strain rate (axial damping ``d/L`` [N s/m]).
    rest_length : L [m], positive.
    """

    spring_constant: float
    damping_coefficient: float
    rest_length: float

    def __post_init__(self) -> None:
        self._check_ends()
        nonnegative(self.spring_constant, "SpringDamper spring_constant [N]")
        nonnegative(self.damping_coefficient, "SpringDamper damping_coefficient [N s]")
        positive(self.rest_length, "SpringDamper rest_length [m]")

    def path(self) -> tuple[PathPoint, ...]:
        return ((self.body1, self.point1), (self.body2, self.point2))

    @classmethod
    def batch_tension(
        cls, items: Sequence[PathForce], length: Array, rate: Array
    ) -> tuple[Array, Array, Array]:
        """Eq. (1.65) (damping sign corrected, see the class docstring) for many springs."""
        params = [
            (f.spring_constant, f.damping_coefficient, f.rest_length)
            for f in items
            if isinstance(f, SpringDamper)
        ]
        k, d, L = np.array(params).reshape(-1, 3).T
        return k * (length - L) / L + d * rate / L, k / L, d / L

    def potential(self, length: float) -> float:
        return 0.5 * self.spring_constant * (length - self.rest_length) ** 2 / self.rest_length


#: Tension laws of :class:`AxialSpring` (ArtiSynth notes §0.12.1 and §0.13).
AXIAL_LAWS = ("linear", "quadratic-strain")


@dataclass(frozen=True)
class AxialSpring(_BatchTension):
    """Axial spring-damper along a path of two or more points (ArtiSynth notes §0.12–0.14).

    The tension along the path of total length ``l`` is

    .. math::

        \\text{linear:}\\quad F = k (l - r) + d \\dot l,\\qquad
        V = \\tfrac12 k (l - r)^2 ;

        \\text{quadratic-strain:}\\quad F = \\sigma l + d \\dot l,\\quad
        \\sigma = k \\varepsilon,\\quad \\varepsilon = \\frac{l^2 - r^2}{2 r^2},\\qquad
        V = \\frac{k}{8 r^2} (l^2 - r^2)^2 ,

    the first with the stiffness per unit length of §0.12.1, the second the
    finite-element "stress" form of §0.13 (material plus geometric stiffness),
    which hardens under extension.  A path of more than two points is the
    multi-point spring of §0.14: the tension acts along every segment, the
    points between the ends acting as frictionless pulleys.  ``K`` and ``D``
    come from :class:`~contactlab.forces.path.PathForce` (exact, verified by
    finite differences).

    Parameters
    ----------
    points : ``((body name or None, (3,) point [m]), ...)``, at least two.
    spring_constant : k [N/m] (linear) or [N] per unit strain (quadratic-strain).
    damping_coefficient : d [N s/m].
    rest_length : r [m], positive for the quadratic-strain law.
    law : ``"linear"`` or ``"quadratic-strain"``.
    """

    points: tuple[PathPoint, ...]
    spring_constant: float
    damping_coefficient: float = 0.0
    rest_length: float = 0.0
    law: str = "linear"

    def __post_init__(self) -> None:
        object.__setattr__(self, "points", as_path(self.points, "AxialSpring"))
        nonnegative(self.spring_constant, "AxialSpring spring_constant")
        nonnegative(self.damping_coefficient, "AxialSpring damping_coefficient [N s/m]")
        nonnegative(self.rest_length, "AxialSpring rest_length [m]")
        if self.law not in AXIAL_LAWS:
            raise ConfigurationError(
                f"AxialSpring law must be one of {AXIAL_LAWS}, got {self.law!r}"
            )
        if self.law == "quadratic-strain":
            positive(self.rest_length, "AxialSpring rest_length [m] of the quadratic-strain law")

    def path(self) -> tuple[PathPoint, ...]:
        return self.points

    @classmethod
    def batch_tension(
        cls, items: Sequence[PathForce], length: Array, rate: Array
    ) -> tuple[Array, Array, Array]:
        springs = [f for f in items if isinstance(f, AxialSpring)]
        k = np.array([f.spring_constant for f in springs])
        d = np.array([f.damping_coefficient for f in springs])
        r = np.array([f.rest_length for f in springs])
        quad = np.array([f.law == "quadratic-strain" for f in springs])
        r2 = np.where(quad, r * r, 1.0)
        F_lin, Fl_lin = k * (length - r), k
        F_quad = k * length * (length**2 - r2) / (2 * r2)
        Fl_quad = k * (3 * length**2 - r2) / (2 * r2)
        F = np.where(quad, F_quad, F_lin) + d * rate
        return F, np.where(quad, Fl_quad, Fl_lin), d

    def potential(self, length: float) -> float:
        k, r = self.spring_constant, self.rest_length
        if self.law == "quadratic-strain":
            return k * (length**2 - r**2) ** 2 / (8 * r**2)
        return 0.5 * k * (length - r) ** 2
