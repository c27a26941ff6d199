"""The package's import graph has no cycle.

Every ``import chorustic...`` / ``from chorustic... import ...`` of every module is an edge, the ones
inside functions (imported lazily) included: a lazy import hides a cycle from Python, not from the
reader. ``from package import name`` is an edge to the module that defines ``name`` when ``name`` is a
submodule or a name the package's ``__init__`` re-exports from one of its modules (imported there, or named in
the ``_HOMES`` table of a package that imports them on first use); the package
``__init__`` files themselves are facades (they import their own modules) and are not nodes.
"""

from __future__ import annotations

import ast
from pathlib import Path

import chorustic

ROOT = Path(chorustic.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _reexports(modules: dict[str, Path]) -> dict[str, dict[str, str]]:
    """package -> {name: module it is imported from} (the re-exports of each ``__init__``)."""
    out: dict[str, dict[str, str]] = {}
    for name, path in modules.items():
        if path.name != "__init__.py":
            continue
        table = out.setdefault(name, {})
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("chorustic"):
                for alias in node.names:
                    table[alias.asname or alias.name] = node.module
            # a lazy facade (PEP 562 __getattr__): `_HOMES = {name: submodule}`
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "_HOMES" for t in node.targets):
                table.update({k: f"{name}.{v}" for k, v in ast.literal_eval(node.value).items()})
    return out


def _edges(name: str, path: Path, modules: dict[str, Path], reexports) -> set[str]:
    packages = {n for n, p in modules.items() if p.name == "__init__.py"}

    def target(module: str, attr: str | None) -> str | None:
        for _ in range(5):  # follow re-exports of re-exports
            if attr is not None and f"{module}.{attr}" in modules:
                return f"{module}.{attr}"
            if module in packages:
                if attr is None or attr not in reexports.get(module, {}):
                    return None
                module, attr = reexports[module][attr], attr
                continue
            return module if module in modules else None
        return None

    edges = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("chorustic"):
                    t = target(alias.name, None)
                    if t:
                        edges.add(t)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("chorustic"):
                for alias in node.names:
                    t = target(node.module, alias.name)
                    if t:
                        edges.add(t)
    edges.discard(name)
    return edges


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    reexports = _reexports(modules)
    return {
        name: _edges(name, path, modules, reexports)
        for name, path in modules.items()
        if path.name != "__init__.py"
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_sees_lazy_imports():
    graph = import_graph()
    assert "chorustic.model.chorustic" in graph["chorustic.model.official"]  # imported inside a function
    assert "chorustic.io" in graph["chorustic.model.checkpoint"]


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles (each a set of modules importing each other): " + "; ".join(
        " <-> ".join(c) for c in found
    )


#: The package's floors, lowest first (issue 70): a module imports its own floor and the floors below it,
#: never one above (lazy imports inside functions included). The paths of a results folder
#: (``results_layout``) and a method's fingerprint (``methods.fingerprint``) sit low so that the configuration
#: and the run plan never reach up into ``evaluation``. A new top-level module or package must be given a floor.
FLOORS = [
    {"errors", "io", "paths", "lazy_imports", "class_tree", "processes", "resampling", "results_layout"},
    {"data", "protocols", "stats", "hub", "prior"},
    {"methods", "model"},
    {"inference", "training"},
    {"config"},
    {"resources"},
    {"run_plan"},
    {"evaluation", "bill"},
    {"reports"},
    {"testing", "commands", "cli", "__main__"},
]


def _floor(module: str) -> int:
    top = module.split(".")[1] if "." in module else module
    for i, names in enumerate(FLOORS):
        if top in names:
            return i
    raise AssertionError(f"{module}: its top-level name {top!r} has no floor in tests/test_import_graph.py FLOORS")


def test_imports_only_point_down():
    graph = import_graph()
    up = sorted(f"{a} -> {b}" for a, bs in graph.items() for b in bs if _floor(b) > _floor(a))
    assert not up, "imports reaching a higher floor (move the shared piece down, or import the other way): " + \
        "; ".join(up)


def test_the_floor_check_sees_an_upward_import():
    assert _floor("chorustic.config") > _floor("chorustic.methods.base")
    assert _floor("chorustic.evaluation.results") > _floor("chorustic.run_plan") > _floor("chorustic.config")
