"""Reduced (joint) coordinates: the REDMAX formulation (seed 000 §2, seed 003).

Joints map coordinates ``q`` to relative transforms ``Q(q)``; a tree of
joints maps ``(q, qdot)`` to body transforms and twists (``phi = J qdot``);
the reduced equations of motion are ``M_r qddot = f_r`` with
``M_r = J^T M J``.  Forward dynamics is available dense (REDMAX) and
recursive (O(n), compiled).
"""

from contactlab.reduced.joints import (
    CompositeJoint,
    FixedJoint,
    Joint,
    PlanarJoint,
    PrismaticJoint,
    ProductOfExponentialsJoint,
    RevoluteJoint,
    RotationSequenceJoint,
    TranslationalJoint,
)
from contactlab.reduced.registry import build_joint, joint_kinds, make_joint, register_joint
from contactlab.reduced.spherical import SphericalExpJoint
from contactlab.reduced.spline import SplineCurveJoint, SplineSurfaceJoint

__all__ = [
    "CompositeJoint",
    "FixedJoint",
    "Joint",
    "PlanarJoint",
    "PrismaticJoint",
    "ProductOfExponentialsJoint",
    "RevoluteJoint",
    "RotationSequenceJoint",
    "SphericalExpJoint",
    "SplineCurveJoint",
    "SplineSurfaceJoint",
    "TranslationalJoint",
    "build_joint",
    "joint_kinds",
    "make_joint",
    "register_joint",
]
