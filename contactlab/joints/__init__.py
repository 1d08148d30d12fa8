"""The joint vocabulary both formulations share.

A joint kind is described once, by its joint map (:mod:`contactlab.joints.maps`:
``Q(q)``, ``S(q)``, ``Sdot``), registered by name (:mod:`contactlab.joints.kinds`),
with the rows that hold it between two bodies (:mod:`contactlab.joints.row_geometry`,
:mod:`contactlab.joints.joint_constraints`) and the contacts of its friction
(:mod:`contactlab.joints.friction_geometry`).  Constraints on the body transforms
(:mod:`contactlab.joints.body_constraints`) are the base of every bilateral row: the
maximal formulation stacks them as ``G``, the reduced one maps them through the tree
Jacobian (loop closures, prescribed twists).  Joints given by a transform
(:mod:`contactlab.joints.transform`, :mod:`contactlab.joints.surface`) are derived
symbolically and compiled (:mod:`contactlab.joints.kernel_cache`).

This package imports neither formulation: :mod:`contactlab.maximal` and
:mod:`contactlab.reduced` import it.
"""

from contactlab.joints import surface  # noqa: F401  (registers the surface joint kinds)
from contactlab.joints.body_constraints import (
    Constraint,
    ConstraintRows,
    constraint_class,
    constraint_kinds,
    register_constraint,
)
from contactlab.joints.friction_geometry import JointFriction, LocalContacts
from contactlab.joints.kinds import (
    build_joint,
    joint_from_spec,
    joint_kinds,
    make_joint,
    register_joint,
)
from contactlab.joints.maps import (
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
from contactlab.joints.spherical import SphericalExpJoint
from contactlab.joints.spline import SplineCurveJoint, SplineSurfaceJoint
from contactlab.joints.transform import TransformJoint

__all__ = [
    "CompositeJoint",
    "Constraint",
    "ConstraintRows",
    "FixedJoint",
    "Joint",
    "JointFriction",
    "LocalContacts",
    "PlanarJoint",
    "PrismaticJoint",
    "ProductOfExponentialsJoint",
    "RevoluteJoint",
    "RotationSequenceJoint",
    "SphericalExpJoint",
    "SplineCurveJoint",
    "SplineSurfaceJoint",
    "TransformJoint",
    "TranslationalJoint",
    "build_joint",
    "constraint_class",
    "constraint_kinds",
    "joint_from_spec",
    "joint_kinds",
    "make_joint",
    "register_constraint",
    "register_joint",
]
