"""The small plug-in base class every backend derives from.

A backend declares what differs: its name, the modules it needs (checked with
:func:`importlib.util.find_spec`, so listing backends never imports a native
library), the forms it accepts, its :class:`~solvers.tolerance.Tolerance` (what
it reaches with default settings and what it is asked for by default) and a
``STATUS_MAP`` from its own codes to :data:`solvers.result.STATUSES`.  It
implements ``solve_qp`` and/or ``solve_lcp``; the layer does validation,
conversions, residuals and timing bookkeeping around it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from solvers.problems import LCP, QP
from solvers.result import RawSolution
from solvers.tolerance import Tolerance

#: Settings that bound a duality gap, a sum of products ``y_i s_i`` over rows.  The layer's
#: complementarity residual is per row, ``min(|y_i|, s_i)``, about the square root of the
#: product, so these are set to ``tol**2`` (floored at 1e-12) to reach a residual ``tol``.
#: (ECOS's ``abstol``/``reltol`` stay linear: ECOS stalls short of a squared gap.)
GAP_KEYWORDS = frozenset(
    {"tol_gap_abs", "tol_gap_rel", "eps_duality_gap_abs", "eps_duality_gap_rel"}
)


def tolerance_settings(keys: tuple[str, ...], tol: float) -> dict[str, float]:
    """Backend tolerance keywords for a requested residual ``tol`` (gap keywords squared)."""
    return {key: max(tol * tol, 1e-12) if key in GAP_KEYWORDS else tol for key in keys}


@dataclass
class SolveOptions:
    """Options common to every backend, as passed by :func:`solvers.solve`.

    Attributes
    ----------
    tol
        Requested absolute residual tolerance (:func:`solvers.tolerance.requested_tol`:
        the backend's ``tolerance.request`` when the caller gives none).
    max_iter
        Iteration cap, or ``None`` for the backend's default.
    x0, y0
        Warm-start primal (``x`` or ``z``) and multipliers (QP ``y``), or ``None``.
    time_limit
        Wall-time limit [s], or ``None``.
    settings
        Backend-specific settings passed through unchanged.
    """

    tol: float
    max_iter: int | None = None
    x0: NDArray[np.float64] | None = None
    y0: NDArray[np.float64] | None = None
    time_limit: float | None = None
    settings: dict[str, Any] = field(default_factory=dict)


class Backend:
    """Base class of solver backends.

    Subclasses set the class attributes and override :meth:`solve_qp` and/or
    :meth:`solve_lcp`.  One instance per name lives in the registry, so a
    backend may cache work between calls (the ``kkt`` factorisation).
    """

    #: Registry name, e.g. ``"osqp"`` or ``"qpsolvers:quadprog"``.
    name: ClassVar[str] = ""
    #: One-line description for tables.
    description: ClassVar[str] = ""
    #: Algorithm family: direct, admm, interior-point, active-set, iterative, pivoting.
    kind: ClassVar[str] = ""
    #: Top-level modules that must be importable.
    required_modules: ClassVar[tuple[str, ...]] = ()
    #: The pip extra of contactlab that installs the modules, if any.
    extra: ClassVar[str | None] = None
    accepts_qp: ClassVar[bool] = False
    accepts_lcp: ClassVar[bool] = False
    supports_soc: ClassVar[bool] = False
    supports_warm_start: ClassVar[bool] = False
    #: Whether ``max_iter`` / ``time_limit`` reach the backend (else ignored with a warning).
    supports_max_iter: ClassVar[bool] = True
    supports_time_limit: ClassVar[bool] = False
    #: QP backends only: every row must be an equality (``l == u``).
    equality_only: ClassVar[bool] = False
    #: LCP backends only: whether friction blocks (bounds following z_n) are handled.
    supports_friction_blocks: ClassVar[bool] = False
    #: LCP backends only: whether general box bounds are handled (else standard/mixed only).
    supports_box_lcp: ClassVar[bool] = True
    #: LCP backends only: whether non-symmetric matrices with zero diagonal entries are
    #: handled (pivoting methods); Gauss--Seidel divides by the diagonal.
    supports_zero_diagonal: ClassVar[bool] = False
    #: QP backends only: ``P`` must be positive definite (a singular ``P`` makes the solve fail).
    requires_definite: ClassVar[bool] = False
    #: QP backends only: solve a QP whose cost is far from unit scale with its cost
    #: scaled (:func:`solvers.conversions.cost_scaled`), for solvers whose infeasibility
    #: and stopping thresholds are absolute.
    equilibrate: ClassVar[bool] = False
    #: Whether a primal-infeasible problem is reported with status ``infeasible``.
    detects_infeasibility: ClassVar[bool] = False
    #: What the backend reaches on well-scaled problems (``accuracy``, used by the layer's
    #: plausibility verdict) and what it is asked for when the caller names no tolerance
    #: (``request``, :func:`solvers.tolerance.requested_tol`).  A subclass may declare a
    #: float: its accuracy, the request staying the parent's.
    tolerance: ClassVar[Tolerance] = Tolerance(1e-6)
    #: Backend status code -> shared status string.
    STATUS_MAP: ClassVar[dict[Any, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Read a float ``tolerance`` as the accuracy (request inherited), and an older
        ``default_tol`` declaration as the request, into the one :class:`Tolerance`."""
        super().__init_subclass__(**kwargs)
        declared = cls.__dict__.get("tolerance")
        request = cls.__dict__.get("default_tol")
        if request is not None:
            delattr(cls, "default_tol")
        if isinstance(declared, Tolerance) and request is None:
            return
        parent = next(c.__dict__["tolerance"] for c in cls.__mro__[1:] if "tolerance" in c.__dict__)
        if isinstance(declared, Tolerance):
            accuracy = declared.accuracy
        else:
            accuracy = parent.accuracy if declared is None else float(declared)
        if request is None:
            request = parent.request
        cls.tolerance = Tolerance(accuracy, float(request))

    @classmethod
    def availability(cls) -> tuple[bool, str]:
        """``(available, reason)``; the reason names the missing module and the pip extra."""
        for mod in cls.required_modules:
            if importlib.util.find_spec(mod) is None:
                hint = f"pip install contactlab[{cls.extra}]" if cls.extra else f"pip install {mod}"
                return False, f"module {mod!r} is not installed ({hint})"
        return True, ""

    @classmethod
    def map_status(cls, code: Any) -> str:
        """Shared status for a backend code; unknown codes map to ``numerical_error``."""
        return cls.STATUS_MAP.get(code, "numerical_error")

    @classmethod
    def forms(cls) -> list[str]:
        """Problem forms accepted natively, for tables."""
        out: list[str] = []
        if cls.accepts_qp:
            out.append("qp (equality only)" if cls.equality_only else "qp")
        if cls.supports_soc:
            out.append("soc")
        if cls.accepts_lcp:
            out.append("box lcp" if cls.supports_box_lcp else "standard lcp")
        if cls.supports_friction_blocks:
            out.append("friction blocks")
        if cls.supports_zero_diagonal:
            out.append("zero-diagonal lcp")
        return out

    def solve_qp(self, qp: QP, opts: SolveOptions) -> RawSolution:
        """Solve a QP the backend accepts (the layer checked compatibility)."""
        raise NotImplementedError(f"{self.name} does not solve QPs")

    def solve_lcp(self, lcp: LCP, opts: SolveOptions) -> RawSolution:
        """Solve an LCP the backend accepts (the layer checked compatibility)."""
        raise NotImplementedError(f"{self.name} does not solve LCPs")
