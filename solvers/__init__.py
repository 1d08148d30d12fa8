"""contactlab's solver-adapter layer: QP, LCP and frictional-contact problems, backends.

Depends on numpy/scipy (and numba for the Gauss--Seidel kernel); each backend's
package is imported only when that backend runs.  Never imports ``contactlab``.

Example
-------
>>> import numpy as np, scipy.sparse as sp
>>> from solvers import QP, solve
>>> qp = QP(sp.identity(2), np.array([1.0, -1.0]), sp.identity(2), np.zeros(2), np.full(2, np.inf))
>>> res = solve(qp, "osqp", tol=1e-9)
>>> res.status, np.round(res.x, 6).tolist(), round(float(res.y[0]), 6)
('optimal', [0.0, 1.0], -1.0)
"""

from __future__ import annotations

from solvers import fc_dispatch as _fc_kinds  # noqa: F401  (registers the frictional kinds)
from solvers.backend_registry import available_backends, backend_table, get_backend
from solvers.dispatch import solve
from solvers.errors import IncompatibleProblem, ProblemError, SolverError, SolverNotFound
from solvers.fitting import (
    Fit,
    ProblemKind,
    Route,
    fit,
    fitting_backends,
    kind_of,
    kinds,
    register_kind,
)
from solvers.frictional import FrictionalContact, GlobalFrictionalContact
from solvers.frictional_wide import WideFrictionalContact
from solvers.problems import LCP, QP, FrictionBlocks, SOCBlocks
from solvers.result import STATUSES, SolverResult

__all__ = [
    "LCP",
    "Fit",
    "ProblemKind",
    "Route",
    "QP",
    "STATUSES",
    "FrictionBlocks",
    "FrictionalContact",
    "GlobalFrictionalContact",
    "WideFrictionalContact",
    "IncompatibleProblem",
    "ProblemError",
    "SOCBlocks",
    "SolverError",
    "SolverNotFound",
    "SolverResult",
    "available_backends",
    "backend_table",
    "fit",
    "fitting_backends",
    "get_backend",
    "kind_of",
    "kinds",
    "register_kind",
    "solve",
]
