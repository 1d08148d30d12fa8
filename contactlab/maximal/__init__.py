"""Maximal coordinates: every body carries its own transform and twist.

Joints and user constraints become bilateral rows ``G Phi = g``
(:mod:`contactlab.joints.body_constraints`, :mod:`contactlab.joints.joint_constraints`);
:class:`MaximalFormulation` assembles the velocity-level step problem
(Sueda's notes §1.6–1.12) and is registered as formulation ``"maximal"``.
"""

from contactlab.joints.body_constraints import (
    Constraint,
    ConstraintRows,
    constraint_class,
    constraint_kinds,
    register_constraint,
    row_owners,
    scene_constraints,
    stack_rows,
)
from contactlab.joints.joint_constraints import JointConstraint
from contactlab.maximal.formulation import MaximalFormulation

__all__ = [
    "Constraint",
    "ConstraintRows",
    "JointConstraint",
    "MaximalFormulation",
    "constraint_class",
    "constraint_kinds",
    "register_constraint",
    "row_owners",
    "scene_constraints",
    "stack_rows",
]
