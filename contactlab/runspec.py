"""The run configuration: one :class:`RunSpec` for ``run``, ``compare``, ``sweep`` and Python.

A :class:`RunSpec` says everything that determines a run: scenario and
parameters, formulation, contact model (with options), solver, step size,
duration and seed (the data and its canonical form: :mod:`contactlab.spec`).
:func:`check_fits` says whether the combination can run without stepping
anything; :func:`build_simulator` builds the
:class:`~contactlab.simulator.Simulator` (whose module holds the step loop
only), and :func:`simulate` runs it: the Python API's short forms.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.spec import SPEC_VERSION, RunSpec, scenario_values

__all__ = [
    "DEMO_RUNS",
    "SPEC_VERSION",
    "RunSpec",
    "as_spec",
    "build_simulator",
    "check_fits",
    "check_names",
    "scenario_values",
    "simulate",
    "simulator_for",
]

#: Scenarios run by `contactlab demo`, with their simulated duration [s].
DEMO_RUNS: tuple[tuple[str, float], ...] = (("pendulum", 2.0), ("chain", 2.0))

if TYPE_CHECKING:
    from contactlab.runs import Run
    from contactlab.scene import Scene
    from contactlab.simulator import Simulator


def check_fits(spec: RunSpec) -> None:
    """Raise :class:`IncompatibleError`/:class:`UnknownNameError` if the combination cannot run.

    Checks the names, the scenario's formulations and the model's compatible
    solvers (when the model declares them) without stepping anything.
    """
    from contactlab.formulation import check_pairing, formulation_class, formulation_names
    from contactlab.models.base import check_solver, known_model, model_class, model_names
    from contactlab.scenario import get_scenario

    scenario = get_scenario(spec.scenario)
    if None in (spec.formulation, spec.model, spec.solver):
        # a name left to the scene's default: the default setup fits by construction, and the
        # names given are checked with it when the simulator is built
        return
    assert spec.formulation is not None and spec.model is not None and spec.solver is not None
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
    from contactlab.models.base import check_solver, known_model, model_names

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


#: The fields of :class:`RunSpec` a scenario name may be given with (``simulate("chain",
#: model="frictionless")``): the spec's own, not restated anywhere else.
SPEC_FIELDS = tuple(f.name for f in fields(RunSpec) if f.name not in ("scenario", "params"))


def as_spec(
    spec: RunSpec | str, parameters: Mapping[str, Any] | None = None, **given: Any
) -> RunSpec:
    """``spec`` itself, or the :class:`RunSpec` of the scenario ``spec`` with ``parameters``
    and the spec's fields ``given`` (``model=...``, ``dt=...``; ``None`` leaves a field
    at its default)."""
    if isinstance(spec, RunSpec):
        if parameters is not None or given:
            raise ConfigurationError(
                "give a RunSpec alone, or a scenario name with its parameters and fields"
            )
        return spec
    if parameters is not None and not isinstance(parameters, Mapping):
        raise ConfigurationError(
            f"scenario parameters must be a mapping such as {{'n': 3}}, got "
            f"{type(parameters).__name__} {parameters!r}"
        )
    unknown = sorted(set(given) - set(SPEC_FIELDS))
    if unknown:
        raise ConfigurationError(
            f"a run has no field(s) {unknown}; its fields are {list(SPEC_FIELDS)}"
        )
    values = {k: v for k, v in given.items() if v is not None}
    return RunSpec(spec, dict(parameters or {}), **values)


def simulate(
    spec: RunSpec | str,
    parameters: Mapping[str, Any] | None = None,
    *,
    steps: int | None = None,
    progress: bool | Callable[[int, int], None] | None = None,
    divergence_guard: bool = True,
    **given: Any,
) -> Run:
    """Run ``spec`` (a :class:`RunSpec`, or a scenario name with its parameters and the
    spec's fields, :func:`as_spec`) for ``steps`` steps or the spec's duration.

    A formulation, model or solver left ``None`` is chosen from what the scene
    contains (see :func:`contactlab.scenario.default_setup`).  ``strict=True`` stops
    the run at the first step that misses its tolerance (by default such a step
    keeps its best iterate and is counted; docs/reliability.md).

    Raises
    ------
    UnknownNameError, ParameterError, IncompatibleError
        For an unknown scenario or parameter, a wrongly typed value, or a
        formulation the scenario does not support.
    """
    run_spec = as_spec(spec, parameters, **given)
    sim = build_simulator(run_spec, divergence_guard=divergence_guard)
    return sim.run(steps=steps, duration=run_spec.duration, progress=progress)


def _why_not(spec: Any, formulation: str, parameters: Mapping[str, Any] | None) -> str:
    """`` (the formulation's own reason)`` when building it for the scene fails, else ``""``."""
    from contactlab.formulation import FORMULATIONS

    try:
        FORMULATIONS.get(formulation)(spec.build(**dict(parameters or {})))
    except (ConfigurationError, IncompatibleError) as err:
        return f" ({str(err).splitlines()[0]})"
    return ""


def build_simulator(
    spec: RunSpec | str,
    parameters: Mapping[str, Any] | None = None,
    *,
    divergence_guard: bool = True,
    **given: Any,
) -> Simulator:
    """The :class:`Simulator` of ``spec`` (a :class:`RunSpec`, or a scenario name with
    its parameters and fields: :func:`as_spec`), its scene built from the scenario."""
    from contactlab import scenario as scenario_registry

    run_spec = as_spec(spec, parameters, **given)
    scenario = scenario_registry.get_scenario(run_spec.scenario)
    formulation = run_spec.formulation
    if formulation is not None and formulation not in scenario.formulations:
        from contactlab.formulation import formulation_names

        if formulation not in formulation_names():
            raise UnknownNameError("formulation", formulation, formulation_names())
        why = _why_not(scenario, formulation, run_spec.params)
        raise IncompatibleError(
            f"scenario {run_spec.scenario!r} supports the formulations "
            f"{', '.join(scenario.formulations)}, not {formulation!r}{why}; choose one with "
            "--formulation"
        )
    values = dict(run_spec.params)
    if run_spec.dt is not None and "dt" in scenario.parameters and "dt" not in values:
        # a scene whose step size is a parameter (its set-up may depend on it) is
        # built with the step size used, so that its recorded parameters are true
        values["dt"] = run_spec.dt
    scene = scenario.build(**values)
    return simulator_for(
        run_spec, scene, divergence_guard=divergence_guard, formulations=scenario.formulations
    )


def simulator_for(
    spec: RunSpec,
    scene: Scene,
    *,
    divergence_guard: bool = True,
    formulations: tuple[str, ...] | None = None,
) -> Simulator:
    """The :class:`Simulator` that steps ``scene`` as ``spec`` says (formulation, model,
    solver, step size, options, strictness): the one place a spec becomes a simulator."""
    from contactlab.simulator import Simulator

    return Simulator(
        scene,
        spec.formulation,
        spec.model,
        spec.solver,
        dt=spec.dt,
        model_options=dict(spec.model_options),
        divergence_guard=divergence_guard,
        formulations=("maximal",) if formulations is None else formulations,
        formulation_options=dict(spec.formulation_options),
        strict=spec.strict,
    )
