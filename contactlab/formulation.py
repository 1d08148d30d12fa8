"""The formulation interface: how a scene's state becomes a step problem.

A formulation (maximal coordinates, reduced coordinates, ...) is built once
from an immutable :class:`~contactlab.scene.Scene` and then, every step,

1. ``assemble(state, h, contacts)`` poses the velocity-level
   :class:`~contactlab.problem.StepProblem` (mass matrix, free momentum,
   bilateral rows with Baumgarte terms, contact rows mapped into its
   coordinates);
2. a contact model solves it (:mod:`contactlab.models`);
3. ``advance(state, solution, h)`` integrates positions and returns the new
   :class:`~contactlab.scene.State`.

``metrics(state)`` reports energies, momentum and position-level drift the
same way for every formulation; ``maximal(state)`` gives body transforms and
twists so collision, trajectories and plots never depend on the formulation.
Formulations are registered by name (see :func:`register_formulation`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import NDArray

from contactlab.collision.contacts import ContactSet
from contactlab.errors import ConfigurationError, IncompatibleError, UnknownNameError
from contactlab.problem import CAPABILITIES, StepProblem, StepSolution
from contactlab.scene import Scene, State
from solvers.plugins import Registry

Array = NDArray[np.float64]


class Formulation(ABC):
    """Base class of formulations; subclasses set ``name`` and implement the steps."""

    name: str = ""
    #: whether position-level constraint drift is possible (maximal joints)
    has_joint_drift: bool = True
    #: what its step problems carry beyond the matrices (names of
    #: :data:`contactlab.problem.CAPABILITIES`)
    provides: frozenset[str] = frozenset()
    #: whether it realises ``Scene.attachments`` (a formulation that does not
    #: refuses such scenes instead of ignoring them)
    supports_attachments: bool = False

    def __init__(self, scene: Scene) -> None:
        self.scene = scene
        if scene.attachments and not self.supports_attachments:
            raise ConfigurationError(
                f"scene {scene.name!r} has attachments, which formulation "
                f"{self.name or type(self).__name__!r} does not realise; run it with "
                "--formulation maximal, or replace the attachments by fixed joints"
            )

    @abstractmethod
    def initial_state(self) -> State:
        """The state at t = 0."""

    @abstractmethod
    def assemble(self, state: State, h: float, contacts: ContactSet | None = None) -> StepProblem:
        """Pose the step problem at ``state`` for step size ``h`` [s]."""

    @abstractmethod
    def advance(self, state: State, solution: StepSolution, h: float) -> State:
        """Integrate positions with the solved velocities; return the next state."""

    @abstractmethod
    def maximal(self, state: State) -> tuple[Array, Array]:
        """Body transforms (nb, 4, 4) and body twists (nb, 6) of ``state``."""

    @abstractmethod
    def metrics(self, state: State) -> dict[str, float]:
        """Per-state physical metrics.

        Keys (all formulations): ``kinetic_energy`` [J], ``potential_energy``
        [J] (gravity plus force elements), ``total_energy`` [J],
        ``linear_momentum_x/y/z`` [kg m/s], ``angular_momentum_x/y/z``
        [kg m^2/s] (about the world origin), ``constraint_error`` (largest
        position-level bilateral drift, [m] or [rad]).
        """


def _is_formulation(cls: object) -> bool:
    return isinstance(cls, type) and issubclass(cls, Formulation)


#: Formulations: built-in ``maximal`` and ``reduced``, and entry points in the
#: ``contactlab.formulations`` group (value: a Formulation subclass, or a module
#: whose import registers its formulations with :func:`register_formulation`).
FORMULATIONS: Registry[type[Formulation]] = Registry(
    "formulation",
    "contactlab.formulations",
    builtin=("contactlab.maximal", "contactlab.reduced"),
    accept=_is_formulation,
    unknown=lambda name, known: UnknownNameError("formulation", name, known),
)


def register_formulation(name: str) -> Callable[[type[Formulation]], type[Formulation]]:
    """Class decorator registering a formulation under ``name``."""

    def wrap(cls: type[Formulation]) -> type[Formulation]:
        cls.name = name
        return FORMULATIONS.register(name, cls)

    return wrap


def formulation_names() -> list[str]:
    """Names of the registered formulations."""
    return sorted(FORMULATIONS.names())


def formulation_class(name: str) -> type[Formulation]:
    """The formulation class registered as ``name``."""
    return FORMULATIONS.get(name)


def formulations_providing(needs: Iterable[str]) -> list[str]:
    """Names of the registered formulations that provide every capability of ``needs``."""
    want = set(needs)
    return sorted(n for n, cls in FORMULATIONS.items().items() if want <= set(cls.provides))


def make_formulation(name: str, scene: Scene) -> Formulation:
    """Build the formulation ``name`` for ``scene``."""
    return FORMULATIONS.get(name)(scene)


def check_pairing(
    formulation: str, provides: Iterable[str], model: str, needs: Iterable[str]
) -> None:
    """Raise :class:`IncompatibleError` if ``formulation`` lacks something ``model`` needs."""
    have = set(provides)
    missing = [n for n in needs if n not in have]
    if missing:
        fits = " or ".join(f"--formulation {f}" for f in formulations_providing(needs))
        what = "; ".join(CAPABILITIES.get(m, m) for m in missing)
        raise IncompatibleError(
            f"model {model!r} needs {what}, which formulation {formulation!r} does not provide; "
            f"run it with {fits or 'a formulation that provides it'}"
        )
