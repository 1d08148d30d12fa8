"""The built-in scenario library, registered through the ``contactlab.scenarios`` entry point.

Each module defines scenarios with :func:`contactlab.scenario.scenario`;
``SCENARIOS`` gathers every :class:`~contactlab.scenario.Scenario` object found
in the modules listed below.  Add a module here to add scenarios.
"""

from __future__ import annotations

import importlib

from contactlab.scenario import Scenario

_MODULES = (
    "basic",
    "contact",
    "redmax",
    "joint_friction",
    "redmax_deformable",
    "general_joints",
    "models",
    "driven",
    "robots",
)


def _collect() -> dict[str, Scenario]:
    found: dict[str, Scenario] = {}
    for name in _MODULES:
        try:
            module = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as err:
            if err.name == f"{__name__}.{name}":
                continue  # module not part of this installation
            raise
        for value in vars(module).values():
            if isinstance(value, Scenario):
                found[value.name] = value
    return found


SCENARIOS: dict[str, Scenario] = _collect()
