"""The exception tree of contactlab: one root, one class per kind of mistake.

Every message names the offending thing (a body, a joint, a parameter) and
what would fix it; exceptions carry the data as attributes where useful.
"""

from __future__ import annotations


class ContactlabError(Exception):
    """Root of every error raised by contactlab."""


class ConfigurationError(ContactlabError, ValueError):
    """A scene, body, joint, force or parameter is ill-formed."""


class UnknownNameError(ContactlabError, KeyError):
    """A scenario, formulation, model, solver or parameter name is not registered.

    Attributes
    ----------
    kind : what was looked up ("scenario", "model", ...).
    name : the unknown name.
    known : the names that exist.
    """

    def __init__(self, kind: str, name: str, known: list[str]) -> None:
        self.kind, self.name, self.known = kind, name, sorted(known)
        listed = ", ".join(self.known) or "(none)"
        super().__init__(f"unknown {kind} {name!r}; known {kind}s: {listed}")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0])


class ParameterError(ConfigurationError):
    """A scenario parameter has an unknown name or a value of the wrong type."""


class StateError(ContactlabError, ValueError):
    """A state holds non-finite numbers or is inconsistent with its scene."""


class SingularSystemError(ContactlabError, ArithmeticError):
    """A KKT or mass system is singular (for example redundant joints)."""


class IncompatibleError(ContactlabError, ValueError):
    """A formulation, model and solver that cannot be combined."""


class StepFailure(ContactlabError, RuntimeError):
    """A time step could not be completed (the solver failed)."""


class ResultsError(ContactlabError, OSError):
    """A results folder is missing, incomplete, or would be overwritten."""


class DivergenceError(StepFailure):
    """A step produced a physically absurd state (see :mod:`contactlab.divergence`).

    Attributes
    ----------
    step : index of the step.
    quantity : what broke its bound (energy gain, drift, penetration, speed).
    value, bound : the value and the bound, in the quantity's unit.
    """

    status = "diverged"

    def __init__(
        self, message: str, *, step: int, quantity: str, value: float, bound: float
    ) -> None:
        super().__init__(message)
        self.step, self.quantity, self.value, self.bound = step, quantity, value, bound


class ModelFileWarning(UserWarning):
    """A model file (URDF, MJCF) holds something the scene does not represent, or repaired.

    One warning line names the element (link, joint, file) and what was done.
    """
