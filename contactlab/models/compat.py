"""Which solver backends fit which model, and the base class that calls the solver layer.

A model declares the *kinds* of problem it poses for given options (a QP with
general rows, a bound-constrained QP, a QP with cones, an LCP with friction
blocks, a non-symmetric LCP).  A backend fits a kind if it takes that form
natively or through one of the solver layer's documented conversions
(:mod:`solvers.conversions`):

- ``eq_qp``, equality-constrained QP: every QP backend (``kkt`` included), and
  LCP backends through "qp -> lcp in the row multipliers" (all rows free);
- ``qp``, SPD cost ``M`` and general inequality rows: inequality QP backends,
  and LCP backends through "qp -> lcp in the row multipliers";
- ``bound_qp``, PSD cost and one-sided bounds on variables: inequality QP
  backends that accept a singular cost, and LCP backends through
  "bound-constrained qp -> box lcp";
- ``box_qp``, PSD cost and two-sided (box) bounds: the same QP backends and
  box-LCP backends (``pgs``; Lemke takes one-sided bounds only);
- ``rows_qp``, PSD cost and general inequality rows: QP backends only (the
  dual-LCP conversion needs an SPD cost);
- ``soc_qp``, second-order (Coulomb) cones: cone-capable QP backends;
- ``block_lcp``, LCP with friction blocks (bounds follow ``z_n``): backends
  with friction blocks (``pgs``);
- ``pivot_lcp``, non-symmetric LCP with zero diagonal entries: pivoting LCP
  backends (``lemke``); Gauss--Seidel needs a positive diagonal.

Backends that declare ``requires_definite`` (they factorise the QP cost, e.g.
quadprog and ECOS through qpsolvers) fail on the singular Delassus matrices of
redundant contacts, so they fit only the kinds whose cost is the SPD mass
matrix (``eq_qp``, ``qp``).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

import numpy as np

import solvers
from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.models.base import ContactModel
from contactlab.models.common import worst_status
from solvers import LCP, QP, SolverResult
from solvers.registry import ALIASES

#: Inner-solve tolerance of a model whose ``solver_tol`` is unset and whose backend
#: declares no ``default_tol`` of its own.
DEFAULT_SOLVER_TOL = 1e-9

KINDS: dict[str, str] = {
    "eq_qp": "equality-constrained QP",
    "qp": "QP with SPD cost and general inequality rows",
    "bound_qp": "QP with PSD cost and one-sided bounds",
    "box_qp": "QP with PSD cost and box bounds",
    "rows_qp": "QP with PSD cost and general inequality rows",
    "soc_qp": "QP with second-order cones",
    "block_lcp": "LCP with friction blocks",
    "pivot_lcp": "non-symmetric LCP with zero diagonal entries",
}


def _fits(kind: str, be: Any) -> bool:
    qp_ineq = be.accepts_qp and not be.equality_only
    qp_psd = qp_ineq and not be.requires_definite
    rules = {
        "eq_qp": be.accepts_qp or be.accepts_lcp,
        "qp": qp_ineq or be.accepts_lcp,
        "bound_qp": qp_psd or be.accepts_lcp,
        "box_qp": qp_psd or (be.accepts_lcp and be.supports_box_lcp),
        "rows_qp": qp_psd,
        "soc_qp": qp_psd and be.supports_soc,
        "block_lcp": be.accepts_lcp and be.supports_friction_blocks,
        "pivot_lcp": be.accepts_lcp and be.kind == "pivoting",
    }
    return bool(rules[kind])


def _backend(name: str) -> Any:
    try:
        return solvers.get_backend(name)
    except solvers.SolverNotFound as err:
        raise UnknownNameError("solver", name, solvers.available_backends()) from err


def backends_for(*routes: tuple[str, ...]) -> list[str]:
    """Available backends (from :func:`solvers.backend_table`) that fit every kind of some route."""
    names = [row["name"] for row in solvers.backend_table() if row["available"]]
    return [n for n in names if any(all(_fits(k, _backend(n)) for k in r) for r in routes)]


def fits_route(route: tuple[str, ...], name: str) -> bool:
    """Whether backend ``name`` fits every kind of ``route``."""
    return all(_fits(k, _backend(name)) for k in route)


class SolvingModel(ContactModel):
    """A contact model that checks its options and solver, and records inner solves.

    Subclasses set ``defaults`` (every option with its default value) and
    implement :meth:`routes`: the alternative sequences of problem kinds the
    options lead to (a backend fits the model if it fits every kind of one
    route; the model then takes the first route that fits).

    Common options
    --------------
    solver_tol : absolute tolerance passed to every inner solve; ``None`` (default): the
        backend's ``default_tol`` if it declares one (``pgs``: 1e-6, its declared accuracy),
        else :data:`DEFAULT_SOLVER_TOL` (1e-9).
    max_iter : iteration cap of every inner solve (backend default if ``None``).
    solver_settings : dict passed unchanged to the backend (e.g. ``{"omega": 1.2}``).
    """

    defaults: ClassVar[dict[str, Any]] = {}
    common: ClassVar[dict[str, Any]] = {
        "solver_tol": None,
        "max_iter": None,
        "solver_settings": None,
    }

    def __init__(self, solver: str, **options: Any) -> None:
        merged = self.merged_options(**options)
        super().__init__(solver, **merged)
        fitting = type(self).compatible_solvers(**options)
        backend = _backend(solver)
        if backend.name not in fitting:
            raise IncompatibleError(
                f"model {self.name!r} with options {options or '{}'} poses "
                f"{' or '.join(' and '.join(KINDS[k] for k in r) for r in self.routes(**merged))}"
                f", which solver {solver!r} cannot take; backends that fit: "
                f"{', '.join(fitting) or 'none installed'}"
            )
        self.backend = backend
        #: tolerance of every inner solve (``solver_tol``, or the backend's default request)
        self.tol = float(
            self.options["solver_tol"]
            if self.options["solver_tol"] is not None
            else (backend.default_tol or DEFAULT_SOLVER_TOL)
        )
        self.route = next(r for r in self.routes(**merged) if fits_route(r, solver))
        self._results: list[SolverResult] = []
        self._suspect = False

    @classmethod
    def merged_options(cls, **options: Any) -> dict[str, Any]:
        """Defaults updated by ``options``; unknown names or bad values raise ConfigurationError."""
        known = {**cls.common, **cls.defaults}
        unknown = sorted(set(options) - set(known))
        if unknown:
            raise ConfigurationError(
                f"model {cls.name!r} has no option(s) {unknown}; its options are {sorted(known)}"
            )
        merged = {**known, **options}
        tol = merged["solver_tol"]
        if tol is not None and not (isinstance(tol, (int, float)) and 0 < tol < 1):
            raise ConfigurationError(f"option solver_tol must be a number in (0, 1), got {tol!r}")
        cap = merged["max_iter"]
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
            raise ConfigurationError(f"option max_iter must be a positive integer, got {cap!r}")
        cls.check_options(merged)
        return merged

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        """Raise :class:`ConfigurationError` for option values out of range (override)."""

    @classmethod
    @abstractmethod
    def routes(cls, **options: Any) -> list[tuple[str, ...]]:
        """Alternative sequences of problem kinds posed with these options (module table)."""

    @classmethod
    def compatible_solvers(cls, **options: Any) -> list[str]:
        """Available backends that fit (aliases such as ``cvxpy`` listed with their target)."""
        names = backends_for(*cls.routes(**cls.merged_options(**options)))
        aliases = [a for a, target in ALIASES.items() if target in names]
        return names + aliases

    def require(self, kind: str, what: str) -> None:
        """Raise :class:`IncompatibleError` if the backend does not fit ``kind`` (this step)."""
        if not _fits(kind, self.backend):
            raise IncompatibleError(
                f"model {self.name!r}: {what} is a {KINDS[kind]}, which solver {self.solver!r} "
                f"cannot take; backends that fit: {', '.join(backends_for((kind,)))}"
            )

    def run(self, problem: QP | LCP, warm: Any = None) -> SolverResult:
        """Solve one inner problem through the solver layer and record the result."""
        opts = self.options
        if problem.n == 0:
            # a dual problem of a step without constraint rows: nothing to solve
            res = SolverResult(
                np.zeros(0),
                np.zeros(0) if isinstance(problem, QP) else None,
                "optimal",
                "empty problem (no constraint rows): nothing to solve",
                0,
                0.0,
                0.0,
                0.0,
                {"primal": 0.0, "dual": 0.0, "complementarity": 0.0},
                self.backend.name,
                w=np.zeros(0) if isinstance(problem, LCP) else None,
            )
            self._results.append(res)
            return res
        if warm is not None and not self.backend.supports_warm_start:
            warm = None
        res = solvers.solve(
            problem,
            self.solver,
            tol=self.tol,
            max_iter=opts["max_iter"],
            warm_start=warm,
            **(opts["solver_settings"] or {}),
        )
        self._results.append(res)
        if res.status in ("optimal", "optimal_inaccurate") and not self._plausible(problem, res):
            self._suspect = True
        return res

    def _plausible(self, problem: QP | LCP, res: SolverResult) -> bool:
        """Whether a result claimed optimal has residuals near the backend's declared accuracy.

        The solver layer measures residuals the same way for every backend; a
        claim of optimality with residuals a thousand times the backend's
        tolerance (relative to the data) is treated as a failed solve.
        """
        scale = max(1.0, float(np.max(np.abs(problem.q), initial=0.0)))
        limit = 1e3 * max(self.backend.tolerance, self.tol) * scale
        return bool(np.isfinite(res.max_residual) and res.max_residual <= limit)

    def take_results(self) -> list[SolverResult]:
        """The inner results since the last call (and forget them)."""
        out, self._results = self._results, []
        return out

    def take_status(self, extra: str = "optimal") -> str:
        """Worst status of the inner solves since the last call, with implausible ones failed."""
        suspect, self._suspect = self._suspect, False
        return worst_status(self._results, "numerical_error" if suspect else extra)


def summary(results: list[SolverResult]) -> dict[str, float]:
    """Summed iterations and solve time, and the largest residual of the inner solves."""
    return {
        "iterations": float(sum(r.iterations for r in results)),
        "solve_time": float(sum(r.setup_time + r.solve_time for r in results)),
        "residual": float(max((r.max_residual for r in results), default=0.0)),
        "finite": float(all(np.all(np.isfinite(r.x)) for r in results)),
    }
