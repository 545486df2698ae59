"""The ``stepfork`` command: a thin typer app that parses, calls a library function, renders, exits.

Cold start matters (STYLE.md, "A responsive CLI"): ``stepfork --version`` is answered before typer is even
imported, help is rendered by plain click formatting (``rich_markup_mode=None``, so rich is not imported
for ``--help``), and every command module imports its library and rich inside the command function.

Adding a command is one module under :mod:`stepfork.cli.commands` that defines ``register(app)`` plus one
line in :data:`COMMANDS`.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (and re) before --version answers
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable, Sequence
    from typing import Any

    import typer

# command name -> module defining ``register(app: typer.Typer) -> None``; order is the help order, the
# order of the workflow (issue 13): record a run, check, read and see the bundle, replay it, compare,
# shrink, explore, keep it as a test, run the test, score the test; then the corpus and bundle chores.
COMMANDS: dict[str, str] = {
    "record": "stepfork.cli.commands.record",
    "validate": "stepfork.cli.commands.validate",
    "inspect": "stepfork.cli.commands.inspect",
    "view": "stepfork.cli.commands.view",
    "replay": "stepfork.cli.commands.replay",
    "diff": "stepfork.cli.commands.diff",
    "minimize": "stepfork.cli.commands.minimize",
    "fork": "stepfork.cli.commands.fork",
    "export": "stepfork.cli.commands.export",
    "run": "stepfork.cli.commands.run",
    "score": "stepfork.cli.commands.score",
    "check": "stepfork.cli.commands.check",
    "import": "stepfork.cli.commands.import_",
    "redact": "stepfork.cli.commands.redact",
    "upload": "stepfork.cli.commands.upload",
}

_VERSION_FLAGS = ("--version", "-V")


def _version() -> str:
    from stepfork.trace._version import __version__

    return __version__


def build_app() -> typer.Typer:
    """Return the typer application with every command of :data:`COMMANDS` registered."""
    from importlib import import_module

    import typer

    app = typer.Typer(
        name="stepfork",
        help="Record, replay and regression-test LLM agents (.sftrace bundles).",
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        no_args_is_help=True,
        context_settings={"help_option_names": ["--help"]},
    )

    def show_version(value: bool) -> None:
        # an eager option's callback runs while the command line is parsed, before click asks for a
        # command: `app(["--version"])` and typer's CliRunner answer too (issue 32), not only main()
        if value:
            typer.echo(f"stepfork {_version()}")
            raise typer.Exit(0)

    @app.callback()
    def _root(
        version: bool = typer.Option(
            False,
            "--version",
            "-V",
            help="Show the Stepfork version and exit.",
            is_eager=True,
            callback=show_version,
        ),
        debug: bool = typer.Option(False, "--debug", help="Show a traceback on unexpected errors."),
    ) -> None:
        """Stepfork: validate, inspect, replay, export and run .sftrace regression checks."""

    for module_name in COMMANDS.values():
        import_module(module_name).register(app)
    from stepfork.cli.output import with_json_errors

    for info in app.registered_commands:
        if info.callback is not None:
            # a command's --json (its as_json parameter) makes every early error JSON on stdout too
            info.callback = _interruptible(with_json_errors(info.callback))
    return app


_APP: list[typer.Typer] = []  # the app behind the module attribute ``app``, built on first use


def __getattr__(name: str) -> Any:
    """``app``: the typer application (:func:`build_app`), built once on first use (PEP 562), so that
    ``stepfork --version`` still answers before typer is imported. Programs and tests written against the
    earlier implementation run it as ``from stepfork.cli.main import app`` (issue 32), with typer's
    ``CliRunner().invoke(app, [...])`` or ``app()``; the console script is :func:`main`, which adds the
    help snapshot, the metavars, the quick ``validate`` and the one-line internal errors.

    Raises:
        AttributeError: any other name.
    """
    if name == "app":
        if not _APP:
            _APP.append(build_app())
        return _APP[0]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _interruptible(callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` (a command function) printing ``Interrupted.`` on stderr and exiting 130 (the shell's
    128 + SIGINT) on Ctrl-C. typer turns a KeyboardInterrupt into a silent exit 130 before :func:`main`
    could see it, so the command itself must say it. ``functools.wraps`` keeps the signature typer reads."""
    import functools

    @functools.wraps(callback)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return callback(*args, **kwargs)
        except KeyboardInterrupt:
            sys.stderr.write("Interrupted.\n")
            sys.stderr.flush()
            raise SystemExit(130) from None

    return run


def render_top_level_help() -> str:
    """Render ``stepfork --help`` with typer/click at 80 columns (click's own maximum width).

    The result is kept in :mod:`stepfork.cli._help` so ``stepfork --help`` can print it without importing
    typer (5.6x the interpreter's start-up on its own; docs/performance.md). ``python
    scripts/update_cli_help.py`` rewrites that snapshot; tests/e2e/test_cli_global.py fails when it is stale.
    """
    import contextlib
    import io

    import typer.main

    from stepfork.cli.guide import apply_metavars

    command = apply_metavars(typer.main.get_command(build_app()))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        # the very code path `stepfork --help` takes (click caps the width at 80 columns)
        command.main(args=["--help"], prog_name="stepfork", standalone_mode=False)
    return out.getvalue()


def _debug_requested(args: Sequence[str]) -> bool:
    """True when ``--debug`` appears before the command name, or STEPFORK_DEBUG=1 is set."""
    if os.environ.get("STEPFORK_DEBUG") == "1":
        return True
    for arg in args:
        if arg in COMMANDS:
            return False
        if arg == "--debug":
            return True
    return False


OWN_PROCESS = False
"""True when :func:`main` runs as the ``stepfork`` console script (no ``argv`` given): the process exists
for this one command, so ``replay`` may keep it sealed after its verdict (``stepfork.cli.scriptrun.
keep_sealed``); False when a program or a test calls ``main(argv)`` in a process of its own."""


def main(argv: Sequence[str] | None = None) -> None:
    """Run the CLI on ``argv`` (default ``sys.argv[1:]``) and exit with the command's exit code.

    Exit codes follow spec/cli-reference.txt, plus 130 after Ctrl-C (``Interrupted.`` on stderr; the
    shell's convention, 128 + SIGINT). An unexpected exception prints one line and exits 1; ``--debug`` (or
    ``STEPFORK_DEBUG=1``) re-raises it so the traceback shows.
    """
    global OWN_PROCESS
    OWN_PROCESS = argv is None  # the console script: the process is the command's (main(argv): embedded)
    args = list(sys.argv[1:] if argv is None else argv)
    if args and args[0] in _VERSION_FLAGS:
        sys.stdout.write(f"stepfork {_version()}\n")
        raise SystemExit(0)
    if args and args[0] == "validate":
        from stepfork.cli._quick import quick_validate_command

        quick_validate_command(args[1:])  # exits when it proves the bundle valid, else returns
    if args == ["--help"] and not os.environ.get("STEPFORK_RENDER_HELP"):
        from stepfork.cli._help import TOP_LEVEL_HELP  # the snapshot of render_top_level_help()

        sys.stdout.write(TOP_LEVEL_HELP)
        raise SystemExit(0)

    debug = _debug_requested(args)
    try:
        import typer.main

        from stepfork.cli.guide import apply_metavars

        command = apply_metavars(typer.main.get_command(build_app()))  # PATH-style metavars (issue 13)
        command.main(args=args, prog_name="stepfork", standalone_mode=True)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted.\n")
        raise SystemExit(130) from None
    except Exception as exc:
        if debug:
            raise
        sys.stderr.write(f"stepfork: internal error: {type(exc).__name__}: {exc} (rerun with --debug)\n")
        raise SystemExit(1) from None


if __name__ == "__main__":  # pragma: no cover
    main()
