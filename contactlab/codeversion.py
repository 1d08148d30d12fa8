"""The version of the code that makes a run: package version and a hash of the sources.

Cached runs (sweeps, studies) are reused only when both their specification
and this version match, so a change to any model, formulation, solver or
scenario source re-runs what it may affect instead of reporting stale
numbers.  The hash covers every ``.py`` file of the ``contactlab``,
``solvers`` and ``scenarios`` packages (by relative path and content), so it
also sees edits that are not committed; the git commit is recorded beside it
in every summary (:func:`contactlab.results.git_commit`).
"""

from __future__ import annotations

import hashlib
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path

#: Packages whose sources determine a run's numbers.
SOURCE_PACKAGES = ("contactlab", "solvers", "scenarios")


def package_roots(names: tuple[str, ...] = SOURCE_PACKAGES) -> tuple[Path, ...]:
    """The folders of the installed packages ``names`` (those that are importable)."""
    roots: list[Path] = []
    for name in names:
        spec = find_spec(name)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(Path(p) for p in spec.submodule_search_locations)
    return tuple(roots)


def source_hash(roots: tuple[Path, ...]) -> str:
    """SHA-256 over the relative path and content of every ``.py`` file under ``roots``."""
    digest = hashlib.sha256()
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            digest.update(f"{root.name}/{path.relative_to(root).as_posix()}\0".encode())
            digest.update(path.read_bytes())
            digest.update(b"\0")
    return digest.hexdigest()


@cache
def _cached(roots: tuple[Path, ...]) -> str:
    try:
        package = version("contactlab")
    except PackageNotFoundError:
        package = "unknown"
    return f"{package}+{source_hash(roots)[:16]}"


def code_version() -> str:
    """``<package version>+<16 hex digits of the source hash>``, computed once per process."""
    return _cached(package_roots())
