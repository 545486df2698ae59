"""Read the constants of a test ``stepfork export`` wrote, with :mod:`ast` only (never importing it).

Module-level constants are literals (``ast.literal_eval``) except the two paths, which have exactly one
shape each (see :mod:`stepfork.analysis.export`): ``TRACE_PATH = HERE / '<relative path>'`` and
``IMPORT_ROOT = HERE / '<relative path>'`` or ``None``, with ``HERE = Path(__file__).resolve().parent``.
Used by the exporter to check what it generated and by the runner before it launches pytest.
"""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["CONSTANT_NAMES", "HERE_EXPRESSION", "read_exported_constants"]

CONSTANT_NAMES = (
    "TRACE_PATH",
    "IMPORT_ROOT",
    "ENTRYPOINT",
    "MODE",
    "LIVE_LLMS",
    "ALLOW_LIVE_TOOLS",
    "EXPECTATION",
    "HAS_EXPECTATION",
    "EXPECTATION_SOURCE",
    "TRAJECTORY_EXPECTATION",
)
_PATH_CONSTANTS = ("TRACE_PATH", "IMPORT_ROOT")
HERE_EXPRESSION = "Path(__file__).resolve().parent"


def read_exported_constants(source: str, *, filename: str = "<test>") -> dict[str, Any]:
    """Read the constants of an exported test with ``ast``, never importing or executing it.

    Returns a dict of the :data:`CONSTANT_NAMES` found; ``TRACE_PATH`` and ``IMPORT_ROOT`` are the
    relative path strings written after ``HERE /`` (``IMPORT_ROOT`` may be None).

    Raises:
        ValueError: a syntax error, or a module-level assignment that is not a literal (message
            ``<filename>:<line>: <NAME> is not a literal value``), or a path constant outside the shapes
            this module writes.
    """
    tree = ast.parse(source, filename=filename)
    found: dict[str, Any] = {}
    for node in tree.body:
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) != 1 or not isinstance(targets[0], ast.Name) or node.value is None:
            raise ValueError(f"{filename}:{node.lineno}: unsupported module-level assignment")
        name, value = targets[0].id, node.value
        if name == "HERE":
            if ast.unparse(value) != HERE_EXPRESSION:
                raise ValueError(f"{filename}:{node.lineno}: HERE is not {HERE_EXPRESSION}")
            continue
        if name in _PATH_CONSTANTS:
            found[name] = _read_path_expression(name, value, filename, node.lineno)
            continue
        try:
            found[name] = ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            raise ValueError(f"{filename}:{node.lineno}: {name} is not a literal value") from None
    return found


def _read_path_expression(name: str, value: ast.expr, filename: str, line: int) -> str | None:
    if name == "IMPORT_ROOT" and isinstance(value, ast.Constant) and value.value is None:
        return None
    if (
        isinstance(value, ast.BinOp)
        and isinstance(value.op, ast.Div)
        and isinstance(value.left, ast.Name)
        and value.left.id == "HERE"
        and isinstance(value.right, ast.Constant)
        and isinstance(value.right.value, str)
    ):
        return value.right.value
    raise ValueError(f"{filename}:{line}: cannot read the path from the {name} expression")
