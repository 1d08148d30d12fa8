"""Compiled kernels: one place that configures numba before any kernel module loads it.

Every kernel module imports ``njit`` from here instead of from numba, so that

* the compiled machine code is cached in a user cache folder
  (``$NUMBA_CACHE_DIR`` when the user set it, else ``$XDG_CACHE_HOME`` or
  ``~/.cache``, then ``contactlab/numba/<digest of the kernels' sources>``;
  ``%LOCALAPPDATA%`` on Windows), never in the source tree, and is compiled once per
  machine and version of the kernels (:func:`kernel_fingerprint`);
* the first compilation in a process prints one line on stderr saying that
  kernels are being compiled and roughly how long it takes, instead of a
  silent wait (``contactlab warmup`` compiles every kernel ahead);
* a benchmark can measure the time spent inside compiled code
  (:func:`kernel_accounting`, opt-in; see there).

Kernel accounting.  :func:`njit` returns numba's own dispatcher, unchanged, and
only notes it in a registry.  Inside ``with kernel_accounting() as account:``
every module-level reference to a registered dispatcher, and to the functions
of the project's C extension (:data:`C_EXTENSIONS`), in every loaded module is
replaced by a timing proxy, and put back on exit; outside the block nothing is
wrapped and a call costs what numba's dispatcher costs.  The proxy adds the
calling thread's CPU time (``time.thread_time_ns``) of the call, dispatch
included, to ``account`` and counts the call.  A kernel called by another
kernel is bound at compile time and never passes through the proxy (numba
types the proxy as the original dispatcher: ``_numba_type_``), and a proxied
call made while another proxied call is running (a C function calling back
into Python) is not counted again, so nested time is counted once.  Not seen:
references held in containers, closures or instances (none on the contact
step's path) and ``qdldl``'s factorization (used by ``ipm`` only when
bilateral rows border its system; no box pile has them).

The environment variable must be set before numba is first imported; a
program that imported numba itself earlier keeps numba's own setting.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from time import thread_time_ns
from typing import Any

#: A module owns compiled kernels when it makes them with :func:`njit` from here
#: (:func:`kernel_modules` finds them by reading the source); it declares the CPU
#: seconds a cold compilation of its kernels takes as ``COMPILE_SECONDS`` (for the
#: first-use message; ``None`` where not measured).  No list of modules lives here.
_SILENT = "*"  # in ``_announced``: print no first-use line at all


def imports_njit(source: str) -> bool:
    """Whether module source imports ``njit`` at its top level (from here or from numba);
    code a module only generates as text does not count."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module in ("numba", "solvers.jit")
        and any(alias.name == "njit" for alias in node.names)
        for node in ast.parse(source).body
    )


def kernel_modules(*packages: str) -> list[str]:
    """Names of the modules of ``packages`` that own compiled kernels, sorted.

    Read from the source files (:func:`imports_njit`); nothing is imported but the
    packages themselves.
    """
    out = []
    for package in packages:
        spec = importlib.util.find_spec(package)
        for location in (spec.submodule_search_locations or []) if spec else []:
            base = Path(location).parent
            for path in sorted(Path(location).rglob("*.py")):
                parts = list(path.relative_to(base).with_suffix("").parts)
                if parts[-1] == "__init__":
                    parts.pop()
                name = ".".join(parts)
                if name != __name__ and imports_njit(path.read_text(encoding="utf-8")):
                    out.append(name)
    return sorted(set(out))


def kernel_fingerprint() -> str:
    """A digest of the source of every module of ``solvers`` and ``contactlab`` that
    mentions ``njit``: the name of the cache's subfolder.

    numba checks a cached kernel against its own file only, while a kernel that calls
    a kernel of another module holds that callee's compiled code: after an edit or an
    upgrade of the callee's module the caller's cache entry would still run the old
    callee.  A subfolder per version of the kernels' sources rules that out; kernels
    compile again (on first use, or by ``contactlab warmup``) after any of them changes.
    """
    digest = hashlib.sha1()
    root = Path(__file__).resolve().parent.parent
    for package in ("solvers", "contactlab"):
        for path in sorted((root / package).rglob("*.py")):
            text = path.read_bytes()
            if b"njit" in text:
                digest.update(path.relative_to(root).as_posix().encode())
                digest.update(text)
    return digest.hexdigest()[:16]


def cache_dir() -> Path:
    """The folder numba caches compiled kernels in (see the module docstring): the user's
    ``NUMBA_CACHE_DIR`` as given, else ``contactlab/numba/<kernel_fingerprint()>`` in the
    user cache folder."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        base = Path(os.environ["LOCALAPPDATA"])
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "contactlab" / "numba" / _FINGERPRINT


_FINGERPRINT = kernel_fingerprint()
os.environ.setdefault("NUMBA_CACHE_DIR", str(cache_dir()))

from numba import njit as _numba_njit  # noqa: E402  (after NUMBA_CACHE_DIR is set)
from numba.core import event as _event  # noqa: E402

_announced: set[str] = set()
#: Modules whose kernels :func:`njit` made in this process.
_OWNERS: set[str] = set()


class _FirstCompile(_event.Listener):  # type: ignore[misc]
    """Prints one line when a process starts compiling the kernels of a module."""

    def on_start(self, event: Any) -> None:
        module = getattr(event.data["dispatcher"].py_func, "__module__", "") or ""
        if _SILENT in _announced or module in _announced or module not in _OWNERS:
            return
        _announced.add(module)
        seconds = getattr(sys.modules.get(module), "COMPILE_SECONDS", None)
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
    _announced.add(_SILENT)


#: Every dispatcher :func:`njit` made, by ``id`` (for :func:`kernel_accounting`).
_DISPATCHERS: dict[int, Any] = {}

#: Compiled extension modules whose functions :func:`kernel_accounting` also times: the
#: project's C extension, and SuperLU's factorisation (``gstrf``, behind
#: ``scipy.sparse.linalg.splu``; the box law's Newton finish factors once per iteration).
#: A ``SuperLU`` object's ``solve`` is a method, not a module function, and is not timed.
C_EXTENSIONS = ("contactlab.reduced._cfast", "scipy.sparse.linalg._dsolve._superlu")


def _register(dispatcher: Any) -> Any:
    _DISPATCHERS[id(dispatcher)] = dispatcher
    _OWNERS.add(getattr(getattr(dispatcher, "py_func", None), "__module__", "") or "")
    return dispatcher


class _CompilerActivity(_event.Listener):  # type: ignore[misc]
    """Counts the times numba's compiler lock is taken: every kernel compiled or loaded
    from the cache, by any dispatcher (generated kernels too), takes it."""

    count = 0

    def on_start(self, event: Any) -> None:
        self.count += 1

    def on_end(self, event: Any) -> None:
        pass


_activity = _CompilerActivity()
_event.register("numba:compiler_lock", _activity)


def compiler_activity() -> int:
    """How often this process has entered numba's compiler (compiling or loading a kernel)."""
    return _activity.count


def compiled_signatures() -> int:
    """How many compiled signatures the process holds (loaded from the cache or compiled).

    The count grows exactly when a kernel is called with argument types it had not
    been called with in this process: a one-time cost a timing should not include.
    """
    return sum(len(d.overloads) for d in list(_DISPATCHERS.values()))


def njit(*args: Any, **kwargs: Any) -> Any:
    """numba's ``njit`` with the on-disk cache switched on (``cache=True``).

    Returns numba's dispatcher itself (noted for :func:`kernel_accounting`).
    """
    kwargs.setdefault("cache", True)
    made = _numba_njit(*args, **kwargs)
    if args and callable(args[0]):  # @njit / njit(f, ...): the dispatcher
        return _register(made)

    def decorate(func: Any) -> Any:  # @njit(...): numba's decorator, then note the result
        return _register(made(func))

    return decorate


@dataclass
class KernelAccount:
    """Calls and thread CPU time [ns] spent inside compiled code (:func:`kernel_accounting`)."""

    calls: int = 0
    ns: int = 0
    #: per kernel (``module.name``): [calls, ns]
    per_kernel: dict[str, list[int]] = field(default_factory=dict)
    _depth: int = 0

    @property
    def seconds(self) -> float:
        return 1e-9 * self.ns

    def reset(self) -> None:
        self.calls, self.ns = 0, 0
        self.per_kernel.clear()


class _Timed:
    """A compiled callable that adds its calls' thread CPU time to an account."""

    __slots__ = ("__wrapped__", "_account", "_name")

    def __init__(self, kernel: Any, account: KernelAccount, name: str) -> None:
        self.__wrapped__ = kernel
        self._account = account
        self._name = name

    @property
    def _numba_type_(self) -> Any:  # numba compiles a caller against the kernel itself
        return self.__wrapped__._numba_type_

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__wrapped__, name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        account = self._account
        if account._depth:
            return self.__wrapped__(*args, **kwargs)
        account._depth = 1
        t0 = thread_time_ns()
        try:
            return self.__wrapped__(*args, **kwargs)
        finally:
            dt = thread_time_ns() - t0
            account._depth = 0
            account.calls += 1
            account.ns += dt
            entry = account.per_kernel.setdefault(self._name, [0, 0])
            entry[0] += 1
            entry[1] += dt


def _compiled_callables() -> dict[int, tuple[Any, str]]:
    """``id -> (callable, name)`` of every registered dispatcher and C extension function."""
    out: dict[int, tuple[Any, str]] = {}
    for d in list(_DISPATCHERS.values()):
        func = getattr(d, "py_func", d)
        out[id(d)] = (d, f"{getattr(func, '__module__', '?')}.{getattr(func, '__name__', '?')}")
    for name in C_EXTENSIONS:
        module = sys.modules.get(name)
        if module is None:
            continue
        for attr, value in vars(module).items():
            if callable(value) and type(value).__name__ == "builtin_function_or_method":
                out[id(value)] = (value, f"{name}.{attr}")
    return out


@contextmanager
def kernel_accounting() -> Iterator[KernelAccount]:
    """Time every call of compiled code from Python while the block runs (module docstring).

    Yields the :class:`KernelAccount` the calls are added to; on exit every module
    reference is the original object again.  Not reentrant.
    """
    account = KernelAccount()
    compiled = _compiled_callables()
    proxies: dict[int, _Timed] = {}
    patched: list[tuple[dict[str, Any], str, Any]] = []
    for module in list(sys.modules.values()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attr, value in list(namespace.items()):
            found = compiled.get(id(value))
            if found is None or found[0] is not value:
                continue
            proxy = proxies.get(id(value))
            if proxy is None:
                proxy = proxies[id(value)] = _Timed(value, account, found[1])
            patched.append((namespace, attr, value))
            namespace[attr] = proxy
    try:
        yield account
    finally:
        for namespace, attr, value in patched:
            namespace[attr] = value
