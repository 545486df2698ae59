"""A CLI that guides (issue 13): the help's metavars, the modes each command accepts, typo suggestions.

- :func:`apply_metavars` gives every argument and option of the click command tree a ``PATH``-style
  metavar (``PATH``, ``MODULE:FUNCTION``, ``[frozen|live|forbidden|manual]``) instead of typer's
  ``{path}``, ``<str>`` or ``<list[str]>``; an option with a fixed set of values lists it.
- :func:`parse_mode` accepts a mode in any letter case and refuses an unknown one with the choices and the
  closest match (``difflib.get_close_matches``).

Option names need nothing here: click already answers ``--entrypiont`` with ``(Possible options:
--entrypoint)``.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

# The modes each command accepts, in the order the help lists them. tests/e2e/test_cli_guides.py checks
# them against the sets the commands enforce (stepfork.analysis.export.EXPORT_MODES, minimize.MODES).
MODES: dict[str, tuple[str, ...]] = {
    "replay": ("frozen", "live", "forbidden", "manual"),
    "minimize": ("frozen", "live"),
    "export": ("frozen", "live", "forbidden", "hybrid"),
}

# Option name (the Python parameter) -> metavar, where the type alone does not say what to give.
_OPTION_METAVARS = {
    "entrypoint": "MODULE:FUNCTION",
    "allow_live_tool": "TOOL",
    "live_llm": "LABEL",
    "override": "STEP=JSONFILE",
    "pytest_arg": "ARG",
    "step": "STEP",
    "attempts": "N",
    "expect_output": "JSONFILE",
    "expect_trajectory": "JSONFILE",
}
_TYPE_METAVARS = {"path": "PATH", "integer": "N", "float": "SECONDS", "text": "TEXT"}


def mode_metavar(command: str) -> str:
    """``[frozen|live|...]``: the ``--mode`` metavar of ``command``."""
    return "[" + "|".join(MODES[command]) + "]"


def apply_metavars(command: Any) -> Any:
    """Set ``PATH``-style metavars on every parameter of ``command`` (a click command or group, walked
    recursively) that has none; return ``command``.

    Arguments get their name in capitals (``PATH``, ``TEST``, ``BASELINE``), shown bare in the usage line
    when required (typer writes ``{path}``). Options get :data:`_OPTION_METAVARS`, ``--mode`` its choices
    (:data:`MODES`), any other its type's word (``PATH``, ``N``, ``SECONDS``, ``TEXT``).
    """
    for sub in getattr(command, "commands", {}).values():
        apply_metavars(sub)
    for param in getattr(command, "params", ()):
        kind = getattr(param, "param_type_name", "")
        if kind == "argument":
            if param.metavar is None:
                param.metavar = (param.name or "ARG").upper()
            shown = param.metavar if param.required else f"[{param.metavar}]"
            # typer's usage line wraps a required argument in braces, and its Arguments section adds the
            # type (``TEST <path>``): the instance attributes win over the class's methods
            param._usage_display_name = lambda shown=shown: shown
            param.display_type_rich = lambda ctx=None: None
        elif kind == "option" and not param.is_flag and param.metavar is None:
            if param.name == "mode" and command.name in MODES:
                param.metavar = mode_metavar(command.name)
            else:
                param.metavar = _OPTION_METAVARS.get(param.name or "", _type_word(param))
    return command


def _type_word(param: Any) -> str:
    """``PATH``, ``N``, ``SECONDS`` or ``TEXT`` for an option's value type: click's ``param.type.name``,
    or typer's ``type_descriptor`` (typer >= 0.2x keeps the annotation there instead)."""
    click_type = getattr(param, "__dict__", {}).get("type")
    if click_type is not None:
        return _TYPE_METAVARS.get(getattr(click_type, "name", ""), "TEXT")
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return "TEXT"
    if descriptor.is_path:
        return "PATH"
    annotation = descriptor.annotation
    if descriptor.is_list:
        annotation = getattr(annotation, "__args__", (str,))[0]
    return {int: "N", float: "SECONDS"}.get(annotation, "TEXT")


def closest(value: str, choices: list[str] | tuple[str, ...]) -> str | None:
    """The choice closest to ``value`` (case-insensitive, ``difflib.get_close_matches``), or None."""
    folded = {choice.casefold(): choice for choice in choices}
    found = difflib.get_close_matches(value.casefold(), list(folded), n=1, cutoff=0.7)
    return folded[found[0]] if found else None


def parse_mode(value: str, command: str) -> str:
    """``value`` as one of ``command``'s modes, in any letter case (``Frozen`` is ``frozen``).

    Raises:
        typer.Exit: (2) for an unknown mode, after ``Invalid replay mode turbo.`` (the spec's words) on
            stderr and a second line with the choices and the closest one.
    """
    choices = MODES[command]
    folded = value.casefold()
    for choice in choices:
        if choice == folded:
            return choice
    from stepfork.cli.output import fail, sanitize_text

    near = closest(value, choices)
    hint = f" Did you mean {near!r}?" if near else ""
    fail(f"Invalid replay mode {sanitize_text(value)}.\nChoose one of: {', '.join(choices)}.{hint}", 2)


def not_a_test_problem(path: Path, command: str) -> str | None:
    """Why ``path`` cannot be the exported test ``command`` (``run``, ``score``) takes, or None.

    A bundle (a ``.sftrace`` directory, or one holding manifest.json and events.jsonl) is named as such
    with the ``stepfork export`` line that makes a test of it; another directory is "a directory"; a file that
    neither calls ``run_regression_case`` nor names a ``TRACE_PATH`` is "not a test stepfork export wrote"
    (advice about constants or pytest would not apply to it). A missing path is left to the command.
    """
    from stepfork.trace._outputs import is_bundle_dir

    export = "stepfork export BUNDLE -e MODULE:FUNCTION --expect-output EXPECTED.json"
    if path.is_dir():
        if is_bundle_dir(path):
            return (
                f"{path} is a bundle, not a test: `stepfork {command}` takes the pytest file "
                f"`stepfork export` writes. Make one with: {export.replace('BUNDLE', str(path))}"
            )
        return (
            f"{path} is a directory, not a test file: `stepfork {command}` takes the file "
            "`stepfork export` writes."
        )
    if not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return None  # the command reports why it cannot read it
    if b"run_regression_case" in head or b"TRACE_PATH" in head:
        return None
    return (
        f"{path} is not a test `stepfork export` wrote (it neither calls run_regression_case nor names a "
        f"TRACE_PATH). Make one with: {export}"
    )


def not_a_bundle_problem(path: Path, command: str) -> str | None:
    """Why ``path``, an existing file, cannot be the bundle ``command`` (``export``, ``import``) was given,
    or None (a directory, or nothing there: left to the command's own reader).

    A bundle is a directory. A test ``stepfork export`` wrote (it calls ``run_regression_case`` or names a
    ``TRACE_PATH``) is named as such, with the bundle it replays; another Python file is "a Python file";
    anything else is "a file". Only the first MiB is read, as bytes; nothing is imported.
    """
    try:
        if not path.is_file():
            return None
        with path.open("rb") as handle:
            head = handle.read(1 << 20)
    except OSError:
        return None
    takes = f"`stepfork {command}` takes the .sftrace bundle directory a recording wrote"
    if b"run_regression_case" in head or b"TRACE_PATH" in head:
        run = f"`stepfork run {path}` runs the test"
        return f"{path} is a test `stepfork export` wrote, not a bundle: {takes} ({run})"
    if path.suffix in (".py", ".pyw"):
        return f"{path} is a Python file, not a bundle: {takes}"
    return f"{path} is a file, not a bundle: {takes}"


def bundle_not_spans_problem(path: Path) -> str | None:
    """Why ``path`` cannot be the spans ``stepfork import`` reads, when it is a Stepfork bundle (a
    ``.sftrace`` directory, or one holding manifest.json and events.jsonl, or a file inside one), else
    None."""
    from stepfork.trace._outputs import enclosing_bundle, is_bundle_dir

    if is_bundle_dir(path):
        what = "a Stepfork bundle"
    else:
        bundle = enclosing_bundle(path) if path.exists() else None
        if bundle is None:
            return None
        what = f"part of the Stepfork bundle {bundle.name}"
    return (
        f"{path} is {what}, not OpenTelemetry spans: `stepfork import` reads OTLP JSON or protobuf "
        "exported by an OpenTelemetry SDK or collector; a bundle needs no import (stepfork inspect, replay "
        "and export read it as it is)"
    )


def not_python_problem(command: list[str]) -> str:
    """What is wrong with ``command`` (the words after ``--``), which ``python_target`` refused: said
    after the usage line of ``record``, ``replay`` and ``export`` (the one thing to change, named)."""
    from stepfork.cli.output import sanitize_text

    if not command:
        return "no command was given after --"
    first = sanitize_text(command[0])
    if not Path(command[0]).name.startswith("python"):
        return f"the command starts with {first!r}, which is not a Python interpreter"
    if len(command) < 2 or command[1:] == ["-m"]:
        return f"{first} is given no SCRIPT (or -m MODULE) to run"
    return f"{first} {sanitize_text(command[1])} is not a SCRIPT (or -m MODULE)"
