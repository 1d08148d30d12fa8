"""Force elements: energy, wrench, stiffness K and damping D (seed 000 §1.9).

See :mod:`contactlab.forces.base` for the interface and sign conventions.
Gravity is not a force element: the formulations apply it.
"""

from contactlab.forces.base import (
    Force,
    linearly_implicit_terms,
    total_damping,
    total_energy,
    total_stiffness,
    total_wrench,
)
from contactlab.forces.damping import BodyDamping
from contactlab.forces.frame_spring import FrameSpring, world_jacobians
from contactlab.forces.muscle import Muscle
from contactlab.forces.path import PathForce
from contactlab.forces.point import PointForce
from contactlab.forces.springs import AxialSpring, SpringDamper, ZeroLengthSpring

__all__ = [
    "AxialSpring",
    "BodyDamping",
    "Force",
    "FrameSpring",
    "Muscle",
    "PathForce",
    "PointForce",
    "SpringDamper",
    "ZeroLengthSpring",
    "linearly_implicit_terms",
    "total_damping",
    "total_energy",
    "total_stiffness",
    "total_wrench",
    "world_jacobians",
]
