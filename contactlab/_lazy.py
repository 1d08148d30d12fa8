"""Modules imported on first use (for heavy, rarely needed dependencies such as sympy).

``sp = lazy_import("sympy")`` binds a module object whose code runs at the
first attribute access, so ``import contactlab`` does not pay sympy's import
time (about a second) unless a symbolic joint is actually built.  This is
the recipe of :class:`importlib.util.LazyLoader`.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """The module ``name``: the one already imported, else one loaded on first use."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


__all__ = ["lazy_import"]
