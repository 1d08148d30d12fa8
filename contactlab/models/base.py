"""The contact-model interface, the base class of models that solve through the layer, and
the model registry.

A contact model turns a :class:`~contactlab.problem.StepProblem` into solver
problems (:class:`solvers.QP`, :class:`solvers.LCP`), solves them through the
solver layer with the backend the user chose, and returns a
:class:`~contactlab.problem.StepSolution`.  It never calls a backend
directly, never sees bodies, joints or formulation internals, and works with
every formulation that provides what it ``needs``.

A :class:`SolvingModel` declares the *kinds* of problem it poses for given
options (names of :func:`solvers.kinds`: a QP with general rows, a
bound-constrained QP, a QP with cones, an LCP with friction blocks, ...) as
alternative routes; the solver layer alone decides which backends fit a kind
(:func:`solvers.fit`), which tolerance a backend is asked for by default
(:func:`solvers.tolerance.requested_tol`, from the backend's ``tolerance.request``
and the model's ``benchmarked_tol``) and whether a claimed solution is plausible
(``SolverResult.plausible``).
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

import solvers
from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.memory import ModelMemory
from contactlab.models.common import Array, Rows, worst_status
from contactlab.problem import StepProblem, StepSolution
from contactlab.userfiles import file_object, names_file_object
from solvers import LCP, QP, FrictionalContact, SolverResult
from solvers.fitting import describe
from solvers.plugins import Registry
from solvers.tolerance import requested_tol


class ContactModel(ABC):
    """Base class; subclasses set ``name`` and implement :meth:`solve`.

    Parameters
    ----------
    solver : backend name in the solver layer (``"osqp"``, ``"pgs"``, ...).
    options : model options (``cone="pyramid"|"box"|"soc"``, ``directions``,
        ``form="primal"|"dual"``, tolerances ...), documented per model.
    """

    name: str = ""
    #: problem forms the model poses, e.g. ("qp",), ("lcp",), ("qp", "lcp")
    forms: tuple[str, ...] = ()
    #: what the model needs in the step problem beyond the matrices (names of
    #: :data:`contactlab.problem.CAPABILITIES`); checked against the formulation's
    #: ``provides`` when the simulator is built
    needs: tuple[str, ...] = ()
    #: whether the model solves the dry-friction rows ``D`` of joint coordinates
    #: (:attr:`~contactlab.problem.StepProblem.D`); a scene with them is paired only
    #: with a model that does (checked when the simulator is built)
    carries_dry_friction: bool = False

    def __init__(self, solver: str, **options: Any) -> None:
        self.solver = solver
        self.options = options

    @abstractmethod
    def solve(self, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        """Solve one step; ``cache`` (the model's memory) carries warm starts between steps."""

    @classmethod
    def compatible_solvers(cls, **options: Any) -> list[str]:
        """Available backends that can solve this model's problems (with conversions)."""
        return []


def check_solver(name: str) -> None:
    """Raise a clear error if ``name`` is not a usable backend of the solver layer."""
    try:
        solvers.get_backend(name)
    except solvers.SolverNotFound as err:
        known = [row["name"] for row in solvers.backend_table()]
        if err.reason is None:
            raise UnknownNameError("solver", name, known) from err
        raise IncompatibleError(
            f"solver {name!r} is unavailable: {err.reason}; available solvers: "
            f"{', '.join(solvers.available_backends()) or 'none'}"
        ) from err


def _backend(name: str) -> Any:
    try:
        return solvers.get_backend(name)
    except solvers.SolverNotFound as err:
        raise UnknownNameError("solver", name, solvers.available_backends()) from err


@dataclass
class _StepLog:
    """The inner solves of one step: results in order, and whether one was implausible."""

    results: list[SolverResult] = field(default_factory=list)
    suspect: bool = False


def _logged(solve: Callable[..., StepSolution]) -> Callable[..., StepSolution]:
    """``solve`` recording its inner solves in a fresh log that lives for this call only
    (the outermost call of the model: a nested call of the same model shares it)."""

    @functools.wraps(solve)
    def wrapper(self: SolvingModel, problem: StepProblem, cache: ModelMemory) -> StepSolution:
        if self._step_log is not None:  # a nested call of the same model
            return solve(self, problem, cache)
        self._step_log = _StepLog()
        try:
            return solve(self, problem, cache)
        finally:
            self._step_log = None

    wrapper.logs_step = True  # type: ignore[attr-defined]
    return wrapper


class SolvingModel(ContactModel):
    """A contact model that checks its options and solver, and records inner solves.

    A model object keeps nothing between steps: the inner solves of a step are
    recorded in a log held by the model for the duration of that :meth:`solve` call
    only (and handed back in the :class:`StepSolution`), and warm starts travel in
    the ``cache`` of the state, so one model object may step several simulators in
    any interleaving (one step at a time).

    Subclasses set ``defaults`` (every option with its default value) and
    implement :meth:`routes`: the alternative sequences of problem kinds the
    options lead to (a backend fits the model if it fits every kind of one
    route; the model then takes the first route that fits).

    Common options
    --------------
    solver_tol : absolute tolerance passed to every inner solve; ``None`` (default): the
        model's ``benchmarked_tol`` for the backend if it has one, else the backend's
        ``tolerance.request`` (1e-9; ``pgs`` 1e-6, its declared accuracy; the friction backends
        1e-6, what the benchmarks measured).
    max_iter : iteration cap of every inner solve (backend default if ``None``).
    solver_settings : dict passed unchanged to the backend (e.g. ``{"omega": 1.2}``).
    islands : solve a frictional-contact problem island by island (default ``False``;
        :mod:`solvers.islands`).
    """

    defaults: ClassVar[dict[str, Any]] = {}
    #: The unset ``solver_tol`` of this model with a backend whose benchmark row
    #: (``benchmarks/bench_friction.py``) asks for another tolerance than the backend's
    #: ``tolerance.request``: the user's default run is the benchmark's.
    benchmarked_tol: ClassVar[dict[str, float]] = {}
    common: ClassVar[dict[str, Any]] = {
        "solver_tol": None,
        "max_iter": None,
        "solver_settings": None,
        "islands": False,
    }

    def __init__(self, solver: str, **options: Any) -> None:
        merged = self.merged_options(**options)
        super().__init__(solver, **merged)
        fitting = type(self).compatible_solvers(**options)
        backend = _backend(solver)
        if backend.name not in fitting:
            raise IncompatibleError(
                f"model {self.name!r} with options {options or '{}'} poses "
                f"{describe(self.routes(**merged))}, which solver {solver!r} cannot take; "
                f"backends that fit: {', '.join(fitting) or 'none installed'}"
            )
        self.backend = backend
        #: tolerance of every inner solve (``solver_tol``, or the default request)
        self.tol = requested_tol(backend, self.options["solver_tol"], self.benchmarked_tol)
        self.route = next(r for r in self.routes(**merged) if solvers.fit(backend, r))
        #: the inner solves of the step being solved (``None`` between steps)
        self._step_log: _StepLog | None = None
        #: inner solves made outside :meth:`solve` (a helper called on its own)
        self._loose_log = _StepLog()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        solve = cls.__dict__.get("solve")
        if solve is not None and not getattr(solve, "logs_step", False):
            cls.solve = _logged(solve)  # type: ignore[method-assign]

    @classmethod
    def default_tolerance(cls, solver: str) -> float:
        """The tolerance of the inner solves when ``solver_tol`` is unset: the model's
        ``benchmarked_tol`` for the backend if it has one, else the backend's own
        ``tolerance.request`` (resolved by :func:`solvers.tolerance.requested_tol`, as
        :func:`solvers.solve` resolves it)."""
        return requested_tol(_backend(solver), None, cls.benchmarked_tol)

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
        if not isinstance(merged["islands"], bool):
            raise ConfigurationError(
                f"option islands must be true or false, got {merged['islands']!r}"
            )
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
        return solvers.fitting_backends(*cls.routes(**cls.merged_options(**options)), aliases=True)

    def require(self, kind: str, what: str) -> None:
        """Raise :class:`IncompatibleError` if the backend does not fit ``kind`` (this step)."""
        if not solvers.fit(self.backend, kind):
            raise IncompatibleError(
                f"model {self.name!r}: {what} is a {describe([kind])}, which solver "
                f"{self.solver!r} cannot take; backends that fit: "
                f"{', '.join(solvers.fitting_backends(kind))}"
            )

    def run(self, problem: QP | LCP | FrictionalContact, warm: Any = None) -> SolverResult:
        """Solve one inner problem through the solver layer and record the result.

        A result whose claimed solution the layer judges implausible
        (``SolverResult.plausible``) fails the step (:meth:`take_status`).
        """
        if warm is not None and not self.backend.supports_warm_start:
            warm = None
        solve: Callable[..., SolverResult] = solvers.solve
        if self.options["islands"] and isinstance(problem, FrictionalContact):
            from solvers.islands import solve_islands

            solve = solve_islands
        res = solve(
            problem,
            self.solver,
            tol=self.tol,
            max_iter=self.options["max_iter"],
            warm_start=warm,
            **(self.options["solver_settings"] or {}),
        )
        log = self._log()
        log.results.append(res)
        if not res.plausible:
            log.suspect = True
        return res

    def _log(self) -> _StepLog:
        """The log of the step being solved (of loose inner solves outside :meth:`solve`)."""
        return self._step_log if self._step_log is not None else self._loose_log

    def take_results(self) -> list[SolverResult]:
        """The inner results of this step since the last call (and forget them)."""
        log = self._log()
        out, log.results = log.results, []
        return out

    def take_status(self, extra: str = "optimal") -> str:
        """Worst status of this step's inner solves since the last call, implausible ones failed."""
        log = self._log()
        suspect, log.suspect = log.suspect, False
        return worst_status(log.results, "numerical_error" if suspect else extra)


def summary(results: list[SolverResult]) -> dict[str, float]:
    """Summed iterations and solve time, and the largest residual of the inner solves."""
    return {
        "iterations": float(sum(r.iterations for r in results)),
        "solve_time": float(sum(r.setup_time + r.solve_time for r in results)),
        "residual": float(max((r.max_residual for r in results), default=0.0)),
        "finite": float(all(np.all(np.isfinite(r.x)) for r in results)),
    }


def _is_model(cls: object) -> bool:
    return isinstance(cls, type) and issubclass(cls, ContactModel)


#: Contact models: the built-in ones, and entry points in the ``contactlab.models``
#: group (value: a ContactModel subclass, or a module whose import registers its
#: models with :func:`register_model`).
MODELS: Registry[type[ContactModel]] = Registry(
    "contact model",
    "contactlab.models",
    builtin=("contactlab.models",),
    accept=_is_model,
    unknown=lambda name, known: UnknownNameError("model", name, known),
)


def register_model(name: str) -> Callable[[type[ContactModel]], type[ContactModel]]:
    """Class decorator registering a contact model under ``name``."""

    def wrap(cls: type[ContactModel]) -> type[ContactModel]:
        cls.name = name
        return MODELS.register(name, cls)

    return wrap


def model_names() -> list[str]:
    """Names of the registered contact models."""
    return sorted(MODELS.names())


def model_class(name: str) -> type[ContactModel]:
    """The contact model class registered as ``name``, or the class ``Name`` of a Python
    file named ``path/to/file.py:Name`` (registered under that text on first use, so a
    model written outside any package runs like a registered one)."""
    if name not in MODELS and names_file_object(name):
        found = file_object(name)
        if not _is_model(found):
            raise ConfigurationError(
                f"{name!r} is a {type(found).__name__}, not a contact model class; define a "
                "subclass of contactlab.models.base.SolvingModel (docs/guide/writing-a-model.md)"
            )
        if not found.name:
            found.name = name
        MODELS.register(name, found, origin=f"file {name.rpartition(':')[0]!r}")
    return MODELS.get(name)


def known_model(name: str) -> bool:
    """Whether ``name`` names a registered model or a model class in a Python file (the
    file is not read here: :func:`model_class` reports what is wrong with it)."""
    return name in MODELS or names_file_object(name)


def make_model(name: str, solver: str, **options: Any) -> ContactModel:
    """Build the contact model ``name`` (:func:`model_class`) that solves with ``solver``."""
    return model_class(name)(solver, **options)


def make_solution(
    model: SolvingModel,
    problem: StepProblem,
    v: Array,
    rows: Rows,
    lam: Array,
    lambda_T: Array,
    extra_status: str = "optimal",
    outer: int = 0,
) -> StepSolution:
    """Assemble the :class:`StepSolution` from the recorded inner results."""
    status = model.take_status(extra_status)
    results = model.take_results()
    return StepSolution(
        v=v,
        lambda_G=rows.part(lam, "G"),
        lambda_N=rows.part(lam, "N"),
        lambda_T=lambda_T,
        lambda_L=rows.part(lam, "L"),
        lambda_D=rows.part(lam, "D"),
        status=status,
        iterations=int(sum(r.iterations for r in results)),
        outer_iterations=outer,
        solve_time=float(sum(r.setup_time + r.solve_time for r in results)),
        residual=float(max((r.max_residual for r in results), default=0.0)),
        results=results,
    )
