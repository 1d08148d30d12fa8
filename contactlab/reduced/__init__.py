"""Reduced (joint) coordinates: the REDMAX formulation (Sueda's notes §2, REDMAX supplement).

Joints map coordinates ``q`` to relative transforms ``Q(q)``; a tree of
joints maps ``(q, qdot)`` to body transforms and twists (``phi = J qdot``);
the reduced equations of motion are ``M_r qddot = f_r`` with
``M_r = J^T M J``.  Forward dynamics is available dense (REDMAX) and
recursive (O(n), compiled).

The joint maps and joint kinds live in :mod:`contactlab.joints` (both formulations
use them); every name it exports is also importable from here.
"""

from typing import Any

from contactlab import joints as _joints
from contactlab.reduced.dynamics import (
    bias_forces,
    energies,
    forward_dynamics_dense,
    mass_matrix,
    reduced_forces,
)
from contactlab.reduced.formulation import ReducedConstraint, ReducedFormulation
from contactlab.reduced.hyper import HyperReducedFormulation
from contactlab.reduced.integrators import simulate_adaptive, step_linearly_implicit
from contactlab.reduced.kinematics import Kinematics, forward_kinematics
from contactlab.reduced.recursive import (
    forward_dynamics_recursive,
    hybrid_dynamics,
    inverse_dynamics,
    inverse_mass_times,
)
from contactlab.reduced.tree import Tree

__all__ = [
    "HyperReducedFormulation",
    "Kinematics",
    "ReducedConstraint",
    "ReducedFormulation",
    "Tree",
    "bias_forces",
    "energies",
    "forward_dynamics_dense",
    "forward_dynamics_recursive",
    "forward_kinematics",
    "hybrid_dynamics",
    "inverse_dynamics",
    "inverse_mass_times",
    "mass_matrix",
    "reduced_forces",
    "simulate_adaptive",
    "step_linearly_implicit",
    *_joints.__all__,
]


def __getattr__(name: str) -> Any:
    """The names :mod:`contactlab.joints` exports, under this package's name too."""
    if name in _joints.__all__:
        return getattr(_joints, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
