"""Compiled kernels: cached in the user cache folder, never the source tree, and the
first compilation in a process is announced on one line."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import solvers

ROOT = Path(solvers.__file__).resolve().parent.parent


def imports_njit(source: str) -> bool:
    """Whether a module imports ``njit`` itself (code it only generates as text does not count)."""
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module in ("numba", "solvers.jit")
        and any(alias.name == "njit" for alias in node.names)
        for node in ast.parse(source).body
    )


def _python(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python ARGV`` in a fresh process (``check``: a failure raises)."""
    return subprocess.run(
        [sys.executable, *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=600,
        check=True,
    )


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "xdg"), **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def test_kernels_cache_in_the_user_cache_folder_not_the_source_tree(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        from contactlab.collision import boxes
        from solvers.backends import pgs_kernel
        print(boxes._clip._cache._cache_file._index_path)
        print(pgs_kernel._row_w._cache._cache_file._index_path)
    """)
    out = _python(["-c", code], _env(tmp_path), tmp_path).stdout.split()
    expected = tmp_path / "xdg" / "contactlab" / "numba"
    assert len(out) == 2 and all(Path(p).is_relative_to(expected) for p in out)
    assert not any(Path(p).is_relative_to(ROOT) for p in out)
    # a folder the user chose is kept
    mine = tmp_path / "mine"
    out = _python(["-c", code], _env(tmp_path, NUMBA_CACHE_DIR=str(mine)), tmp_path).stdout.split()
    assert all(Path(p).is_relative_to(mine) for p in out)


def test_first_compilation_is_announced_once_and_a_cached_run_is_silent(tmp_path: Path) -> None:
    script = tmp_path / "kernels_demo.py"
    script.write_text(
        textwrap.dedent("""
        from solvers import jit
        COMPILE_SECONDS = 3.0

        @jit.njit
        def twice(x):
            return 2.0 * x

        @jit.njit
        def thrice(x):
            return 3.0 * x

        print(twice(1.5) + thrice(1.0))
    """)
    )
    from solvers.jit import kernel_fingerprint

    env = _env(tmp_path)
    cold = _python([str(script)], env, tmp_path)
    assert cold.stdout.strip() == "6.0"
    lines = [line for line in cold.stderr.splitlines() if "compiling kernels" in line]
    # two kernels compiled, one line: the module's first compilation
    assert lines == [
        f"contactlab: compiling kernels of __main__ (first use, about 3 s; cached in "
        f"{tmp_path / 'xdg' / 'contactlab' / 'numba' / kernel_fingerprint()}; "
        "`contactlab warmup` compiles all ahead)"
    ]
    warm = _python([str(script)], env, tmp_path)
    assert warm.stdout.strip() == "6.0" and "compiling kernels" not in warm.stderr


def test_every_module_with_kernels_is_found_and_declares_its_compile_time() -> None:
    from solvers.jit import kernel_modules

    found = set()
    declared = set()
    for package in ("contactlab", "solvers"):
        for path in (ROOT / package).rglob("*.py"):
            source = path.read_text()
            if imports_njit(source):
                name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
                found.add(name)
                tree = ast.parse(source)
                if any(
                    isinstance(node, ast.AnnAssign)
                    and ast.unparse(node.target) == "COMPILE_SECONDS"
                    for node in tree.body
                ):
                    declared.add(name)
    found.discard("solvers.jit")
    assert set(kernel_modules("contactlab", "solvers")) == found
    assert {"contactlab.collision.boxes", "solvers.numerics.fc_kernels"} <= found
    assert declared == found


def test_the_cache_folder_changes_with_every_kernel_module_source() -> None:
    """numba checks a cached kernel against its own file only; the cache's subfolder is the
    digest of every kernel module's source, so a change to a callee's module (which a caller's
    cached code holds compiled in) moves every kernel to a new folder."""
    import importlib.util

    from solvers.jit import kernel_fingerprint, kernel_modules

    modules = kernel_modules("solvers", "contactlab")
    assert len(modules) > 20
    for name in modules:
        spec = importlib.util.find_spec(name)
        assert spec is not None and spec.origin is not None
        assert b"njit" in Path(spec.origin).read_bytes(), name  # covered by the digest
    assert len(kernel_fingerprint()) == 16
