"""Scenarios: named, parameterised scene builders, discovered through entry points.

A scenario is a function returning a :class:`~contactlab.scene.Scene`; its
keyword parameters (with defaults and annotations) are the scenario's
parameters, settable from the command line with ``--set KEY=VALUE``::

    from contactlab.scenario import scenario

    @scenario("pendulum", formulations=("maximal", "reduced"))
    def pendulum(length: float = 1.0, mass: float = 1.0, angle_deg: float = 10.0) -> Scene:
        '''One link on a hinge.  length [m], mass [kg], initial angle [deg].'''
        ...

The decorator returns a :class:`Scenario` object; no global state is kept.
A package exposes a mapping ``name -> Scenario`` (or one Scenario) through the
entry-point group ``contactlab.scenarios`` (the built-in ``scenarios`` package
declares ``builtin = "scenarios:SCENARIOS"`` in ``pyproject.toml``), and
:func:`load_scenarios` gathers every such mapping (:data:`SCENARIOS`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from contactlab.contact_pairs import can_collide
from contactlab.docstrings import parameter_docs, summary
from contactlab.errors import (
    ConfigurationError,
    ContactlabError,
    ParameterError,
    StateError,
    UnknownNameError,
)
from contactlab.scene import Scene
from solvers.plugins import Registry

ENTRY_POINT_GROUP = "contactlab.scenarios"

#: Model and solver for a scene that only has joints and equality constraints:
#: one direct solve of the step's KKT system.
JOINTS_ONLY = ("frictionless", "kkt")
#: ... for a scene with contacts: box friction (an LCP with friction blocks)
#: by projected Gauss-Seidel, which takes every contact scene in the library.
CONTACTS = ("box-friction", "pgs")
#: ... for a scene with contacts whose bodies are also joined to each other (a
#: mechanism: a chain, a robot): the same box-friction law by OSQP (a fixed point on
#: the friction bounds, each a QP).  Gauss--Seidel sweeps stall there short of their
#: tolerance (on the planar chain ``chain-fall``: 179 of 200 steps in maximal
#: coordinates, where the joint rows are swept with the contacts, 5 in reduced ones),
#: OSQP solves every step of it in both formulations (docs/guide/solvers.md).
MECHANISM_CONTACTS = ("box-friction", "osqp")
#: ... for a robot in reduced coordinates (a tree of fixed, revolute, prismatic and free
#: joints on the ground, :func:`contactlab.reduced.compiled_step.scene_in_scope`): box
#: friction by PGS, taken by the compiled contact step.  On the robot scenarios it solves
#: every step of solo12-stand, solo12-collapse and allegro-grasp (1000, 1000 and 600) and
#: 1477 of humanoid-topple's 1500 at 0.1-0.5 ms a step, where OSQP's route takes 25-95 ms
#: and leaves some steps of each at its cap (results/benchmarks/robots.md).
ROBOT_CONTACTS = ("box-friction", "pgs")
#: ... for a scene with joint limits (unilateral rows) but no contact geometry.
LIMITS = ("frictionless", "pgs")
#: ... for a scene with joint friction, per formulation.
JOINT_FRICTION = {"reduced": ("bisp", "pgs"), "maximal": ("joint-friction-sp", "pgs")}
#: The backend a model with the exact friction cone (``coulomb`` and ``anitescu-hart`` with
#: ``cone="soc"``) gets when named without a solver: accelerated projected gradient, which
#: the compiled exact-cone steps take in both formulations.  On the shipped contact scenes it
#: solves every step within the default tolerance and is the fastest of the cone backends,
#: where ``pgs`` (first in the table) and ``nsgs`` leave steps at their caps: a 50-cube
#: ``box-pile`` drop, 100 steps of Coulomb, ``pgs`` 124 ms a step (30 capped), ``nsgs``
#: 58 ms (34 capped), ``apgd`` 5.1 ms (none); Anitescu--Hart ``nsgs`` 31 ms (14 capped),
#: ``apgd`` 2.6 ms (none).  Its gap: on the planar chain in maximal coordinates
#: (``chain-fall``) it leaves 14 of 40 Coulomb steps at its cap (``nsgs`` 27, ``pgs`` fails)
#: (docs/guide/contact-models.md, results/benchmarks/contact_speed.md).
EXACT_CONE_SOLVER = "apgd"
#: the models that pose the exact-cone problem with :data:`EXACT_CONE_SOLVER` first
EXACT_CONE_MODELS = ("coulomb", "anitescu-hart")


def conserves_energy(scene: Scene) -> bool:
    """Whether the scene's exact dynamics keep the total energy constant.

    No contact geometry, joint limits, joint friction or joint damping (they
    dissipate), no force elements and no prescribed motion or driven bodies
    (they do work).
    Only then is an energy change a numerical error to rank methods by.
    """
    return not (
        can_collide(scene)
        or scene.forces
        or scene.extras.get("joint_torque") is not None
        or any(j.friction is not None or j.damping != 0.0 for j in scene.joints)
        or any(
            getattr(c, "unilateral", False) or getattr(c, "supplies_energy", False)
            for c in scene.constraints
        )
        or any(a.supplies_energy for a in scene.attachments)
    )


@dataclass(frozen=True)
class Setup:
    """A scene's default formulation, contact model and solver, with the reason."""

    formulation: str
    model: str
    solver: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return {
            "formulation": self.formulation,
            "model": self.model,
            "solver": self.solver,
            "reason": self.reason,
        }


def default_setup(
    scene: Scene, formulations: tuple[str, ...] = ("maximal",), formulation: str | None = None
) -> Setup:
    """The formulation, model and solver that fit what ``scene`` contains.

    The formulation is ``formulation`` or the first of ``formulations`` (the
    scenario's own order).  Joint friction needs its own model (``bisp`` in
    reduced coordinates, ``joint-friction-sp`` in maximal ones); contact
    geometry needs a friction model and an iterative backend (OSQP when bodies
    are joined to each other, :data:`MECHANISM_CONTACTS`, but PGS for a robot in
    reduced coordinates, :data:`ROBOT_CONTACTS`); joint limits
    alone need a backend for inequality rows; joints and equality
    constraints alone are one KKT solve.
    """
    form = formulation or formulations[0]
    if any(j.friction is not None for j in scene.joints) and form in JOINT_FRICTION:
        model, solver = JOINT_FRICTION[form]
        return Setup(form, model, solver, "the scene has joint friction")
    if can_collide(scene):
        if any(j.parent is not None for j in scene.joints):
            from contactlab.reduced.compiled_step import scene_in_scope

            if form == "reduced" and scene_in_scope(scene):
                return Setup(
                    form,
                    *ROBOT_CONTACTS,
                    "the scene is a robot on the ground in reduced coordinates "
                    "(the compiled box-friction step)",
                )
            return Setup(
                form,
                *MECHANISM_CONTACTS,
                "the scene has contact geometry and bodies joined to each other",
            )
        return Setup(form, *CONTACTS, "the scene has contact geometry")
    if any(getattr(c, "unilateral", False) for c in scene.constraints):
        return Setup(form, *LIMITS, "the scene has joint limits (inequality rows)")
    return Setup(form, *JOINTS_ONLY, "the scene has joints and equality constraints only")


def complete_setup(
    scene: Scene,
    formulations: tuple[str, ...] = ("maximal",),
    formulation: str | None = None,
    model: str | None = None,
    solver: str | None = None,
    model_options: Mapping[str, Any] | None = None,
) -> tuple[Setup, list[str]]:
    """The setup with the given names kept and the missing ones defaulted.

    Returns the setup and the names of the choices that were defaulted.  A
    model given without a solver gets the scene's default solver when that is
    the scene's default model and its options leave it fitting, else the first
    available backend that fits the model with its options (``model_options``:
    ``anitescu-hart`` with ``cone="soc"`` poses cone problems that OSQP cannot take),
    :data:`EXACT_CONE_SOLVER` for a model posing the exact-cone problem; a direct KKT
    solve only when the scene has no inequality rows.
    """
    base = default_setup(scene, formulations, formulation)
    defaulted = [
        what
        for what, given in (("formulation", formulation), ("model", model), ("solver", solver))
        if given is None
    ]
    chosen_model = model or base.model
    chosen_solver = solver
    if chosen_solver is None:
        if chosen_model == base.model and not model_options:
            chosen_solver = base.solver
        else:
            from contactlab.models.base import model_class

            fits = model_class(chosen_model).compatible_solvers(**dict(model_options or {}))
            if chosen_model == base.model and base.solver in fits:
                fits = [base.solver]
            elif base.solver != "kkt":
                fits = [name for name in fits if name != "kkt"]
            if EXACT_CONE_SOLVER in fits and _exact_cone(chosen_model, model_options):
                fits = [EXACT_CONE_SOLVER]
            chosen_solver = fits[0] if fits else base.solver
    return Setup(base.formulation, chosen_model, chosen_solver, base.reason), defaulted


def _exact_cone(model: str, options: Mapping[str, Any] | None) -> bool:
    """Whether ``model`` with ``options`` poses the exact-cone problem (:data:`EXACT_CONE_MODELS`
    with ``cone="soc"``, its own default or given)."""
    if model not in EXACT_CONE_MODELS:
        return False
    from contactlab.models.base import SolvingModel, model_class

    cls = model_class(model)
    if not issubclass(cls, SolvingModel):
        return False
    return bool(cls.merged_options(**dict(options or {})).get("cone") == "soc")


#: errors of a builder that are re-raised naming the parameters given
_RENAMEABLE = (ConfigurationError, ParameterError, StateError)

#: Largest value of a count parameter (``n``, ``n_*``, or documented as "number of ..."):
#: each counts bodies or links, and a scene beyond it would take hours to build and step.
MAX_COUNT = 10_000


def _is_count(name: str, ptype: type, doc: str) -> bool:
    return ptype is int and (
        name == "n" or name.startswith("n_") or doc.lower().startswith("number of")
    )


@dataclass(frozen=True)
class Parameter:
    """A scenario parameter: name, default value, type and description.

    limit : largest allowed value (count parameters: :data:`MAX_COUNT`).
    """

    name: str
    default: Any
    type: type
    doc: str = ""
    limit: int | None = None

    def check_limit(self, value: Any) -> Any:
        """``value``, or a :class:`ParameterError` when it is above :attr:`limit`."""
        if self.limit is not None and isinstance(value, int) and value > self.limit:
            raise ParameterError(
                f"parameter {self.name!r} = {value} is more than the limit of {self.limit:,} "
                f"({self.doc.rstrip('.') or 'a count'}); choose at most {self.limit}"
            )
        return value

    def parse(self, value: Any) -> Any:
        """Convert a command-line string (or a Python value) to the parameter's type."""
        if not isinstance(value, str):
            if self.type is tuple and isinstance(value, list):
                # JSON (summary.json) has no tuples: a list read back is the same value
                return tuple(Parameter(self.name, v, float).parse(v) for v in value)
            if self.type is float and isinstance(value, int) and not isinstance(value, bool):
                return float(value)
            if isinstance(value, self.type):
                return value
            raise ParameterError(
                f"parameter {self.name!r} expects {self.type.__name__}, got "
                f"{type(value).__name__} {value!r}"
            )
        parts = value.replace(" ", "").lower().split(",")
        if self.type in (float, tuple, list) and any(p in ("nan", "+nan", "-nan") for p in parts):
            raise ParameterError(
                f"parameter {self.name!r} is NaN, which is no value; give a number, "
                f"for example --set {self.name}={self.default}"
            )
        try:
            if self.type is bool:
                low = value.strip().lower()
                if low in ("1", "true", "yes", "on"):
                    return True
                if low in ("0", "false", "no", "off"):
                    return False
                raise ValueError(value)
            if self.type in (tuple, list):
                parts = [p for p in value.replace(" ", "").split(",") if p]
                return self.type(float(p) for p in parts)
            return self.type(value)
        except ValueError as err:
            raise ParameterError(
                f"parameter {self.name!r} expects {self.type.__name__}, got {value!r}; "
                f"for example --set {self.name}={self.default}"
            ) from err


@dataclass(frozen=True)
class Scenario:
    """A named scene builder with typed parameters."""

    name: str
    builder: Callable[..., Scene]
    parameters: Mapping[str, Parameter]
    description: str
    formulations: tuple[str, ...] = ("maximal",)

    def defaults(self) -> dict[str, Any]:
        return {k: p.default for k, p in self.parameters.items()}

    def resolve(self, overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Defaults updated with ``overrides`` (strings are parsed); unknown names rejected."""
        values = self.defaults()
        for key, value in (overrides or {}).items():
            if key not in self.parameters:
                raise ParameterError(
                    f"scenario {self.name!r} has no parameter {key!r}; its parameters are "
                    f"{', '.join(self.parameters) or '(none)'}"
                )
            values[key] = self.parameters[key].check_limit(self.parameters[key].parse(value))
        return values

    def default_setup(
        self, overrides: Mapping[str, Any] | None = None, formulation: str | None = None
    ) -> Setup:
        """The default formulation, model and solver of the scene built with ``overrides``."""
        return default_setup(self.build(**dict(overrides or {})), self.formulations, formulation)

    def build(self, **overrides: Any) -> Scene:
        """Build the scene with parameters ``overrides`` (defaults for the rest)."""
        values = self.resolve(overrides)
        try:
            # an overflow while building (mass=1e308) is an error of the values, not a warning
            with np.errstate(over="raise", invalid="raise", divide="raise", under="ignore"):
                scene = self.builder(**values)
        except ContactlabError as err:
            text = str(err)
            if overrides and not any(k in text for k in overrides) and type(err) in _RENAMEABLE:
                # the builder's own message names what it checked (a joint's q0, a body's
                # mass), not the parameter the user gave: name both
                shown = ", ".join(f"{k}={v!r}" for k, v in overrides.items())
                raise type(err)(f"scenario {self.name!r} with {shown}: {text}") from err
            raise
        except (ValueError, OverflowError, ArithmeticError, TypeError) as err:
            given = ", ".join(f"{k}={overrides[k]!r}" for k in overrides) or "the defaults"
            reason = " ".join(str(err).split()) or type(err).__name__
            raise ParameterError(
                f"scenario {self.name!r} cannot be built with {given}: {reason}; choose values "
                "in range (see `contactlab list`)"
            ) from err
        if not isinstance(scene, Scene):
            raise ConfigurationError(
                f"scenario {self.name!r} returned {type(scene).__name__}, not a Scene"
            )
        return scene.with_(params=dict(values), name=self.name)

    def __call__(self, **overrides: Any) -> Scene:
        return self.build(**overrides)


def scenario(
    name: str, *, formulations: tuple[str, ...] = ("maximal",)
) -> Callable[[Callable[..., Scene]], Scenario]:
    """Decorator turning a scene-building function into a :class:`Scenario`."""

    def wrap(fn: Callable[..., Scene]) -> Scenario:
        sig = inspect.signature(fn)
        doc = inspect.getdoc(fn) or ""
        described = parameter_docs(doc)
        params: dict[str, Parameter] = {}
        for p in sig.parameters.values():
            if p.default is inspect.Parameter.empty:
                raise ConfigurationError(
                    f"scenario {name!r}: parameter {p.name!r} needs a default value"
                )
            ptype = type(p.default)
            pdoc = described.get(p.name, "")
            limit = MAX_COUNT if _is_count(p.name, ptype, pdoc) else None
            params[p.name] = Parameter(p.name, p.default, ptype, pdoc, limit)
        return Scenario(name, fn, params, summary(doc), formulations)

    return wrap


#: Scenarios: entry points in the ``contactlab.scenarios`` group (the built-in
#: ``scenarios`` package declares ``builtin = "scenarios:SCENARIOS"``); a value is a
#: mapping ``name -> Scenario``, one :class:`Scenario`, or a sequence of them.
SCENARIOS: Registry[Scenario] = Registry(
    "scenario",
    ENTRY_POINT_GROUP,
    accept=lambda value: isinstance(value, Scenario),
    unknown=lambda name, known: UnknownNameError("scenario", name, known),
)


def load_scenarios() -> dict[str, Scenario]:
    """Every scenario registered in the ``contactlab.scenarios`` entry-point group."""
    return SCENARIOS.items()


def get_scenario(name: str) -> Scenario:
    """The registered scenario ``name``, or the scenario of a model file or Python function
    (``robot.urdf``, ``robot.xml``, ``scenes.py:make_scene``; :mod:`contactlab.modelfiles`);
    a clear error listing known names otherwise."""
    found = load_scenarios()
    if name in found:
        return found[name]
    from contactlab.modelfiles import looks_like_file

    if looks_like_file(name):
        return file_scenario(name)
    raise UnknownNameError("scenario", name, list(found))


def file_scenario(name: str) -> Scenario:
    """The scenario of a model file (``robot.urdf``, ``robot.xml``) or of a Python function
    (``scenes.py:make_scene``): see :mod:`contactlab.modelfiles`."""
    from contactlab.modelfiles import model_builder, python_builder

    if name.rpartition(":")[0].endswith(".py"):
        from contactlab.userfiles import guarded

        builder = python_builder(name)
        if isinstance(builder, Scenario):
            return Scenario(
                name,
                guarded(builder.builder, name),
                builder.parameters,
                builder.description,
                builder.formulations,
            )
        return scenario(name, formulations=("maximal", "reduced"))(guarded(builder, name))
    build, params, description = model_builder(name)
    return Scenario(
        name,
        build,
        {key: Parameter(key, default, kind, doc) for key, default, kind, doc in params},
        description,
        ("reduced", "maximal"),
    )
