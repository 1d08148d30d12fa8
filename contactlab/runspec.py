"""The run configuration: one :class:`RunSpec` for ``run``, ``compare``, ``sweep`` and Python.

A :class:`RunSpec` says everything that determines a run: scenario and
parameters, formulation, contact model (with options), solver, step size,
duration and seed.  :func:`check_fits` says whether the combination can run
without stepping anything; :meth:`RunSpec.simulator` builds the
:class:`~contactlab.simulator.Simulator` (whose module holds the step loop
only), and :func:`simulate` / :func:`build_simulator` are the Python API's
short forms.  Its :meth:`~RunSpec.digest` is a SHA-256 of a canonical
JSON form, so two specs that mean the same run (parameters given as strings
or numbers, in any order) have the same hash.  Sweeps name results folders
after it and skip a run whose folder already records the same hash.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError

#: Scenarios run by `contactlab demo`, with their simulated duration [s].
DEMO_RUNS: tuple[tuple[str, float], ...] = (("pendulum", 2.0), ("chain", 2.0))

if TYPE_CHECKING:
    from contactlab.simulator import Run, Simulator

SPEC_VERSION = 1


def _plain(value: Any) -> Any:
    """JSON-ready copy: tuples to lists, numpy scalars to Python numbers, keys sorted."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and callable(value.item):  # numpy scalar
        return value.item()
    return value


def scenario_values(params: Mapping[str, Any]) -> dict[str, Any]:
    """Parameters with lists turned into tuples (TOML and JSON have no tuples; scenario
    parameters such as ``half_extents`` are tuples)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in params.items()}


@dataclass(frozen=True)
class RunSpec:
    """One run of the grid.

    Parameters
    ----------
    scenario : registered scenario name.
    params : scenario parameters (resolved values, not strings).
    formulation, model, solver : registered names.
    dt : step size [s]; ``None`` uses the scene's default.
    duration : simulated time [s]; ``None`` uses the scene's default.
    seed : passed to the scenario's ``seed`` parameter when it has one (e.g.
        a random pile); otherwise it only distinguishes repetitions (timing
        statistics).
    model_options : options of the contact model (``cone``, ``directions``, ...).
    formulation_options : options of the formulation (``integrator``, ...);
        left out of :meth:`as_dict` (and so of the hash) when empty, so that
        the specifications written before it existed keep their hashes.
    strict : stop the run at the first step that misses its tolerance (see
        :class:`~contactlab.simulator.Simulator`); left out of :meth:`as_dict`
        when ``False``, like ``formulation_options``.
    """

    scenario: str
    params: Mapping[str, Any] = field(default_factory=dict)
    formulation: str = "maximal"
    model: str = "frictionless"
    solver: str = "kkt"
    dt: float | None = None
    duration: float | None = None
    seed: int = 0
    model_options: Mapping[str, Any] = field(default_factory=dict)
    formulation_options: Mapping[str, Any] = field(default_factory=dict)
    strict: bool = False

    def as_dict(self) -> dict[str, Any]:
        """Canonical, JSON-ready dictionary (what the hash covers)."""
        d = _plain(asdict(self))
        if not d["formulation_options"]:
            del d["formulation_options"]
        if not d["strict"]:
            del d["strict"]
        d["version"] = SPEC_VERSION
        return d

    def digest(self) -> str:
        """SHA-256 hex digest of the canonical JSON form."""
        text = json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def folder_name(self) -> str:
        """``<scenario>-<formulation>-<model>-<solver>-<hash12>`` (filesystem-safe)."""
        slug = "-".join((self.scenario, self.formulation, self.model, self.solver))
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", slug)
        return f"{slug}-{self.digest()[:12]}"

    def label(self) -> str:
        """Short human-readable name: ``formulation/model/solver``."""
        return f"{self.formulation}/{self.model}/{self.solver}"

    def simulator(self, divergence_guard: bool = True) -> Simulator:
        """The :class:`~contactlab.simulator.Simulator` of this run (:func:`build_simulator`)."""
        return build_simulator(
            self.scenario,
            self.params,
            formulation=self.formulation,
            model=self.model,
            solver=self.solver,
            dt=self.dt,
            model_options=self.model_options,
            divergence_guard=divergence_guard,
            formulation_options=self.formulation_options,
            strict=self.strict,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSpec:
        """Inverse of :meth:`as_dict` (unknown keys rejected)."""
        known = {
            "scenario",
            "params",
            "formulation",
            "model",
            "solver",
            "dt",
            "duration",
            "seed",
            "model_options",
            "formulation_options",
            "strict",
        }
        extra = set(data) - known - {"version"}
        if extra:
            raise ConfigurationError(
                f"run specification has unknown keys {sorted(extra)}; known keys: {sorted(known)}"
            )
        values = {k: data[k] for k in known if k in data}
        values["params"] = scenario_values(values.get("params", {}))
        if not isinstance(values.get("strict", False), bool):
            raise ConfigurationError(
                f"run specification: strict must be true or false, got {values['strict']!r}"
            )
        return cls(**values)


def check_fits(spec: RunSpec) -> None:
    """Raise :class:`IncompatibleError`/:class:`UnknownNameError` if the combination cannot run.

    Checks the names, the scenario's formulations and the model's compatible
    solvers (when the model declares them) without stepping anything.
    """
    from contactlab.formulation import check_pairing, formulation_class, formulation_names
    from contactlab.models.base import known_model, model_class, model_names
    from contactlab.scenario import get_scenario
    from contactlab.simulator import check_solver

    scenario = get_scenario(spec.scenario)
    check_solver(spec.solver)
    if spec.formulation not in formulation_names():
        raise UnknownNameError("formulation", spec.formulation, formulation_names())
    if spec.formulation not in scenario.formulations:
        raise IncompatibleError(
            f"scenario {spec.scenario!r} is built for formulations "
            f"{', '.join(scenario.formulations)}, not {spec.formulation!r}"
        )
    if spec.formulation_options:
        formulation_class(spec.formulation).check_options(dict(spec.formulation_options))
    if not known_model(spec.model):
        raise UnknownNameError("model", spec.model, model_names())
    check_pairing(
        spec.formulation,
        formulation_class(spec.formulation).provides,
        spec.model,
        model_class(spec.model).needs,
    )
    try:
        fitting = model_class(spec.model).compatible_solvers(**dict(spec.model_options))
    except ConfigurationError as err:
        raise IncompatibleError(f"model {spec.model!r} does not take these options: {err}") from err
    if fitting and spec.solver not in fitting:
        raise IncompatibleError(
            f"model {spec.model!r} cannot be solved by {spec.solver!r}; backends that fit: "
            f"{', '.join(fitting)}"
        )


def check_names(solvers: Sequence[str], models: Sequence[str], formulations: Sequence[str]) -> None:
    """Raise :class:`UnknownNameError` for a name that names nothing (a typo).

    A solver that exists but is not installed is not an error here: it is
    listed with the reason among the combinations that do not fit
    (:func:`check_fits` says why).
    """
    from contactlab.formulation import formulation_names
    from contactlab.models.base import known_model, model_names
    from contactlab.simulator import check_solver

    for name in solvers:
        try:
            check_solver(name)
        except IncompatibleError:  # known but not installed: listed as not fitting
            pass
    for name in models:
        if not known_model(name):
            raise UnknownNameError("model", name, model_names())
    for name in formulations:
        if name not in formulation_names():
            raise UnknownNameError("formulation", name, formulation_names())


def simulate(
    scenario: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    formulation: str | None = None,
    model: str | None = None,
    solver: str | None = None,
    dt: float | None = None,
    steps: int | None = None,
    duration: float | None = None,
    model_options: Mapping[str, Any] | None = None,
    progress: bool | Callable[[int, int], None] | None = None,
    divergence_guard: bool = True,
    formulation_options: Mapping[str, Any] | None = None,
    strict: bool = False,
) -> Run:
    """Build the registered scenario ``scenario`` with ``parameters`` and run it.

    A formulation, model or solver left ``None`` is chosen from what the scene
    contains (see :func:`contactlab.scenario.default_setup`).  ``strict`` stops
    the run at the first step that misses its tolerance (by default such a step
    keeps its best iterate and is counted; docs/reliability.md).

    Raises
    ------
    UnknownNameError, ParameterError, IncompatibleError
        For an unknown scenario or parameter, a wrongly typed value, or a
        formulation the scenario does not support.
    """
    sim = build_simulator(
        scenario,
        parameters,
        formulation=formulation,
        model=model,
        solver=solver,
        dt=dt,
        model_options=model_options,
        divergence_guard=divergence_guard,
        formulation_options=formulation_options,
        strict=strict,
    )
    return sim.run(steps=steps, duration=duration, progress=progress)


def _why_not(spec: Any, formulation: str, parameters: Mapping[str, Any] | None) -> str:
    """`` (the formulation's own reason)`` when building it for the scene fails, else ``""``."""
    from contactlab.formulation import FORMULATIONS

    try:
        FORMULATIONS.get(formulation)(spec.build(**dict(parameters or {})))
    except (ConfigurationError, IncompatibleError) as err:
        return f" ({str(err).splitlines()[0]})"
    return ""


def build_simulator(
    scenario: str,
    parameters: Mapping[str, Any] | None = None,
    *,
    formulation: str | None = None,
    model: str | None = None,
    solver: str | None = None,
    dt: float | None = None,
    model_options: Mapping[str, Any] | None = None,
    divergence_guard: bool = True,
    formulation_options: Mapping[str, Any] | None = None,
    strict: bool = False,
) -> Simulator:
    """The :class:`Simulator` for a registered scenario (see :func:`simulate`)."""
    from contactlab import scenario as scenario_registry
    from contactlab.simulator import Simulator

    if parameters is not None and not isinstance(parameters, Mapping):
        raise ConfigurationError(
            f"scenario parameters must be a mapping such as {{'n': 3}}, got "
            f"{type(parameters).__name__} {parameters!r}"
        )
    spec = scenario_registry.get_scenario(scenario)
    if formulation is not None and formulation not in spec.formulations:
        from contactlab.formulation import formulation_names

        if formulation not in formulation_names():
            raise UnknownNameError("formulation", formulation, formulation_names())
        raise IncompatibleError(
            f"scenario {scenario!r} supports the formulations {', '.join(spec.formulations)}, "
            f"not {formulation!r}{_why_not(spec, formulation, parameters)}; choose one with "
            "--formulation"
        )
    values = dict(parameters or {})
    if dt is not None and "dt" in spec.parameters and "dt" not in values:
        # a scene whose step size is a parameter (its set-up may depend on it) is
        # built with the step size used, so that its recorded parameters are true
        values["dt"] = dt
    scene = spec.build(**values)
    return Simulator(
        scene,
        formulation,
        model,
        solver,
        dt=dt,
        model_options=model_options,
        divergence_guard=divergence_guard,
        formulations=spec.formulations,
        formulation_options=formulation_options,
        strict=strict,
    )
