"""Joint kinds of the reduced formulation, built from a :class:`~contactlab.scene.JointSpec`.

``joint_from_spec(spec)`` looks ``spec.kind`` up in a registry; a new kind
is one decorated builder (``@register_joint("name")``).  Axes are unit
vectors in the joint frame; ``params`` carry the rest:

========================  ====================================================
kind                      params
========================  ====================================================
fixed                     --
revolute, continuous      ``axis`` (default z)
prismatic                 ``axis`` (default x)
planar                    ``axis`` = plane normal (default z)
translational             --
universal                 ``axes``: two rotation axes (default x, y)
spherical                 ``switch_angle`` [rad] of the chart switch (default pi)
spherical_euler           ``sequence`` (default "xzx")
free                      ``order``: "rotation_first" (Sueda's notes, eq. 2.48,
                          default) or "translation_first"
cylindrical               ``axis``: revolute and prismatic about one axis
composite                 ``joints``: two or more joints, each a Joint or a
                          mapping with ``kind``, ``axis``, ``params``
spline_curve              ``frames`` (m, 4, 4), ``cyclic`` (default False)
spline_surface            ``values`` (n1, n2, 6) or ``frames`` (n1, n2, 4, 4)
custom                    ``joint``: any :class:`Joint` instance
transform                 ``Q``, ``coordinates``, ``parameters``: a joint given
                          by its transform (:mod:`contactlab.joints.transform`)
========================  ====================================================

A joint with a ``check_regular(q)`` method (the transform joints) is
checked at its initial coordinates: a singular parameterization there is
an error.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from contactlab.errors import ConfigurationError, UnknownNameError
from contactlab.joints.maps import (
    CompositeJoint,
    FixedJoint,
    Joint,
    PlanarJoint,
    PrismaticJoint,
    RevoluteJoint,
    TranslationalJoint,
    spherical_euler_joint,
    universal_joint,
)
from contactlab.joints.spherical import SphericalExpJoint
from contactlab.joints.spline import (
    SplineCurveJoint,
    SplineSurfaceJoint,
    frames_to_surface_values,
)
from contactlab.scene import JointSpec
from solvers.plugins import Registry

Builder = Callable[[Any, Mapping[str, Any]], Joint]

#: Joint kinds of the reduced formulation: the built-in ones below, and entry points
#: in the ``contactlab.joints`` group (value: a builder ``(axis, params) -> Joint``
#: registered under the entry point's name, or a module whose import registers its
#: kinds with :func:`register_joint`).
JOINTS: Registry[Builder] = Registry(
    "joint kind",
    "contactlab.joints",
    accept=callable,
    unknown=lambda name, known: UnknownNameError("joint kind", name, known),
)


def register_joint(kind: str) -> Callable[[Builder], Builder]:
    """Register ``builder(axis, params) -> Joint`` under ``kind``."""

    def wrap(builder: Builder) -> Builder:
        return JOINTS.register(kind, builder)

    return wrap


def joint_kinds() -> list[str]:
    """Names of the registered joint kinds."""
    return sorted(JOINTS.names())


def make_joint(kind: str, axis: Any = None, params: Mapping[str, Any] | None = None) -> Joint:
    """Build a joint of ``kind``; raises :class:`UnknownNameError` for unknown kinds."""
    return JOINTS.get(kind)(axis, dict(params or {}))


def joint_from_spec(spec: JointSpec) -> Joint:
    """The joint map of ``spec`` (its kind, axis and params)."""
    try:
        return make_joint(spec.kind, spec.axis, spec.params)
    except ConfigurationError as err:
        raise ConfigurationError(f"joint {spec.name!r} ({spec.kind}): {err}") from err


def _check_ndof(spec: JointSpec, joint: Joint) -> None:
    for key in ("q0", "qdot0", "rest"):
        value = getattr(spec, key)
        if value is not None and value.shape != (joint.ndof,):
            raise ConfigurationError(
                f"joint {spec.name!r} ({spec.kind}) has {joint.ndof} coordinates but {key} "
                f"has shape {value.shape}; give {joint.ndof} values"
            )


# A builder's docstring is the kind's description in `contactlab list` (its first paragraph).


@register_joint("fixed")
def _fixed(axis: Any, p: Mapping[str, Any]) -> Joint:
    """No relative motion (0 coordinates): the child is welded to the parent."""
    return FixedJoint()


@register_joint("revolute")
def _revolute(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Rotation about one axis (default z), 1 coordinate [rad]."""
    return RevoluteJoint(axis)


@register_joint("continuous")
def _continuous(axis: Any, p: Mapping[str, Any]) -> Joint:
    """A revolute joint without limits (URDF's name), 1 coordinate [rad]."""
    return RevoluteJoint(axis)


@register_joint("prismatic")
def _prismatic(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Translation along one axis (default x), 1 coordinate [m]."""
    return PrismaticJoint(axis)


@register_joint("planar")
def _planar(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Motion in a plane (``axis`` its normal, default z): two translations and the
    rotation about the normal, 3 coordinates."""
    return PlanarJoint(axis)


@register_joint("translational")
def _translational(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Translation in 3-D without rotation, 3 coordinates [m]."""
    return TranslationalJoint()


@register_joint("universal")
def _universal(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Two rotations about the ``axes`` (default x, then y), 2 coordinates [rad]."""
    return universal_joint(p.get("axes"))


@register_joint("spherical")
def _spherical(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Free rotation (ball joint) in exponential coordinates, 3 coordinates [rad], with a
    chart switch at ``switch_angle`` (default pi)."""
    return SphericalExpJoint(float(p.get("switch_angle", np.pi)))


@register_joint("spherical_euler")
def _spherical_euler(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Free rotation in Euler angles of ``sequence`` (default "xzx"), 3 coordinates [rad]
    (singular where the middle angle makes the outer axes align)."""
    return spherical_euler_joint(p.get("sequence", "xzx"))


@register_joint("cylindrical")
def _cylindrical(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Rotation about and translation along one axis, 2 coordinates (rad, m)."""
    revolute = RevoluteJoint(axis)
    return CompositeJoint(revolute, PrismaticJoint(revolute.axis))


@register_joint("spline_curve")
def _spline_curve(axis: Any, p: Mapping[str, Any]) -> Joint:
    """The child follows a spline through the transforms ``frames`` (m, 4, 4), optionally
    ``cyclic``; 1 coordinate (the curve parameter)."""
    if "frames" not in p:
        raise ConfigurationError("spline curve joint needs params['frames'], (m, 4, 4) transforms")
    return SplineCurveJoint(p["frames"], bool(p.get("cyclic", False)))


@register_joint("free")
def _free(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Six degrees of freedom: a spherical and a translational joint, rotation first
    (default) or translation first (``order``), 6 coordinates."""
    order = p.get("order", "rotation_first")
    if order == "rotation_first":
        return CompositeJoint(SphericalExpJoint(), TranslationalJoint())
    if order == "translation_first":
        return CompositeJoint(TranslationalJoint(), SphericalExpJoint())
    raise ConfigurationError(
        f"free joint order must be 'rotation_first' or 'translation_first', got {order!r}"
    )


@register_joint("composite")
def _composite(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Two or more joints (``joints``) in series as one; its coordinates are theirs."""
    parts = p.get("joints")
    if parts is None or len(parts) < 2:
        raise ConfigurationError("composite joint needs params['joints'] with two or more joints")
    joints = []
    for part in parts:
        if isinstance(part, Joint):
            joints.append(part)
        elif isinstance(part, Mapping) and "kind" in part:
            joints.append(make_joint(part["kind"], part.get("axis"), part.get("params")))
        else:
            raise ConfigurationError(
                f"composite joint part {part!r} must be a Joint or a mapping with 'kind'"
            )
    out = joints[-1]
    for j in reversed(joints[:-1]):
        out = CompositeJoint(j, out)
    return out


@register_joint("spline_surface")
def _spline_surface(axis: Any, p: Mapping[str, Any]) -> Joint:
    """The child follows a spline surface of transforms (``values`` or ``frames``);
    2 coordinates (the surface parameters)."""
    if "values" in p:
        return SplineSurfaceJoint(p["values"])
    if "frames" in p:
        return SplineSurfaceJoint(frames_to_surface_values(p["frames"]))
    raise ConfigurationError("spline surface joint needs params['values'] or params['frames']")


@register_joint("custom")
def _custom(axis: Any, p: Mapping[str, Any]) -> Joint:
    """Any :class:`Joint` instance given as ``joint`` (a joint written in Python)."""
    joint = p.get("joint")
    if not isinstance(joint, Joint):
        raise ConfigurationError("custom joint needs params['joint'], a Joint instance")
    return joint


def build_joint(spec: JointSpec) -> Joint:
    """:func:`joint_from_spec` plus a check that q0/qdot0/rest match the joint's size."""
    joint = joint_from_spec(spec)
    _check_ndof(spec, joint)
    check_regular = getattr(joint, "check_regular", None)
    if check_regular is not None:
        q0 = np.zeros(joint.ndof) if spec.q0 is None else spec.q0
        try:
            check_regular(q0)
        except ConfigurationError as err:
            raise ConfigurationError(f"joint {spec.name!r} ({spec.kind}): {err}") from err
    return joint
