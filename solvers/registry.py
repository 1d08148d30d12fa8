"""Backend registry: discovery through the ``solvers.backends`` entry-point group.

The built-in backends are listed in :data:`solvers.backends.BACKENDS`, which
``pyproject.toml`` registers under the group; a third-party package adds its
own by declaring an entry point in the same group whose value is a sequence
of :class:`~solvers.backends.base.Backend` subclasses.
"""

from __future__ import annotations

import warnings
from importlib.metadata import entry_points
from typing import Any

from solvers.backends.base import Backend
from solvers.errors import SolverNotFound

ENTRY_POINT_GROUP = "solvers.backends"

#: Names that stand for a default member of a family.
ALIASES = {"cvxpy": "cvxpy:clarabel"}

_classes: dict[str, type[Backend]] | None = None
_instances: dict[str, Backend] = {}


def _register(table: dict[str, type[Backend]], classes: Any, origin: str) -> None:
    for cls in classes:
        if not (isinstance(cls, type) and issubclass(cls, Backend) and cls.name):
            warnings.warn(
                f"{origin}: {cls!r} is not a named Backend subclass; ignored", stacklevel=3
            )
            continue
        if cls.name in table and table[cls.name] is not cls:
            warnings.warn(
                f"{origin}: backend name {cls.name!r} is already registered; "
                "the first registration is kept",
                stacklevel=3,
            )
            continue
        table[cls.name] = cls


def registered() -> dict[str, type[Backend]]:
    """Every known backend class by name (built-ins first, then entry points)."""
    global _classes
    if _classes is None:
        from solvers.backends import BACKENDS

        table: dict[str, type[Backend]] = {}
        _register(table, BACKENDS, "solvers.backends")
        for ep in entry_points(group=ENTRY_POINT_GROUP):
            try:
                classes = ep.load()
            except Exception as err:  # a broken plug-in must not break the layer
                warnings.warn(
                    f"entry point {ep.name!r} ({ep.value}) failed to load: {err}", stacklevel=2
                )
                continue
            _register(table, classes, f"entry point {ep.name!r}")
        _classes = table
    return _classes


def _dynamic(name: str) -> type[Backend] | None:
    """Backends created on demand for family members not listed statically."""
    if name.startswith("qpsolvers:"):
        from solvers.backends.qpsolvers_ import make_qpsolvers_backend

        return make_qpsolvers_backend(name.split(":", 1)[1])
    return None


def available_backends() -> list[str]:
    """Names of the backends whose packages are installed."""
    return [name for name, cls in registered().items() if cls.availability()[0]]


def backend_table() -> list[dict[str, Any]]:
    """Every known backend with its availability, the reason if not, and its capabilities."""
    rows = []
    for name, cls in registered().items():
        ok, reason = cls.availability()
        rows.append(
            {
                "name": name,
                "available": ok,
                "reason": reason,
                "extra": cls.extra,
                "kind": cls.kind,
                "forms": cls.forms(),
                "warm_start": cls.supports_warm_start,
                "tolerance": cls.tolerance,
                "default_tol": cls.default_tol,
                "description": cls.description,
            }
        )
    return rows


def backend_class(name: str) -> type[Backend]:
    """The backend class registered as ``name`` (aliases resolved), available or not.

    Raises
    ------
    SolverNotFound
        If the name is unknown; the message lists the installed backends.
    """
    key = ALIASES.get(name, name)
    cls = registered().get(key) or _dynamic(key)
    if cls is None:
        raise SolverNotFound(name, available_backends())
    return cls


def get_backend(name: str) -> Backend:
    """The (cached) backend instance registered as ``name``.

    Raises
    ------
    SolverNotFound
        If the name is unknown or the backend's package is missing; the
        message lists the installed backends and the pip extra to install.
    """
    key = ALIASES.get(name, name)
    if key in _instances:
        return _instances[key]
    cls = backend_class(name)
    ok, reason = cls.availability()
    if not ok:
        raise SolverNotFound(name, available_backends(), reason)
    inst = cls()
    _instances[key] = inst
    return inst
