"""Modules imported on first use (for heavy, rarely needed dependencies such as sympy).

``sp = lazy_import("sympy")`` binds a stand-in module whose first attribute
access imports the real one, so ``import contactlab`` does not pay sympy's
import time (about a second) unless a symbolic joint is actually built.  The
stand-in is not put in ``sys.modules``: ``"sympy" in sys.modules`` stays
false until sympy has really been imported (code that loads generated joints
from the disk cache never imports it).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType
from typing import Any


class _LazyModule(ModuleType):
    """Stands for the module of its name; imports it at the first attribute access."""

    def __getattr__(self, attr: str) -> Any:
        value = getattr(importlib.import_module(self.__name__), attr)
        setattr(self, attr, value)  # later accesses skip the import machinery
        return value


def lazy_import(name: str) -> ModuleType:
    """The module ``name``: the one already imported, else one loaded on first use."""
    if name in sys.modules:
        return sys.modules[name]
    if importlib.util.find_spec(name) is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    return _LazyModule(name)


__all__ = ["lazy_import"]
