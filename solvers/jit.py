"""Compiled kernels: one place that configures numba before any kernel module loads it.

Every kernel module imports ``njit`` from here instead of from numba, so that

* the compiled machine code is cached in a user cache folder
  (``$NUMBA_CACHE_DIR`` when the user set it, else ``$XDG_CACHE_HOME`` or
  ``~/.cache``, then ``contactlab/numba``; ``%LOCALAPPDATA%`` on Windows),
  never in the source tree, and is compiled once per machine;
* the first compilation in a process prints one line on stderr saying that
  kernels are being compiled and roughly how long it takes, instead of a
  silent wait (``contactlab warmup`` compiles every kernel ahead).

The environment variable must be set before numba is first imported; a
program that imported numba itself earlier keeps numba's own setting.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

#: The modules holding compiled kernels (a test checks that every module
#: importing :func:`njit` is listed), with the seconds of CPU a cold compilation
#: of their kernels took (``contactlab warmup`` with an empty cache on a 2-core
#: 2026 machine; ``None`` where not measured), for the first-use message.
KERNEL_MODULES: dict[str, float | None] = {
    "contactlab.collision.boxes": 25.0,
    "contactlab.collision.convex": 30.0,
    "contactlab.collision.cylinders": 25.0,
    "contactlab.jointfriction.local": 2.0,
    "contactlab.models.delassus": 3.0,
    "contactlab.reduced._kernels": 17.0,
    "contactlab.reduced._fast": 15.0,
    "contactlab.reduced._derivative_kernels": 12.0,
    "contactlab.reduced._general_kernels": 13.0,
    "solvers.backends.pgs_kernel": 4.0,
    "solvers.backends.fc_kernels": 8.0,
    "solvers.backends.fc_local": 4.0,
    "solvers.backends.fc_ipm": 2.0,
    "solvers.backends.fc_newton": 2.0,
    "solvers.backends.block_cholesky": None,
}


def cache_dir() -> Path:
    """The folder numba caches compiled kernels in (see the module docstring)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "contactlab" / "numba"


os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir()))

from numba import njit as _numba_njit  # noqa: E402  (after NUMBA_CACHE_DIR is set)
from numba.core import event as _event  # noqa: E402

_announced: set[str] = set()


class _FirstCompile(_event.Listener):  # type: ignore[misc]
    """Prints one line when a process starts compiling the kernels of a module."""

    def on_start(self, event: Any) -> None:
        module = getattr(event.data["dispatcher"].py_func, "__module__", "") or ""
        if module in _announced or module not in KERNEL_MODULES:
            return
        _announced.add(module)
        seconds = KERNEL_MODULES[module]
        cost = "some seconds" if seconds is None else f"about {seconds:.0f} s"
        print(
            f"contactlab: compiling kernels of {module} (first use, {cost}; cached in "
            f"{cache_dir()}; `contactlab warmup` compiles all ahead)",
            file=sys.stderr,
            flush=True,
        )

    def on_end(self, event: Any) -> None:
        pass


_event.register("numba:compile", _FirstCompile())


def silence_first_use() -> None:
    """Print no first-use line from now on (``contactlab warmup`` reports its own progress)."""
    _announced.update(KERNEL_MODULES)


def njit(*args: Any, **kwargs: Any) -> Any:
    """numba's ``njit`` with the on-disk cache switched on (``cache=True``)."""
    kwargs.setdefault("cache", True)
    return _numba_njit(*args, **kwargs)
