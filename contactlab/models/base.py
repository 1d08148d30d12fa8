"""The contact-model interface and its registry.

A contact model turns a :class:`~contactlab.problem.StepProblem` into solver
problems (:class:`solvers.QP`, :class:`solvers.LCP`), solves them through the
solver layer with the backend the user chose, and returns a
:class:`~contactlab.problem.StepSolution`.  It never calls a backend
directly, never sees bodies, joints or formulation internals, and works with
every formulation that provides what it ``needs``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from contactlab.errors import UnknownNameError
from contactlab.problem import StepProblem, StepSolution


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

    def __init__(self, solver: str, **options: Any) -> None:
        self.solver = solver
        self.options = options

    @abstractmethod
    def solve(self, problem: StepProblem, cache: dict[str, Any]) -> StepSolution:
        """Solve one step; ``cache`` carries warm starts between steps."""

    @classmethod
    def compatible_solvers(cls, **options: Any) -> list[str]:
        """Available backends that can solve this model's problems (with conversions)."""
        return []


_MODELS: dict[str, type[ContactModel]] = {}


def register_model(name: str) -> Callable[[type[ContactModel]], type[ContactModel]]:
    """Class decorator registering a contact model under ``name``."""

    def wrap(cls: type[ContactModel]) -> type[ContactModel]:
        cls.name = name
        _MODELS[name] = cls
        return cls

    return wrap


def model_names() -> list[str]:
    import contactlab.models  # noqa: F401  (registers the built-in models)

    return sorted(_MODELS)


def model_class(name: str) -> type[ContactModel]:
    """The contact-model class registered as ``name``."""
    import contactlab.models  # noqa: F401

    if name not in _MODELS:
        raise UnknownNameError("model", name, list(_MODELS))
    return _MODELS[name]


def make_model(name: str, solver: str, **options: Any) -> ContactModel:
    """Build the contact model ``name`` that solves with backend ``solver``."""
    return model_class(name)(solver, **options)
