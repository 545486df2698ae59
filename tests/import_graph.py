"""The import graph of Stepfork's own modules, read with ``ast`` (nothing is imported), and its cycles.

What counts as an edge (docs/decisions.md, "Import cycles"):

- every ``import`` and ``from ... import`` statement, wherever it sits: module level, class bodies,
  ``try`` blocks, and function bodies. A function-level import is still a dependency: one placed there to
  dodge a cycle still is a cycle, and one placed there for cold-start speed or an optional SDK is harmless
  in an acyclic graph, so both are counted and no cycle may hide behind either;
- ``importlib.import_module("literal.name")`` calls with a literal absolute name;
- not the imports under ``if TYPE_CHECKING:`` (they never run: annotations only);
- not string tables resolved at run time (the PEP 562 ``__getattr__`` of ``stepfork.analysis`` and the
  facade name their modules in a dict): those packages are the public faces, and no module below them
  imports them back (the test checks ``from stepfork.analysis import`` inside the package separately).

An edge goes from the importing module to the most specific module of this tree the statement names:
``from a.b import c`` is an edge to ``a.b.c`` when that module exists, else to ``a.b``. The implicit import
of parent packages (``import a.b.c`` runs ``a/__init__`` first) is not an edge: a package being initialized
is already in ``sys.modules``, and counting it would make every package a cycle with its own modules.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Edge:
    """One import: ``source`` imports ``target`` at ``path``:``line`` (``function`` True inside a def)."""

    source: str
    target: str
    path: Path
    line: int
    function: bool


def module_files(roots: Iterable[Path]) -> dict[str, Path]:
    """Map every module's dotted name to its file, for each ``src`` root (a package's name is its
    ``__init__``'s)."""
    modules: dict[str, Path] = {}
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            if parts:
                modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.AST, function: bool = False) -> Iterator[tuple[ast.AST, bool]]:
    """Every node below ``tree`` with whether it sits inside a function, skipping TYPE_CHECKING blocks."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield child, function
                yield from _statements(child, function)
            continue
        yield node, function
        inner = function or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        yield from _statements(node, inner)


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def imported_names(module: str, path: Path) -> Iterator[tuple[list[str], int, bool]]:
    """Each import of ``module`` as (candidate targets, most specific first; line; inside a function)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node, function in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield [alias.name], node.lineno, function
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = _package_of(module, path).split(".")
                anchor = package[: len(package) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield [f"{base}.{alias.name}", base], node.lineno, function
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
        ):
            yield [node.args[0].value], node.lineno, function


def import_edges(modules: dict[str, Path]) -> list[Edge]:
    """The edges between the given modules (imports of anything else are left out)."""
    edges: list[Edge] = []
    for module, path in modules.items():
        for candidates, line, function in imported_names(module, path):
            target = next((name for name in candidates if name in modules), None)
            if target is None:
                # `import a.b.c` of a missing leaf: the nearest existing ancestor is what runs
                parts = candidates[-1].split(".")
                while parts and ".".join(parts) not in modules:
                    parts.pop()
                target = ".".join(parts) or None
            if target is not None and target != module:
                edges.append(Edge(module, target, path, line, function))
    return edges


def find_cycles(edges: Iterable[Edge]) -> list[list[Edge]]:
    """One cycle (as its edges, in order) per strongly connected component of more than one module.

    Tarjan's algorithm finds the components; inside each, a breadth-first search from its smallest
    module back to itself gives a shortest cycle to name.
    """
    graph: dict[str, dict[str, Edge]] = {}
    for edge in edges:
        graph.setdefault(edge.source, {}).setdefault(edge.target, edge)
        graph.setdefault(edge.target, {})
    cycles = []
    for component in _components(graph):
        if len(component) > 1:
            cycles.append(_shortest_cycle(graph, min(component), component))
    return sorted(cycles, key=lambda cycle: cycle[0].source)


def _components(graph: dict[str, dict[str, Edge]]) -> list[set[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        # iterative Tarjan: (node, iterator over its successors)
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    found.append(component)
    return found


def _shortest_cycle(graph: dict[str, dict[str, Edge]], start: str, component: set[str]) -> list[Edge]:
    previous: dict[str, Edge] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node]):
                if succ not in component:
                    continue
                edge = graph[node][succ]
                if succ == start:
                    path = [edge]
                    while path[0].source != start:
                        path.insert(0, previous[path[0].source])
                    return path
                if succ not in previous:
                    previous[succ] = edge
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle through {start} in its component")  # pragma: no cover


def describe(cycle: list[Edge], root: Path | None = None) -> str:
    """A cycle as one line per import: ``a -> b (path:line, in a function)``."""
    lines = []
    for edge in cycle:
        where = edge.path.relative_to(root) if root else edge.path
        inside = ", in a function" if edge.function else ""
        lines.append(f"  {edge.source} -> {edge.target} ({where}:{edge.line}{inside})")
    return "\n".join(lines)
