"""Compiled code of joints given by their transform: compiler lookup, compilation, disk cache.

The kernel source (:mod:`contactlab.joints.kernel_source`) is cached on disk, keyed by
a hash of the expression (or of the joint's definition text): the second time the
same joint is built no derivation runs and numba loads its own cache.  The folder is
``$CONTACTLAB_CACHE`` or ``$XDG_CACHE_HOME/contactlab`` (default
``~/.cache/contactlab``), under ``generated-joints/``.  With a C compiler (``$CC``,
``cc``, ``gcc``) the kernel is C, compiled here to a shared library beside its source.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from contactlab._lazy import lazy_import
from contactlab.joints.kernel_source import (
    CODEGEN_VERSION,
    c_wrapper,
    generate_c_source,
    generate_source,
    screw_factors_source,
)

if TYPE_CHECKING:
    import sympy as sp
else:
    sp = lazy_import("sympy")  # loading cached code needs no sympy

_LOADED: dict[str, ModuleType] = {}
_KEYS: dict[tuple, str] = {}


def cache_dir() -> Path:
    """Folder holding the generated joint sources (created on demand)."""
    root = os.environ.get("CONTACTLAB_CACHE")
    if root:
        base = Path(root)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = (Path(xdg) if xdg else Path.home() / ".cache") / "contactlab"
    path = base / "generated-joints"
    path.mkdir(parents=True, exist_ok=True)
    return path


def expression_key(
    factors: Sequence[sp.Matrix], coordinates: Sequence[sp.Symbol], parameters: Sequence[sp.Symbol]
) -> str:
    """SHA-256 (hex, 24 characters) of the factors, their symbols and the generator version.

    Remembered per process (printing a large expression takes a while, and a
    scene builds many joints of the same expression).
    """
    memo = (tuple(factors), tuple(coordinates), tuple(parameters), backend())
    if memo in _KEYS:
        return _KEYS[memo]
    # the printed text, not srepr: symbol assumptions do not change the derivatives
    text = "|".join(
        [CODEGEN_VERSION, *(str(F.tolist()) for F in factors)]
        + [str(tuple(coordinates)), str(tuple(parameters))]
        + ([] if backend() == "numba" else [f"backend {backend()}"])
    )
    key = hashlib.sha256(text.encode()).hexdigest()[:24]
    _KEYS[memo] = key
    return key


@cache
def module_digest(name: str) -> str:
    """SHA-256 (hex, 16 characters) of the source file of module ``name`` ("" if none)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):  # __main__ of an interactive session
        return ""
    origin = spec.origin if spec is not None else None
    if not origin or not os.path.isfile(origin):
        return ""
    return hashlib.sha256(Path(origin).read_bytes()).hexdigest()[:16]


def source_key(source: str, coordinates: Sequence[str], parameters: Sequence[str]) -> str:
    """SHA-256 (hex, 24 characters) of a joint's definition *text*: no sympy needed.

    ``source`` must fix the expression (the text of ``Q``, or the builder and the
    sources of the modules that write it out); the coordinate and parameter names,
    the generator version and the backend complete the key.
    """
    text = "|".join(
        [
            "source",
            CODEGEN_VERSION,
            backend(),
            source,
            repr(list(coordinates)),
            repr(list(parameters)),
        ]
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def cached_kernel(key: str) -> Callable[..., None] | None:
    """The compiled kernel of ``key`` from memory or disk, or ``None`` (no sympy involved)."""
    if key in _LOADED:
        return _LOADED[key].evaluate
    path = cache_dir() / f"joint_{key}.py"
    if not path.exists() or (backend() == "c" and not path.with_suffix(".so").exists()):
        return None
    _LOADED[key] = _import(path, key)
    return _LOADED[key].evaluate


def python_kernel(key: str) -> Callable[..., None]:
    """The kernel of ``key`` without numba compilation (ctypes for C, the Python source else)."""
    module = _LOADED[key]
    return getattr(module, "evaluate_py", None) or module.evaluate.py_func


def screw_factors(key: str, params: Sequence[float]) -> list | None:
    """``screw_factors(params)`` of the code of ``key`` (see :func:`screw_factors_source`)."""
    fn = getattr(_LOADED[key], "screw_factors", None)
    return None if fn is None else fn(params)


def is_generated(key: str) -> bool:
    """Whether the code of ``key`` is loaded or on disk (nothing to derive)."""
    return key in _LOADED or (cache_dir() / f"joint_{key}.py").exists()


def backend() -> str:
    """``"c"`` when a C compiler is found (``$CC``, ``cc``, ``gcc``), else ``"numba"``.

    ``$CONTACTLAB_JOINT_BACKEND`` (``c`` or ``numba``) chooses explicitly.  The C
    backend compiles a generated joint in about a second with the system's C
    compiler; numba takes tens of seconds for the large surface joints.
    """
    chosen = os.environ.get("CONTACTLAB_JOINT_BACKEND", "").strip().lower()
    if chosen == "numba":
        return "numba"
    if chosen not in ("", "c"):
        raise ValueError(f"CONTACTLAB_JOINT_BACKEND must be 'c' or 'numba', got {chosen!r}")
    if _compiler() is not None:
        return "c"
    if chosen == "c":
        raise RuntimeError("CONTACTLAB_JOINT_BACKEND=c but no C compiler (cc, gcc) was found")
    return "numba"


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc"):
        if name:
            found = shutil.which(name)
            if found:
                return found
    return None


def _compile_c(source: str, so: Path) -> None:
    cc = _compiler()
    if cc is None:  # pragma: no cover - backend() checked it
        raise RuntimeError("no C compiler found")
    # per-process file names, renamed when complete: processes generating the same joint
    # at once (parallel test workers) never read each other's partial files
    c_tmp = so.with_suffix(f".{os.getpid()}.c")
    c_tmp.write_text(source)
    tmp = so.with_suffix(f".{os.getpid()}.so")
    cmd = [cc, "-O2", "-fPIC", "-shared", "-o", str(tmp), str(c_tmp), "-lm"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"compiling {c_tmp} failed: {done.stderr.strip()[:2000]}")
    os.replace(c_tmp, so.with_suffix(".c"))
    os.replace(tmp, so)


def _import(path: Path, key: str) -> ModuleType:
    name = f"contactlab_generated_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover - importlib contract
        raise ImportError(f"cannot import generated joint code {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def compiled_kernel(
    factors: Sequence[sp.Matrix],
    coordinates: Sequence[sp.Symbol],
    parameters: Sequence[sp.Symbol],
    key: str | None = None,
) -> tuple[str, Callable[..., None], bool]:
    """``(key, evaluate, was_cached)`` for ``Q = prod(factors)``: from memory, disk or new."""
    key = key or expression_key(factors, coordinates, parameters)
    if key in _LOADED:
        return key, _LOADED[key].evaluate, True
    path = cache_dir() / f"joint_{key}.py"
    cached = path.exists() and (backend() == "numba" or path.with_suffix(".so").exists())
    if not cached:
        if backend() == "c":
            so = path.with_suffix(".so")
            _compile_c(generate_c_source(factors, coordinates, parameters, key), so)
            source = c_wrapper(key, len(coordinates), len(parameters))
            source += screw_factors_source(factors, coordinates, parameters)
        else:
            source = generate_source(factors, coordinates, parameters, key)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)
    module = _import(path, key)
    _LOADED[key] = module
    return key, module.evaluate, cached
