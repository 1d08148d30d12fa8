"""Parametric surfaces ``x(u, v)`` and curves ``x(s)`` with their frames, as sympy expressions.

A surface's frame at ``(u, v)`` has its origin on the surface, ``t1`` along
``dx/du``, the unit normal ``n`` (outward for closed surfaces) and
``t2 = n x t1``; a curve's frame has ``t`` along ``dx/ds``, ``n`` the unit
vector ``up x t`` (horizontal for ``up = z``) and ``b = t x n``.  The
frames are rigid transforms, so joints built from them
(:mod:`contactlab.joints.surface`) are
:class:`~contactlab.joints.transform.TransformJoint` objects.

Shape parameters (radii, semi-axes) stay symbols named ``<prefix><name>``
with their values returned beside the expression, so joints between
surfaces of different sizes share their compiled code; control points of
Bézier and B-spline geometry are numbers in the expression.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from functools import cached_property
from math import comb
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from contactlab._lazy import lazy_import
from contactlab.errors import ConfigurationError
from contactlab.geometry.primitives import frame

if TYPE_CHECKING:
    import sympy as sp
else:
    sp = lazy_import("sympy")  # loaded when a symbolic expression is first built

Symbols = Mapping[str, "sp.Symbol"]


def _unit(v: sp.Matrix) -> sp.Matrix:
    return v / sp.sqrt(v.dot(v))


def _cross(a: sp.Matrix, b: sp.Matrix) -> sp.Matrix:
    return sp.Matrix(a).cross(sp.Matrix(b))


class _Shape:
    """Shared bookkeeping: named shape parameters that stay symbols."""

    #: names of the shape parameters, in the order of :attr:`values`
    parameter_names: tuple[str, ...] = ()
    values: tuple[float, ...] = ()

    def symbols(self, prefix: str) -> dict[str, sp.Symbol]:
        return {k: sp.Symbol(f"{prefix}{k}", positive=True) for k in self.parameter_names}

    def parameter_values(self, prefix: str) -> dict[sp.Symbol, float]:
        return dict(zip(self.symbols(prefix).values(), self.values))


class Surface(_Shape, ABC):
    """A parametric surface; subclasses give :meth:`position` (and may give :meth:`axes`)."""

    @abstractmethod
    def position(self, u: Any, v: Any, s: Symbols) -> sp.Matrix:
        """(3, 1) point ``x(u, v)`` [m]."""

    def axes(self, u: Any, v: Any, s: Symbols) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
        """``(t1, t2, n)``: unit tangent along u, ``n x t1``, unit normal (Gram–Schmidt)."""
        x = self.position(u, v, s)
        xu, xv = x.diff(u), x.diff(v)
        t1 = _unit(xu)
        n = _unit(_cross(xu, xv))
        return t1, _cross(n, t1), n

    def frame(self, u: Any, v: Any, prefix: str = "") -> tuple[sp.Matrix, dict[sp.Symbol, float]]:
        """The 4 x 4 frame at ``(u, v)`` and the values of its shape symbols."""
        s = self.symbols(prefix)
        return frame(*self.axes(u, v, s), self.position(u, v, s)), self.parameter_values(prefix)

    @cached_property
    def _numeric(self) -> Any:
        u, v = sp.symbols("u v", real=True)
        F, values = self.frame(u, v, "s_")
        return sp.lambdify((u, v, *values), F, "numpy"), tuple(values.values())

    def evaluate(self, u: float, v: float) -> np.ndarray:
        """Numeric (4, 4) frame at ``(u, v)`` (for tests, rendering and placement)."""
        f, values = self._numeric
        return np.asarray(f(u, v, *values), dtype=float)


class Curve(_Shape, ABC):
    """A parametric curve; subclasses give :meth:`position`."""

    up: tuple[float, float, float] = (0.0, 0.0, 1.0)

    @abstractmethod
    def position(self, s: Any, p: Symbols) -> sp.Matrix:
        """(3, 1) point ``x(s)`` [m]."""

    def frame(self, s: Any, prefix: str = "") -> tuple[sp.Matrix, dict[sp.Symbol, float]]:
        """The 4 x 4 frame ``(t, up x t, t x (up x t))`` at ``s`` and its shape symbols."""
        p = self.symbols(prefix)
        x = self.position(s, p)
        t = _unit(x.diff(s))
        n = _unit(_cross(sp.Matrix(self.up), t))
        return frame(t, n, _cross(t, n), x), self.parameter_values(prefix)

    @cached_property
    def _numeric(self) -> Any:
        s = sp.Symbol("s", real=True)
        F, values = self.frame(s, "s_")
        return sp.lambdify((s, *values), F, "numpy"), tuple(values.values())

    def evaluate(self, s: float) -> np.ndarray:
        """Numeric (4, 4) frame at ``s``."""
        f, values = self._numeric
        return np.asarray(f(s, *values), dtype=float)


# ---------------------------------------------------------------------------
# surfaces
# ---------------------------------------------------------------------------
def _positive(value: float, what: str) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0:
        raise ConfigurationError(f"{what} must be a positive length [m], got {value}")
    return value


def _sphere_axes(u: Any, v: Any) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
    """Longitude/latitude axes shared by the sphere and the torus (no square roots)."""
    cu, su, cv, sv = sp.cos(u), sp.sin(u), sp.cos(v), sp.sin(v)
    t1 = sp.Matrix([-su, cu, 0])
    t2 = sp.Matrix([-sv * cu, -sv * su, cv])
    return t1, t2, sp.Matrix([cv * cu, cv * su, sv])


class Sphere(Surface):
    """``x = r (cos v cos u, cos v sin u, sin v)``: longitude u, latitude v [rad].

    The parameterization is singular at the poles ``v = +-pi/2``.
    """

    parameter_names = ("r",)

    def __init__(self, radius: float) -> None:
        self.values = (_positive(radius, "sphere radius"),)

    def position(self, u: Any, v: Any, s: Symbols) -> sp.Matrix:
        return s["r"] * _sphere_axes(u, v)[2]

    def axes(self, u: Any, v: Any, s: Symbols) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
        return _sphere_axes(u, v)


class Torus(Surface):
    """``x = ((R + r cos v) cos u, (R + r cos v) sin u, r sin v)`` about z, ``R > r``.

    u goes around the z axis, v around the tube [rad]; the normal points out of the tube.
    """

    parameter_names = ("R", "r")

    def __init__(self, major_radius: float, minor_radius: float) -> None:
        R = _positive(major_radius, "torus major radius")
        r = _positive(minor_radius, "torus minor radius")
        if r >= R:
            raise ConfigurationError(
                f"torus minor radius {r} must be smaller than its major radius {R}"
            )
        self.values = (R, r)

    def position(self, u: Any, v: Any, s: Symbols) -> sp.Matrix:
        cu, su, cv, sv = sp.cos(u), sp.sin(u), sp.cos(v), sp.sin(v)
        ring = s["R"] + s["r"] * cv
        return sp.Matrix([ring * cu, ring * su, s["r"] * sv])

    def axes(self, u: Any, v: Any, s: Symbols) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
        return _sphere_axes(u, v)


class Ellipsoid(Surface):
    """``x = (a cos v cos u, b cos v sin u, c sin v)``; singular at ``v = +-pi/2``."""

    parameter_names = ("a", "b", "c")

    def __init__(self, a: float, b: float, c: float) -> None:
        self.values = tuple(_positive(x, "ellipsoid semi-axis") for x in (a, b, c))

    def position(self, u: Any, v: Any, s: Symbols) -> sp.Matrix:
        a, b, c = s["a"], s["b"], s["c"]
        return sp.Matrix([a * sp.cos(v) * sp.cos(u), b * sp.cos(v) * sp.sin(u), c * sp.sin(v)])

    def axes(self, u: Any, v: Any, s: Symbols) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
        a, b, c = s["a"], s["b"], s["c"]
        cu, su, cv, sv = sp.cos(u), sp.sin(u), sp.cos(v), sp.sin(v)
        t1 = _unit(sp.Matrix([-a * su, b * cu, 0]))  # dx/du divided by cos v > 0
        n = _unit(sp.Matrix([cv * cu / a, cv * su / b, sv / c]))  # gradient of the implicit form
        return t1, _cross(n, t1), n


class Plane(Surface):
    """The plane ``x = (u, v, 0)`` with normal z."""

    def position(self, u: Any, v: Any, s: Symbols) -> sp.Matrix:
        return sp.Matrix([u, v, 0])

    def axes(self, u: Any, v: Any, s: Symbols) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
        return sp.Matrix([1, 0, 0]), sp.Matrix([0, 1, 0]), sp.Matrix([0, 0, 1])


def _bernstein(n: int, i: int, t: Any) -> Any:
    return comb(n, i) * t**i * (1 - t) ** (n - i)


def _points(control: ArrayLike, shape: tuple[int, ...], what: str) -> np.ndarray:
    P = np.asarray(control, dtype=float)
    if P.ndim != len(shape) + 1 or P.shape[-1] != 3 or any(m < k for m, k in zip(P.shape, shape)):
        raise ConfigurationError(
            f"{what} needs control points of shape {'(' + ', '.join(f'>={k}' for k in shape)}, 3), "
            f"got {P.shape}"
        )
    if not np.all(np.isfinite(P)):
        raise ConfigurationError(f"{what} control points hold non-finite numbers")
    return P


def _float_matrix(P: np.ndarray) -> sp.Matrix:
    return sp.Matrix([sp.Float(float(x)) for x in P])


class BezierSurface(Surface):
    """Tensor-product Bézier surface over ``(u, v) in [0, 1]^2``; control (m, n, 3) [m]."""

    def __init__(self, control: ArrayLike) -> None:
        self.control = _points(control, (2, 2), "Bézier surface")

    def position(self, u: Any, v: Any, s: Symbols) -> sp.Matrix:
        m, n = self.control.shape[0] - 1, self.control.shape[1] - 1
        x = sp.zeros(3, 1)
        for i in range(m + 1):
            for j in range(n + 1):
                x += _bernstein(m, i, u) * _bernstein(n, j, v) * _float_matrix(self.control[i, j])
        return sp.expand(x)


class BezierCurve(Curve):
    """Bézier curve over ``s in [0, 1]``; control (m, 3) [m]; ``up`` fixes the frame's roll."""

    def __init__(self, control: ArrayLike, up: Sequence[float] = (0.0, 0.0, 1.0)) -> None:
        self.control = _points(control, (2,), "Bézier curve")
        self.up = tuple(float(x) for x in up)  # type: ignore[assignment]

    def position(self, s: Any, p: Symbols) -> sp.Matrix:
        m = len(self.control) - 1
        x = sp.zeros(3, 1)
        for i in range(m + 1):
            x += _bernstein(m, i, s) * _float_matrix(self.control[i])
        return sp.expand(x)


# Uniform cubic B-spline basis over (1, t, t^2, t^3) (Sueda's notes, eq. 2.57), in sixths.
_BSPLINE_SIXTHS = [[1, -3, 3, -1], [4, 0, -6, 3], [1, 3, 3, -3], [0, 0, 0, 1]]


def _bspline_weights(t: Any) -> list[Any]:
    powers = [1, t, t**2, t**3]
    return [sum(sp.Rational(c, 6) * p for c, p in zip(row, powers)) for row in _BSPLINE_SIXTHS]


class BSplineCurve(Curve):
    """Open uniform cubic B-spline, ``s in [0, m - 3]`` for control (m, 3) [m].

    Segment ``k`` covers ``[k, k + 1)``; the expression is piecewise in ``s``
    and the first and last segments extend past the ends.
    """

    def __init__(self, control: ArrayLike, up: Sequence[float] = (0.0, 0.0, 1.0)) -> None:
        self.control = _points(control, (4,), "B-spline curve")
        self.up = tuple(float(x) for x in up)  # type: ignore[assignment]

    def position(self, s: Any, p: Symbols) -> sp.Matrix:
        nseg = len(self.control) - 3
        pieces = []
        for k in range(nseg):
            w = _bspline_weights(s - k)
            x = sum((w[i] * _float_matrix(self.control[k + i]) for i in range(4)), sp.zeros(3, 1))
            cond = s < k + 1 if k < nseg - 1 else True
            pieces.append((sp.expand(x), cond))
        return sp.Matrix([sp.Piecewise(*[(x[r], c) for x, c in pieces]) for r in range(3)])


class BSplineSurface(Surface):
    """Open uniform bicubic B-spline surface over ``[0, m - 3] x [0, n - 3]``; control (m, n, 3)."""

    def __init__(self, control: ArrayLike) -> None:
        self.control = _points(control, (4, 4), "B-spline surface")

    def position(self, u: Any, v: Any, s: Symbols) -> sp.Matrix:
        mu, mv = self.control.shape[0] - 3, self.control.shape[1] - 3
        rows: list[list[tuple[Any, Any]]] = [[], [], []]
        for a in range(mu):
            wu = _bspline_weights(u - a)
            cu = u < a + 1 if a < mu - 1 else True
            for b in range(mv):
                wv = _bspline_weights(v - b)
                cv = v < b + 1 if b < mv - 1 else True
                x = sp.zeros(3, 1)
                for i in range(4):
                    for j in range(4):
                        x += wu[i] * wv[j] * _float_matrix(self.control[a + i, b + j])
                x = sp.expand(x)
                for r in range(3):
                    rows[r].append((x[r], sp.And(cu, cv)))
        return sp.Matrix([sp.Piecewise(*row) for row in rows])


SURFACES: dict[str, type[Surface]] = {
    "sphere": Sphere,
    "torus": Torus,
    "ellipsoid": Ellipsoid,
    "plane": Plane,
    "bezier": BezierSurface,
    "bspline": BSplineSurface,
}
CURVES: dict[str, type[Curve]] = {"bezier": BezierCurve, "bspline": BSplineCurve}


def _build(table: Mapping[str, type], spec: Any, what: str, base: type) -> Any:
    if isinstance(spec, base):
        return spec
    if isinstance(spec, Mapping) and "kind" in spec:
        kind = spec["kind"]
        if kind not in table:
            raise ConfigurationError(f"unknown {what} kind {kind!r}; known: {sorted(table)}")
        args = {k: v for k, v in spec.items() if k != "kind"}
        try:
            return table[kind](**args)
        except TypeError as err:
            raise ConfigurationError(f"{what} {kind!r}: {err}") from err
    raise ConfigurationError(
        f"a {what} must be a {base.__name__} or a mapping with 'kind' (one of {sorted(table)}), "
        f"got {spec!r}"
    )


def surface_from(spec: Any) -> Surface:
    """A :class:`Surface`, or one built from ``{"kind": "torus", "major_radius": ..., ...}``."""
    return _build(SURFACES, spec, "surface", Surface)


def curve_from(spec: Any) -> Curve:
    """A :class:`Curve`, or one built from ``{"kind": "bezier", "control": ...}``."""
    return _build(CURVES, spec, "curve", Curve)
