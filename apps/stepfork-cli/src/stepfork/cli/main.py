"""``stepfork.cli.main``: the earlier implementation's module of the CLI (issue 32).

``app`` is the typer application of :mod:`stepfork.cli.app` (the same object as ``stepfork.cli.app.app``,
built on first use), so ``from stepfork.cli.main import app`` and ``CliRunner().invoke(app, ["validate",
"run.sftrace"])`` keep working; ``main`` is the console script ``stepfork``.
"""

from stepfork.cli.app import app, main

__all__ = ["app", "main"]
