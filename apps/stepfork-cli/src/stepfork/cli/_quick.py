"""``stepfork validate`` of a clean bundle answered before typer and pydantic are imported (issue 31).

Cold start: importing typer costs several times the interpreter's start-up, and the full validation imports
pydantic and the schema 0.1 models. :func:`quick_validate_command` takes the plain forms of the command,
``validate PATH`` and ``validate --partial PATH`` (options in any order, nothing else), and asks
``stepfork.trace._quick_validation`` for a verdict proven without pydantic, orjson or dataclasses. When it
proves the bundle valid with nothing to warn about, the process prints exactly what the typer command
prints for that bundle (tests/e2e/test_cli_quick_validate.py compares both) and exits 0; in every other
case (another option, a bundle with an issue or a warning, a bundle made by ``stepfork import``) it
returns and the typer command runs as before.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence

# The extension file of a bundle made by `stepfork import`, whose warnings the typer command prints
# (stepfork.replay.imported.IMPORT_EXTENSION; tests/e2e/test_cli_quick_validate.py keeps them equal).
IMPORT_FILE = "otel-import.json"


def quick_validate_command(args: Sequence[str]) -> None:
    """Answer ``stepfork validate`` ``args`` (the arguments after ``validate``) and exit 0 when the bundle
    is proven valid with no warning; return without output otherwise (the typer command decides)."""
    options = [arg for arg in args if arg.startswith("-")]
    paths = [arg for arg in args if not arg.startswith("-")]
    if len(paths) != 1 or any(option != "--partial" for option in options) or len(options) > 1:
        return
    if os.environ.get("STEPFORK_DEBUG") == "1":
        return
    path = paths[0]
    if os.path.lexists(os.path.join(path, IMPORT_FILE)):
        return
    from stepfork.trace._quick_validation import quick_check_names

    names = quick_check_names(path, strict=not options)
    if names is None:
        return
    from stepfork.cli.colour import echo

    for name in names:
        echo(f"✓ {name}")
    sys.stdout.write("\nValidation passed.\n")
    sys.stdout.flush()
    raise SystemExit(0)
