"""The one result type every backend returns, and the shared status vocabulary."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

#: Shared status vocabulary.  Each backend maps its own codes onto these.
STATUSES: tuple[str, ...] = (
    "optimal",  # converged to the requested tolerance
    "optimal_inaccurate",  # the backend claims a solution at reduced accuracy
    "max_iterations",  # stopped by the iteration cap before the tolerance was met
    "stalled",  # stopped short of the tolerance before the cap (no progress, or a breakdown)
    "time_limit",  # stopped by the wall-time limit
    "infeasible",  # primal infeasible (certificate found)
    "unbounded",  # dual infeasible / objective unbounded below
    "ray_termination",  # Lemke's method left along a secondary ray: no solution found
    "numerical_error",  # breakdown (singular pivot, NaN, backend exception)
)


@dataclass
class SolverResult:
    """Outcome of :func:`solvers.solve`, in the style of ``scipy.optimize.OptimizeResult``.

    Attributes
    ----------
    x
        ``(n,)`` primal solution; for an LCP the unknown ``z``.
    y
        ``(m,)`` QP multipliers of the rows of ``A`` (OSQP convention,
        ``P x + q + A^T y - S^T z_soc = 0``; ``y_i > 0`` at an active upper
        bound, ``y_i < 0`` at an active lower bound).  ``None`` for an LCP.
    w
        ``(n,)`` ``w = M z + q`` for an LCP, else ``None``.
    z_soc
        ``(nc, 3)`` cone multipliers ``(s_n, s_t1, s_t2)`` with
        ``||s_t|| <= s_n``, paired with ``(mu x_n, x_t1, x_t2)``; ``None``
        without cones.
    status
        One of :data:`STATUSES`.
    success
        ``status == "optimal"``.
    message
        Human-readable detail, including the backend's own status text.
    iterations
        Backend iterations (sweeps for PGS, pivots for Lemke, 0 for KKT).
    setup_time, solve_time
        Wall time [s] of the backend's setup/factorisation and of the solve.
    objective
        ``1/2 x'Px + q'x`` for a QP; ``z . w`` for an LCP.
    residuals
        ``{"primal", "dual", "complementarity"}`` computed by the layer
        (see :mod:`solvers.residuals`).
    backend
        Name of the backend that ran.
    conversions
        Names of the conversions the layer applied, in order.
    measures
        For a frictional-contact problem: the natural-map residual and the
        Signorini, cone and dissipation measures of
        :func:`solvers.frictional.fc_residuals`; else ``None``.
    plausible
        ``False`` when the backend claims a solution (``optimal`` or
        ``optimal_inaccurate``) that the layer's residuals contradict
        (:mod:`solvers.verdict`); treat such a result as a failed solve.
    """

    x: NDArray[np.float64]
    y: NDArray[np.float64] | None
    status: str
    message: str
    iterations: int
    setup_time: float
    solve_time: float
    objective: float
    residuals: dict[str, float]
    backend: str
    conversions: list[str] = field(default_factory=list)
    w: NDArray[np.float64] | None = None
    z_soc: NDArray[np.float64] | None = None
    plausible: bool = True
    measures: dict[str, float] | None = None

    @property
    def success(self) -> bool:
        """Whether the backend reports convergence to the requested tolerance."""
        return self.status == "optimal"

    @property
    def max_residual(self) -> float:
        """Largest of the primal, dual and complementarity residuals."""
        return max(self.residuals.values()) if self.residuals else float("nan")

    def __repr__(self) -> str:
        res = ", ".join(f"{k}={v:.2e}" for k, v in self.residuals.items())
        conv = f", conversions={self.conversions}" if self.conversions else ""
        return (
            f"SolverResult(backend={self.backend!r}, status={self.status!r}, "
            f"iterations={self.iterations}, objective={self.objective:.6g}, {res}{conv})"
        )


@dataclass
class RawSolution:
    """What a backend hands back to the layer before residuals are computed."""

    x: NDArray[np.float64]
    y: NDArray[np.float64] | None
    status: str
    message: str = ""
    iterations: int = 0
    setup_time: float = 0.0
    solve_time: float = 0.0
    z_soc: NDArray[np.float64] | None = None
