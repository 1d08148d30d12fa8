"""A small generic registry backed by an entry-point group.

Every selectable family (solver backends here; formulations, contact models,
constraints, joint kinds and scenarios in ``contactlab``) is one
:class:`Registry`: built-in members register themselves when their modules
are imported (``builtin`` lists those modules), and any installed package
adds members by declaring an entry point in the registry's group.  An entry
point's value may be

- one object: registered under the entry point's name;
- a mapping ``{name: object}`` or a sequence of objects carrying ``name``:
  each registered under its name;
- a module (or anything else) whose import registers its members through
  :meth:`Registry.register` (``None`` returned by a callable value counts too).

A broken plug-in is reported with a warning and skipped, so it never breaks
the framework; a name registered twice keeps its first registration.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from importlib.metadata import entry_points
from types import ModuleType
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Named members of one family, from built-in modules and an entry-point group.

    Parameters
    ----------
    what
        Words for one member in messages (``"formulation"``, ``"solver backend"``).
    group
        The entry-point group third-party packages fill.
    builtin
        Modules whose import registers the built-in members, or ``"module:attr"``
        values read like an entry point's.
    accept
        Predicate a member must satisfy (else it is skipped with a warning).
    unknown
        ``unknown(name, known_names)`` builds the exception raised by :meth:`get`.
    """

    def __init__(
        self,
        what: str,
        group: str,
        *,
        builtin: Sequence[str] = (),
        accept: Callable[[Any], bool] | None = None,
        unknown: Callable[[str, list[str]], Exception] | None = None,
    ) -> None:
        self.what = what
        self.group = group
        self.builtin = tuple(builtin)
        self._accept = accept
        self._unknown = unknown
        self._members: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._loaded = False
        self._loading = False
        self._origin = ""  # the entry point being loaded (for members its import registers)

    def register(self, name: str, member: T, origin: str = "") -> T:
        """Add ``member`` under ``name`` (a second registration of a name is ignored, warned)."""
        origin = origin or self._origin
        if self._accept is not None and not self._accept(member):
            warnings.warn(
                f"{origin or 'register'}: {member!r} is not a valid {self.what}; ignored",
                stacklevel=2,
            )
            return member
        if name in self._members and self._members[name] is member:
            return member  # the same member declared twice (e.g. by a module and its entry point)
        if name in self._members:
            warnings.warn(
                f"{origin or 'register'}: {self.what} name {name!r} is already registered "
                f"(by {self._origins[name] or 'the framework'}); the first registration is kept",
                stacklevel=2,
            )
            return member
        self._members[name] = member
        self._origins[name] = origin
        return member

    def unregister(self, name: str) -> None:
        """Forget ``name`` (for a member registered only for a while, e.g. in a test)."""
        self._members.pop(name, None)
        self._origins.pop(name, None)

    def reload(self) -> None:
        """Forget the members that came from entry points and read the group again.

        For an environment whose installed packages changed (a plug-in installed
        or removed while the program runs); built-in members stay.
        """
        for name in [n for n, origin in self._origins.items() if origin]:
            self.unregister(name)
        self._loaded = False
        self.load()

    def decorator(self, name: str) -> Callable[[T], T]:
        """``@registry.decorator("name")``: register the decorated object under ``name``."""

        def wrap(member: T) -> T:
            return self.register(name, member)

        return wrap

    def load(self) -> None:
        """Import the built-in modules and every entry point of the group (once)."""
        if self._loaded or self._loading:
            return
        self._loading = True
        try:
            for spec in self.builtin:
                module, _, attr = spec.partition(":")
                imported = importlib.import_module(module)
                if attr:
                    self._add(attr, getattr(imported, attr), "")
            for ep in entry_points(group=self.group):
                origin = f"entry point {ep.name!r} ({ep.value})"
                self._origin = origin
                try:
                    value = ep.load()
                except Exception as err:  # a broken plug-in must not break the framework
                    warnings.warn(f"{origin} failed to load: {err}", stacklevel=2)
                    continue
                finally:
                    self._origin = ""
                self._add(ep.name, value, origin)
            self._loaded = True
        finally:
            self._loading = False

    def _add(self, name: str, value: Any, origin: str) -> None:
        if value is None or isinstance(value, ModuleType):
            return  # importing it registered its members
        if isinstance(value, Mapping):
            for key, member in value.items():
                self.register(str(key), member, origin)
        elif isinstance(value, (list, tuple)):
            for member in value:
                self.register(str(getattr(member, "name", "") or name), member, origin)
        else:
            self.register(name, value, origin)

    def names(self) -> list[str]:
        """Registered names, in registration order (built-ins first)."""
        self.load()
        return list(self._members)

    def items(self) -> dict[str, T]:
        """``{name: member}`` for every registered member."""
        self.load()
        return dict(self._members)

    def origin(self, name: str) -> str:
        """Where ``name`` came from: ``""`` for the framework, else the entry point."""
        self.load()
        return self._origins.get(name, "")

    def get(self, name: str) -> T:
        """The member registered as ``name``; raises the registry's ``unknown`` error otherwise."""
        self.load()
        if name not in self._members:
            if self._unknown is not None:
                raise self._unknown(name, list(self._members))
            raise LookupError(
                f"unknown {self.what} {name!r}; known: {', '.join(self._members) or 'none'}"
            )
        return self._members[name]

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())
