"""Locate a test's ``MODULE:ATTRIBUTE`` (ENTRYPOINT, RAISE_AS classes) without importing anything.

Split from :mod:`._runner` (which re-exports :func:`resolve_entrypoint_location`) to keep
modules small. Modules are found with :class:`importlib.machinery.PathFinder` and read with :mod:`ast`;
no module is executed.
"""

from __future__ import annotations

import ast
import importlib.machinery
import os
import sys
from pathlib import Path

from stepfork.analysis.export._exported import entrypoint_form_problem

__all__ = ["resolve_entrypoint_location"]


def resolve_entrypoint_location(entrypoint: str, import_root: Path | None) -> str | None:
    """Check that ``MODULE:FUNCTION`` can be found without importing anything; return a problem or None.

    The module is located with ``PathFinder`` over ``[import_root, *sys.path]`` one dotted part at a time
    (packages are not executed). When the module is a ``.py`` source, the attribute (its first part for
    ``mod:Cls.run``) must be bound at its top level (def, class, assignment, import, also inside if/try/
    with/for blocks); a module defining ``__getattr__`` or using ``import *`` gets the benefit of the
    doubt; so does a module that is not Python source (compiled, or built into the interpreter:
    ``builtins:LookupError``). Returns None when found, else the problem in the words of spec "replay"
    (Common errors); the form check is :func:`._exported.entrypoint_form_problem`, shared
    with ``export``.
    """
    problem = entrypoint_form_problem(entrypoint)
    if problem is not None:
        return problem
    module_name, _, attribute = entrypoint.partition(":")
    if module_name in sys.builtin_module_names:  # in the interpreter, on no path: as a compiled module
        return None
    search: list[str] = ([str(import_root)] if import_root is not None else []) + [p or "." for p in sys.path]
    spec = None
    for part in module_name.split("."):
        spec = importlib.machinery.PathFinder.find_spec(part, search)
        if spec is None:
            return f"cannot import module {module_name!r}"
        search = list(spec.submodule_search_locations or [])
    if spec is None:  # pragma: no cover - guarded by the partition above
        return f"cannot import module {module_name!r}"
    origin = spec.origin
    if origin and origin.endswith(".py") and os.path.isfile(origin):
        try:
            tree = ast.parse(Path(origin).read_bytes(), filename=origin)
        except (SyntaxError, ValueError):
            return f"cannot import module {module_name!r} (syntax error in {origin})"
        if not _binds(tree, attribute.split(".")[0]):
            return f"module {module_name!r} has no attribute {attribute!r}"
    return None


def _binds(tree: ast.Module, name: str) -> bool:
    """True when module-level code (including if/try/with/for blocks, not function bodies) binds ``name``,
    or defines ``__getattr__`` or star-imports (then the attribute may exist: benefit of the doubt)."""
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            if node.name in (name, "__getattr__"):
                return True
            continue
        targets: list[ast.AST] = []
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any(a.name == "*" or (a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
        elif isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            targets = [node.target]
        elif isinstance(node, ast.With | ast.AsyncWith):
            targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
        stack.extend(
            child
            for child in ast.iter_child_nodes(node)
            if isinstance(child, ast.stmt | ast.excepthandler | ast.match_case)
        )
    return False
