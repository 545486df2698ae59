"""Reading an exported test for ``score`` with :mod:`ast` only (spec "score": never import or run it).

Module-level constants are read with :func:`ast.literal_eval`; the bundle path from the expression shapes
``stepfork export`` writes (analysis/export.py) plus ``Path(__file__).parent / 'x'`` and plain literals.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path
from typing import Any

from stepfork.analysis._shared.render import ABSENT


class ScoreError(ValueError):
    """Score cannot answer (exit 2, spec "score").

    Attributes:
        code: ``unreadable_test``, ``not_a_literal``, ``bundle_expression``, ``bundle_not_found``,
            ``unreadable_bundle``, ``no_expectation``, ``no_recorded_run`` or ``invalid_expectation``.
        path: the file concerned; line: the 1-based line in the test, when known.
    """

    def __init__(self, message: str, *, code: str, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.path = path
        self.line = line


def module_constants(source: str, filename: str) -> dict[str, tuple[ast.expr, int]]:
    """Return ``{NAME: (value expression, line)}`` of the module-level assignments of ``source``.

    Raises ScoreError ``unreadable_test`` on a syntax error.
    """
    try:
        tree = ast.parse(source, filename=filename)
    except SyntaxError as exc:
        raise ScoreError(
            f"cannot read test {filename}: {exc.msg} (line {exc.lineno})",
            code="unreadable_test",
            path=filename,
            line=exc.lineno,
        ) from None
    found: dict[str, tuple[ast.expr, int]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            found[node.targets[0].id] = (node.value, node.lineno)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            found[node.target.id] = (node.value, node.lineno)
    return found


def literal(consts: dict[str, tuple[ast.expr, int]], name: str, filename: str, default: Any = ABSENT) -> Any:
    """Return the literal value of constant ``name`` (``default`` when absent).

    Raises ScoreError ``not_a_literal`` (``<path>:<line>: NAME is not a literal value ...``).
    """
    if name not in consts:
        return default
    node, line = consts[name]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        raise ScoreError(
            f"{filename}:{line}: {name} is not a literal value; score reads the literals the export wrote",
            code="not_a_literal",
            path=filename,
            line=line,
        ) from None


def _is_here(node: ast.expr, consts: dict[str, tuple[ast.expr, int]], depth: int = 0) -> bool:
    """True for ``Path(__file__).parent``, ``Path(__file__).resolve().parent`` or a name bound to one."""
    if isinstance(node, ast.Name) and node.id in consts and depth == 0:
        return _is_here(consts[node.id][0], consts, depth + 1)
    return ast.unparse(node) in (
        "Path(__file__).parent",
        "Path(__file__).resolve().parent",
        "pathlib.Path(__file__).parent",
        "pathlib.Path(__file__).resolve().parent",
    )


def read_bundle_path(consts: dict[str, tuple[ast.expr, int]], test: Path) -> Path:
    """Return the bundle path ``TRACE_PATH`` names (relative to the test for ``HERE /`` forms).

    Raises ScoreError ``bundle_expression`` for any other expression (spec "score").
    """
    filename = str(test)
    if "TRACE_PATH" not in consts:
        raise ScoreError(
            f"{filename}: the test names no TRACE_PATH; pass --bundle",
            code="bundle_expression",
            path=filename,
        )
    node, line = consts["TRACE_PATH"]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return Path(node.value)  # a plain string is relative to the working directory, as at run time
    if (
        isinstance(node, ast.Call)
        and ast.unparse(node.func) in ("Path", "pathlib.Path")
        and len(node.args) == 1
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return Path(node.args[0].value)
    if (
        isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Div)
        and isinstance(node.right, ast.Constant)
        and isinstance(node.right.value, str)
        and _is_here(node.left, consts)
    ):
        return Path(os.path.normpath(test.resolve().parent / node.right.value))
    raise ScoreError(
        f"{filename}:{line}: cannot read the bundle path from this expression; pass --bundle",
        code="bundle_expression",
        path=filename,
        line=line,
    )
