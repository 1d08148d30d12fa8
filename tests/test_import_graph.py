"""The import graph of ``contactlab/`` and ``solvers/``, read from the source with ``ast``.

Facts: no import cycle among the modules of either package (imports inside
functions count: they run too; imports under ``if TYPE_CHECKING:`` do not),
and ``solvers/`` never imports ``contactlab`` (layers: imports point down).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contactlab", "solvers")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
    }


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules (of ``known``, or any ``contactlab``/``solvers`` name) that ``name`` imports."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                out.add(sub if sub in known else module)
    return {m for m in out if m.split(".")[0] in PACKAGES}


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    known = set(modules)
    return {name: imports_of(name, path, known) & known for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in graph[v]:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_reader_sees_relative_function_level_and_submodule_imports() -> None:
    graph = import_graph()
    assert "solvers.backends.base" in graph["solvers.backends.kkt"]
    assert "solvers.backends.qpsolvers_" in graph["solvers.backend_registry"]  # imported in a function
    assert "solvers.conversions" in graph["solvers.dispatch"]  # from solvers import conversions
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_in_contactlab_or_solvers() -> None:
    assert cycles(import_graph()) == []


def test_solvers_never_imports_contactlab() -> None:
    modules = _modules()
    known = set(modules)
    upward = {
        name: sorted(m for m in imports_of(name, path, known) if m.startswith("contactlab"))
        for name, path in modules.items()
        if name.startswith("solvers")
    }
    assert {k: v for k, v in upward.items() if v} == {}
