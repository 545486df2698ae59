"""Read the constants of a test ``stepfork export`` wrote, with :mod:`ast` only (never importing it).

Module-level constants are literals (``ast.literal_eval``) except the two paths, which have exactly one
shape each (see :mod:`stepfork.analysis.export`): ``TRACE_PATH = HERE / '<relative path>'`` and
``IMPORT_ROOT = HERE / '<relative path>'`` or ``None``, with ``HERE = Path(__file__).resolve().parent``.
Used by the exporter to check what it generated and by the runner before it launches pytest.

A test of a program (``stepfork export BUNDLE -- python agent.py ARGS``) also holds ``COMMAND`` (a list of
str literals) and ``ENTRYPOINT = None``; it is read like the others.

``RAISE_AS`` (``None`` or ``{"<recorded error type>": "MODULE:CLASS"}``) is read like the other literals;
:func:`check_raise_as` is the shape both the exporter and the runner require of it.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

__all__ = [
    "CONSTANT_NAMES",
    "HERE_EXPRESSION",
    "check_raise_as",
    "command_secret_problem",
    "entrypoint_form_problem",
    "is_import_path",
    "read_exported_constants",
]

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
    "RAISE_AS",
    "NETWORK",
    "ALLOW_HOSTS",
    "ALLOW_COMMANDS",
    "ORDERING",
    "IGNORE",
    "IGNORE_OUTPUT",
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


def is_import_path(text: object) -> bool:
    """True when ``text`` is ``MODULE:ATTRIBUTE`` with a dotted module path and a dotted attribute path
    of Python identifiers (``app.errors:RateLimited``, ``app:Outer.Inner``): the form
    :func:`stepfork.replay.entrypoint.resolve_entrypoint` accepts (it refuses others as ``bad_form``)."""
    if not isinstance(text, str):
        return False
    module, sep, attribute = text.partition(":")
    return bool(
        sep
        and all(part.isidentifier() for part in module.split("."))
        and all(part.isidentifier() for part in attribute.split("."))
    )


def entrypoint_form_problem(text: object) -> str | None:
    """None when ``text`` has the ``MODULE:FUNCTION`` form (:func:`is_import_path`), else the one line
    ``stepfork replay`` prints under "Unable to resolve entrypoint." for it (spec cli-reference.txt
    "replay", Common errors): ``invalid entrypoint '<text>'; expected the form MODULE:FUNCTION``.

    The one form check of ``export`` (before a test is written) and ``run`` (before a test is launched),
    so that neither accepts an entrypoint that replay refuses; nothing is imported. Never raises.
    """
    if is_import_path(text):
        return None
    return f"invalid entrypoint {text!r}; expected the form MODULE:FUNCTION"


def check_raise_as(value: object) -> dict[str, str] | None:
    """Return ``value`` as the ``RAISE_AS`` mapping of an exported test, or None for None.

    The shape: a dict of non-empty strings (recorded error types, qualified or short; the bundle's text,
    kept as data) to ``"MODULE:CLASS"`` strings (:func:`is_import_path`; the classes the test imports,
    named by the user). The classes are not imported here.

    Raises:
        ValueError: any other shape, naming the first offending entry.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        kind = type(value).__name__
        raise ValueError(f"RAISE_AS must be None or a dict of 'TYPE': 'MODULE:CLASS', not {kind}")
    for key, target in value.items():
        if not isinstance(key, str) or not key.strip():
            raise ValueError(f"RAISE_AS keys must be recorded error type names, got {key!r}")
        if not is_import_path(target):
            raise ValueError(f"RAISE_AS[{key!r}] must be a 'MODULE:CLASS' string, got {target!r}")
    return dict(value)


def command_secret_problem(command: Sequence[str]) -> str | None:
    """None when no argument of ``command`` (``["python", "agent.py", ARGS...]``) holds a secret, else the
    one line saying which does: ``argument <index> of the command holds a secret (<it, redacted>); an
    exported test would write it into its file: have the program read it from an environment variable
    instead`` (index 0 is the interpreter).

    An argument holds a secret when :func:`stepfork.trace.command_redaction.redact_command` changes it:
    credential patterns and registered secrets, and the value of an option named like a secret
    (``--api-key VALUE``, ``--db-password=VALUE``: ``is_secret_option``). The one rule of ``stepfork
    export -- COMMAND``, :func:`stepfork.analysis.export.export_pytest_test`, the ``program.json`` that
    ``stepfork record --`` writes and replay's ``Entrypoint`` line (CASES C5: nothing secret reaches an
    exported test; a redacted copy of the command would run another program, so it is refused, not
    rewritten). Never raises for a list of str.
    """
    from stepfork.trace.command_redaction import redact_command

    for index, (given, shown) in enumerate(zip(command, redact_command(command), strict=True)):
        if shown != given:
            return (
                f"argument {index} of the command holds a secret ({shown}); an exported test would write "
                "it into its file: have the program read it from an environment variable instead"
            )
    return None
