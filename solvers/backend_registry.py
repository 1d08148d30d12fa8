"""Backend registry: a :class:`~solvers.plugins.Registry` over the ``solvers.backends`` group.

The built-in backends are listed in :data:`solvers.backends.BACKENDS`, which
``pyproject.toml`` registers under the group; a third-party package adds its
own by declaring an entry point in the same group whose value is a
:class:`~solvers.backends.base.Backend` subclass or a sequence of them.
"""

from __future__ import annotations

from typing import Any

from solvers.backends.base import Backend
from solvers.errors import SolverNotFound
from solvers.plugins import Registry

ENTRY_POINT_GROUP = "solvers.backends"

#: Names that stand for a default member of a family.
ALIASES = {"cvxpy": "cvxpy:clarabel"}


def _is_backend(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, Backend) and bool(cls.name)


BACKENDS: Registry[type[Backend]] = Registry(
    "solver backend",
    ENTRY_POINT_GROUP,
    builtin=("solvers.backends:BACKENDS",),
    accept=_is_backend,
    unknown=lambda name, known: SolverNotFound(name, available_backends()),
)

_instances: dict[str, Backend] = {}


def register_backend(cls: type[Backend]) -> type[Backend]:
    """Register a backend class under its ``name`` (also usable as a class decorator)."""
    return BACKENDS.register(cls.name, cls, f"register_backend({cls.__name__})")


def registered() -> dict[str, type[Backend]]:
    """Every known backend class by name (built-ins first, then entry points)."""
    return BACKENDS.items()


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
                "tolerance": cls.tolerance.accuracy,
                "default_tol": cls.tolerance.request,
                "description": cls.description,
                "origin": BACKENDS.origin(name),
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
    cls = BACKENDS.items().get(key) or _dynamic(key)
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
