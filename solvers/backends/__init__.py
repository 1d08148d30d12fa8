"""Built-in backends.  ``BACKENDS`` is registered under the ``solvers.backends`` entry point.

Importing this package imports no native solver library: each backend imports
its package inside ``solve_*``.
"""

from __future__ import annotations

from solvers.backends.base import Backend, SolveOptions
from solvers.backends.cvxpy_ import CVXPY_BACKENDS
from solvers.backends.fc_padmm import PADMMBackend
from solvers.backends.friction import FRICTION_BACKENDS
from solvers.backends.kkt import KKTBackend
from solvers.backends.lemke import LemkeBackend
from solvers.backends.osqp_ import OSQPBackend
from solvers.backends.pgs import PGSBackend
from solvers.backends.ppivot import PrincipalPivotingBackend
from solvers.backends.qpsolvers_ import QPSOLVERS_BACKENDS

BACKENDS: list[type[Backend]] = [
    KKTBackend,
    OSQPBackend,
    PGSBackend,
    LemkeBackend,
    PrincipalPivotingBackend,
    *FRICTION_BACKENDS,
    PADMMBackend,
    *CVXPY_BACKENDS,
    *QPSOLVERS_BACKENDS,
]

__all__ = ["BACKENDS", "Backend", "SolveOptions"]
