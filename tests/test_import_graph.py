"""The import graph of ``contactlab/`` and ``solvers/``, read from the source with ``ast``.

Facts:

- no import cycle among the modules of either package.  Imports inside functions
  count (they run too; imports under ``if TYPE_CHECKING:`` do not), and so does the
  package a module lives in: importing ``a.b.c`` from outside ``a.b`` first runs
  ``a/b/__init__.py`` and whatever that imports;
- no import inside a function closes a cycle: moved to the top of its module, each
  would import at load time like any other (a function-level import may defer a
  slow or optional dependency, never hide a cycle);
- no cycle between packages: a subpackage (``contactlab.maximal``) or a top-level
  module (``solvers.frictional``) is one node, so the formulations and the joint
  vocabulary below them, or the problem types and the backends, import one way;
- ``solvers/`` never imports ``contactlab`` (layers: imports point down).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("contactlab", "solvers")


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    return {
        _module_name(p, root): p
        for package in packages
        for p in sorted((root / package).rglob("*.py"))
    }


def _extensions(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> set[str]:
    """Compiled extension modules (built from a ``.c`` source at install): importing one
    runs no Python of the project, so it is a node without edges."""
    return {_module_name(p, root) for package in packages for p in (root / package).rglob("*.c")}


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return skip


def _function_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(id(n) for stmt in ast.iter_child_nodes(node) for n in ast.walk(stmt))
    return inside


def _imports(
    name: str, path: Path, known: set[str], packages: tuple[str, ...] = PACKAGES
) -> list[tuple[str, bool]]:
    """``(module, in_a_function)`` for every import of a ``packages`` module in ``name``."""
    tree = ast.parse(path.read_text(), str(path))
    skip = _type_checking_nodes(tree)
    local = _function_nodes(tree)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        found: list[str] = []
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.append(sub if sub in known else module)
        out += [(m, id(node) in local) for m in found if m.split(".")[0] in packages]
    return out


def imports_of(name: str, path: Path, known: set[str]) -> set[str]:
    """Modules (of ``known``, or any ``contactlab``/``solvers`` name) that ``name`` imports."""
    return {m for m, _ in _imports(name, path, known)}


def _ancestors(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _loads(importer: str, module: str, known: set[str]) -> set[str]:
    """What importing ``module`` from ``importer`` runs: it, and the ``__init__`` of each
    package above it that is not already running above ``importer``."""
    own = set(_ancestors(importer)) | {importer}
    return {module} | {a for a in _ancestors(module) if a in known and a not in own}


def runtime_graph(
    root: Path = ROOT, packages: tuple[str, ...] = PACKAGES
) -> tuple[dict[str, set[str]], list[tuple[str, str]]]:
    """The module graph as imports run (function-level imports and packages' ``__init__``
    included), and the function-level edges ``(importer, module)`` in it."""
    modules = _modules(root, packages)
    known = set(modules) | _extensions(root, packages)
    graph: dict[str, set[str]] = {name: set() for name in known}
    local: list[tuple[str, str]] = []
    for name, path in modules.items():
        for module, in_function in _imports(name, path, known, packages):
            if module not in known:
                continue
            loads = _loads(name, module, known) - {name}
            graph[name] |= loads
            local += [(name, m) for m in sorted(loads) if in_function]
    return graph, sorted(set(local))


def import_graph() -> dict[str, set[str]]:
    """The module graph as written (each import statement one edge)."""
    modules = _modules()
    known = set(modules)
    return {name: imports_of(name, path, known) & known for name, path in modules.items()}


def package_graph(graph: dict[str, set[str]], depth: int = 2) -> dict[str, set[str]]:
    """``graph`` with modules merged by their first ``depth`` name parts: at ``depth=2``
    each subpackage and each top-level module of ``contactlab``/``solvers`` is one node."""

    def node(module: str) -> str:
        return ".".join(module.split(".")[:depth])

    out: dict[str, set[str]] = {}
    for a, targets in graph.items():
        out.setdefault(node(a), set())
        for b in targets:
            out.setdefault(node(b), set())
            if node(b) != node(a):
                out[node(a)].add(node(b))
    return out


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for w in graph.get(todo.pop(), ()):
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return seen


def cycle_closing(graph: dict[str, set[str]], local: list[tuple[str, str]]) -> list[str]:
    """The function-level edges ``a -> b`` of ``graph`` from whose target ``a`` is reached."""
    return [f"{a} -> {b}" for a, b in local if a in _reachable(graph, b)]


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
    # imported in a function
    assert "solvers.backends.qpsolvers_" in graph["solvers.backend_registry"]
    assert "solvers.conversions" in graph["solvers.dispatch"]  # from solvers import conversions
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_reader_sees_a_cycle_through_a_package_init_held_open_in_a_function(
    tmp_path: Path,
) -> None:
    # pa.x imports pb.y in a function; pb/__init__ imports pb.z, which imports pa.x: the
    # statement moved to the top of pa.x would import pa.x again while it loads.
    _write(
        tmp_path,
        {
            "pa/__init__.py": "",
            "pa/x.py": "def f():\n    from pb.y import g\n    return g\n",
            "pb/__init__.py": "from pb import z\n",
            "pb/y.py": "g = 1\n",
            "pb/z.py": "from pa.x import f\n",
        },
    )
    graph, local = runtime_graph(tmp_path, ("pa", "pb"))
    assert graph["pa.x"] == {"pb.y", "pb"}  # the package's __init__ runs first
    assert graph["pb"] == {"pb.z"}  # a package's own modules do not load it again
    assert cycles(graph) == [["pa.x", "pb", "pb.z"]]
    assert cycle_closing(graph, local) == ["pa.x -> pb"]
    assert cycles(package_graph(graph, depth=1)) == [["pa", "pb"]]
    # without pb/__init__'s import the function-level import closes nothing
    _write(tmp_path, {"pb/__init__.py": ""})
    graph, local = runtime_graph(tmp_path, ("pa", "pb"))
    assert cycles(graph) == [] and cycle_closing(graph, local) == []
    assert ("pa.x", "pb.y") in local
    # but the packages still import each other (pa.x -> pb.y, pb.z -> pa.x)
    assert cycles(package_graph(graph, depth=1)) == [["pa", "pb"]]


def test_no_import_cycles_in_contactlab_or_solvers() -> None:
    graph, _ = runtime_graph()
    assert cycles(graph) == []


def test_no_function_level_import_closes_a_cycle() -> None:
    graph, local = runtime_graph()
    assert local  # the reader sees function-level imports (optional or slow dependencies)
    assert cycle_closing(graph, local) == []


def test_no_cycles_between_packages() -> None:
    graph, _ = runtime_graph()
    packages = package_graph(graph)
    assert "contactlab.joints" in packages["contactlab.maximal"]
    assert "contactlab.joints" in packages["contactlab.reduced"]
    assert cycles(packages) == []


def test_solvers_never_imports_contactlab() -> None:
    modules = _modules()
    known = set(modules)
    upward = {
        name: sorted(m for m in imports_of(name, path, known) if m.startswith("contactlab"))
        for name, path in modules.items()
        if name.startswith("solvers")
    }
    assert {k: v for k, v in upward.items() if v} == {}
