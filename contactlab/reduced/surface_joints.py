"""Higher-pair joints of Si & Guenter: surface–surface, surface–point, curve–point, curve–curve.

Each is a :class:`~contactlab.reduced.general.TransformJoint` whose ``Q`` is
composed from the frames of :mod:`contactlab.geometry.surfaces`; the parent
geometry is given in the parent's joint frame, the child geometry in the
child's joint frame.

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
from typing import Any

from contactlab._lazy import lazy_import
from contactlab.geometry.primitives import inverse, rot_x, rot_z, trans
from contactlab.geometry.surfaces import Curve, Surface, curve_from, surface_from
from contactlab.reduced.general import TransformJoint
from contactlab.reduced.joints import Joint
from contactlab.reduced.registry import register_joint

sp = lazy_import("sympy")  # loaded when a symbolic expression is first built


def _symbols(names: str) -> tuple[sp.Symbol, ...]:
    return tuple(sp.symbols(names, real=True))


def surface_surface_joint(
    parent: Any, child: Any, spin: bool = False, twist: float = 0.0
) -> TransformJoint:
    """Contact of ``parent`` and ``child`` surfaces at one point; q = (u1, v1, u2, v2[, psi]).

    ``twist`` [rad] is the fixed angle about the common normal between the
    two surfaces' first tangents (added to ``psi`` with ``spin=True``).
    """
    A, B = surface_from(parent), surface_from(child)
    u1, v1, u2, v2, psi = _symbols("u1 v1 u2 v2 psi")
    tw = sp.Symbol("twist", real=True)
    FA, pa = A.frame(u1, v1, "a_")
    FB, pb = B.frame(u2, v2, "b_")
    turn = rot_z(psi + tw if spin else tw) * rot_x(sp.pi)
    coords = [u1, v1, u2, v2] + ([psi] if spin else [])
    return TransformJoint([FA, turn, inverse(FB)], coords, {**pa, **pb, tw: float(twist)})


def surface_point_joint(surface: Any, spin: bool = True, height: float = 0.0) -> TransformJoint:
    """A frame sliding on ``surface`` in its tangent plane, ``height`` [m] above it."""
    A = surface_from(surface)
    u, v, psi, h = _symbols("u v psi h")
    F, values = A.frame(u, v, "a_")
    Q = [F, rot_z(psi) * trans(0, 0, h) if spin else trans(0, 0, h)]
    return TransformJoint(Q, [u, v] + ([psi] if spin else []), {**values, h: float(height)})


def curve_point_joint(curve: Any, spin: bool = True) -> TransformJoint:
    """A frame sliding along ``curve``, x on the tangent; q = (s[, psi])."""
    C = curve_from(curve)
    s, psi = _symbols("s psi")
    F, values = C.frame(s, "c_")
    Q = [F, rot_x(psi)] if spin else F
    return TransformJoint(Q, [s] + ([psi] if spin else []), values)


def curve_curve_joint(parent: Any, child: Any, spin: bool = True) -> TransformJoint:
    """Two curves touching with a common tangent; q = (s1, s2[, psi])."""
    A, B = curve_from(parent), curve_from(child)
    s1, s2, psi = _symbols("s1 s2 psi")
    FA, pa = A.frame(s1, "a_")
    FB, pb = B.frame(s2, "b_")
    turn = (rot_x(psi) if spin else sp.eye(4)) * rot_z(sp.pi)
    return TransformJoint([FA, turn, inverse(FB)], [s1, s2] + ([psi] if spin else []), {**pa, **pb})


def _need(p: Mapping[str, Any], keys: tuple[str, ...], kind: str) -> None:
    from contactlab.errors import ConfigurationError

    missing = [k for k in keys if k not in p]
    if missing:
        raise ConfigurationError(
            f"{kind} joint needs params {missing} (a Surface/Curve or a mapping with 'kind')"
        )


@register_joint("surface_surface")
def _surface_surface(axis: Any, p: Mapping[str, Any]) -> Joint:
    _need(p, ("parent_surface", "child_surface"), "surface_surface")
    return surface_surface_joint(
        p["parent_surface"],
        p["child_surface"],
        bool(p.get("spin", False)),
        float(p.get("twist", 0.0)),
    )


@register_joint("surface_point")
def _surface_point(axis: Any, p: Mapping[str, Any]) -> Joint:
    _need(p, ("surface",), "surface_point")
    return surface_point_joint(p["surface"], bool(p.get("spin", True)), float(p.get("height", 0.0)))


@register_joint("curve_point")
def _curve_point(axis: Any, p: Mapping[str, Any]) -> Joint:
    _need(p, ("curve",), "curve_point")
    return curve_point_joint(p["curve"], bool(p.get("spin", True)))


@register_joint("curve_curve")
def _curve_curve(axis: Any, p: Mapping[str, Any]) -> Joint:
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
