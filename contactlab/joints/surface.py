"""Higher-pair joints of Si & Guenter: surface–surface, surface–point, curve–point, curve–curve.

Each is a :class:`~contactlab.joints.transform.TransformJoint` whose ``Q`` is
composed from the frames of :mod:`contactlab.geometry.surfaces`; the parent
geometry is given in the parent's joint frame, the child geometry in the
child's joint frame.  The generated code is named by the joint's definition
(kind, shapes, the numbers written into their expressions and the sources of
the modules that write ``Q`` out), so a cached joint is built without sympy.

- **surface–surface** (rolling and sliding contact at one point, 4
  coordinates ``(u1, v1, u2, v2)``): the child surface's frame at
  ``(u2, v2)`` coincides with the parent surface's frame at ``(u1, v1)``
  turned half a turn about its first tangent, so the points coincide, the
  tangent planes coincide and the outward normals are opposite,

  .. math:: Q = F_A(u_1, v_1)\\, R_z(\\alpha)\\, R_x(\\pi)\\, F_B(u_2, v_2)^{-1}

  with a fixed angle ``alpha`` (``twist``) between the first tangents.

  ``spin=True`` adds a fifth coordinate ``psi``, a turn about the common
  normal: ``Q = F_A R_z(psi) R_x(pi) F_B^{-1}``.
- **surface–point**: the child frame slides on the parent surface, aligned
  with its tangent plane, ``Q = F_A(u, v) R_z(psi) T(0, 0, height)``
  (``spin=False`` drops ``psi``).
- **curve–point**: the child frame slides along the parent curve, its x
  axis on the tangent, ``Q = F_C(s) R_x(psi)`` (``spin=False`` drops ``psi``).
- **curve–curve**: two curves touching with common tangent,
  ``Q = F_A(s1) R_x(psi) R_z(pi) F_B(s2)^{-1}`` (the child's tangent
  reversed, its normal flipped; ``spin=False`` drops ``psi``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from contactlab._lazy import lazy_import
from contactlab.geometry.primitives import inverse, rot_x, rot_z, trans
from contactlab.geometry.surfaces import Curve, Surface, curve_from, surface_from
from contactlab.joints.kernel_cache import module_digest
from contactlab.joints.kinds import register_joint
from contactlab.joints.maps import Joint
from contactlab.joints.transform import TransformJoint

if TYPE_CHECKING:
    import sympy as sp
else:
    sp = lazy_import("sympy")  # loaded when a symbolic expression is first built


def _values(shape: Surface | Curve, prefix: str) -> dict[str, float]:
    """Shape parameter values by the names of their symbols (no sympy)."""
    return {f"{prefix}{k}": v for k, v in zip(shape.parameter_names, shape.values)}


def _shape_source(shape: Surface | Curve) -> str | None:
    """What fixes a shape's symbolic frame besides its parameter values: its class, the
    source of the module defining it and the numbers written into the expression
    (control points, the curves' up vector); ``None`` when that source cannot be read
    (a class typed into an interactive session: its code is then keyed by expression)."""
    cls = type(shape)
    digest = module_digest(cls.__module__)
    if not digest:
        return None
    data = {
        k: (v.tolist() if isinstance(v, np.ndarray) else v)
        for k, v in sorted(vars(shape).items())
        if not k.startswith("_") and k != "values"
    }
    return f"{cls.__module__}.{cls.__qualname__}{shape.parameter_names}{data!r}{digest}"


def _source(kind: str, *parts: Any) -> str | None:
    """Definition text of a joint built here (see :class:`TransformJoint`'s ``source``)."""
    if any(p is None for p in parts):
        return None
    modules = (__name__, "contactlab.geometry.surfaces", "contactlab.geometry.primitives")
    return "|".join([kind, *map(str, parts), *(module_digest(m) for m in modules)])


def surface_surface_joint(
    parent: Any, child: Any, spin: bool = False, twist: float = 0.0
) -> TransformJoint:
    """Contact of ``parent`` and ``child`` surfaces at one point; q = (u1, v1, u2, v2[, psi]).

    ``twist`` [rad] is the fixed angle about the common normal between the
    two surfaces' first tangents (added to ``psi`` with ``spin=True``).
    """
    A, B = surface_from(parent), surface_from(child)

    def Q(c: tuple[sp.Symbol, ...]) -> list[sp.Matrix]:
        tw = sp.Symbol("twist", real=True)
        turn = rot_z(c[4] + tw if spin else tw) * rot_x(sp.pi)
        return [A.frame(c[0], c[1], "a_")[0], turn, inverse(B.frame(c[2], c[3], "b_")[0])]

    coords = ["u1", "v1", "u2", "v2"] + (["psi"] if spin else [])
    values = {**_values(A, "a_"), **_values(B, "b_"), "twist": float(twist)}
    source = _source("surface_surface", spin, _shape_source(A), _shape_source(B))
    return TransformJoint(Q, coords, values, source=source)


def surface_point_joint(surface: Any, spin: bool = True, height: float = 0.0) -> TransformJoint:
    """A frame sliding on ``surface`` in its tangent plane, ``height`` [m] above it."""
    A = surface_from(surface)

    def Q(c: tuple[sp.Symbol, ...]) -> list[sp.Matrix]:
        h = sp.Symbol("h", real=True)
        return [
            A.frame(c[0], c[1], "a_")[0],
            rot_z(c[2]) * trans(0, 0, h) if spin else trans(0, 0, h),
        ]

    coords = ["u", "v"] + (["psi"] if spin else [])
    values = {**_values(A, "a_"), "h": float(height)}
    return TransformJoint(
        Q, coords, values, source=_source("surface_point", spin, _shape_source(A))
    )


def curve_point_joint(curve: Any, spin: bool = True) -> TransformJoint:
    """A frame sliding along ``curve``, x on the tangent; q = (s[, psi])."""
    C = curve_from(curve)

    def Q(c: tuple[sp.Symbol, ...]) -> Any:
        F = C.frame(c[0], "c_")[0]
        return [F, rot_x(c[1])] if spin else F

    coords = ["s"] + (["psi"] if spin else [])
    source = _source("curve_point", spin, _shape_source(C))
    return TransformJoint(Q, coords, _values(C, "c_"), source=source)


def curve_curve_joint(parent: Any, child: Any, spin: bool = True) -> TransformJoint:
    """Two curves touching with a common tangent; q = (s1, s2[, psi])."""
    A, B = curve_from(parent), curve_from(child)

    def Q(c: tuple[sp.Symbol, ...]) -> list[sp.Matrix]:
        turn = (rot_x(c[2]) if spin else sp.eye(4)) * rot_z(sp.pi)
        return [A.frame(c[0], "a_")[0], turn, inverse(B.frame(c[1], "b_")[0])]

    coords = ["s1", "s2"] + (["psi"] if spin else [])
    values = {**_values(A, "a_"), **_values(B, "b_")}
    source = _source("curve_curve", spin, _shape_source(A), _shape_source(B))
    return TransformJoint(Q, coords, values, source=source)


def _need(p: Mapping[str, Any], keys: tuple[str, ...], kind: str) -> None:
    from contactlab.errors import ConfigurationError

    missing = [k for k in keys if k not in p]
    if missing:
        raise ConfigurationError(
            f"{kind} joint needs params {missing} (a Surface/Curve or a mapping with 'kind')"
        )


@register_joint("surface_surface")
def _surface_surface(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Two surfaces (``parent_surface``, ``child_surface``) touching at one point,
    q = (u1, v1, u2, v2[, psi]): ``spin`` (default off) adds the turn psi about the
    common normal, ``twist`` a fixed one [rad]."""
    _need(p, ("parent_surface", "child_surface"), "surface_surface")
    return surface_surface_joint(
        p["parent_surface"],
        p["child_surface"],
        bool(p.get("spin", False)),
        float(p.get("twist", 0.0)),
    )


@register_joint("surface_point")
def _surface_point(axis: Any, p: Mapping[str, Any]) -> Joint:
    """A frame sliding on the parent's ``surface`` in its tangent plane, ``height`` [m]
    above it, q = (u, v[, psi]): ``spin`` (default on) adds the turn psi about the normal."""
    _need(p, ("surface",), "surface_point")
    return surface_point_joint(p["surface"], bool(p.get("spin", True)), float(p.get("height", 0.0)))


@register_joint("curve_point")
def _curve_point(axis: Any, p: Mapping[str, Any]) -> Joint:
    """A frame sliding along the parent's ``curve``, x on the tangent, q = (s[, psi]):
    ``spin`` (default on) adds the turn psi about the tangent."""
    _need(p, ("curve",), "curve_point")
    return curve_point_joint(p["curve"], bool(p.get("spin", True)))


@register_joint("curve_curve")
def _curve_curve(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Two curves (``parent_curve``, ``child_curve``) touching with a common tangent,
    q = (s1, s2[, psi]): ``spin`` (default on) adds the turn psi about the tangent."""
    _need(p, ("parent_curve", "child_curve"), "curve_curve")
    return curve_curve_joint(p["parent_curve"], p["child_curve"], bool(p.get("spin", True)))


__all__ = [
    "Curve",
    "Surface",
    "curve_curve_joint",
    "curve_point_joint",
    "surface_point_joint",
    "surface_surface_joint",
]
