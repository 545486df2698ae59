"""Pytest export: generate a regression test from a bundle, safely, and read its constants back.

The generated module holds trace-derived data **only as Python literals** (``repr`` of JSON values and
strings) in module-level constants, and a fixed test body that calls
:func:`stepfork.replay.run_regression_case`. Before anything is written the source is parsed with
:mod:`ast` and every constant is checked (:func:`read_exported_constants`): a tool name or value holding
quotes, newlines, triple quotes, braces or code stays data. Rules: spec/cli-reference.txt "export";
interop/REFERENCE-NOTES.md section 6 "Export".

``ORDERING`` (``'auto'``, ``'strict'``...; ``--ordering``) is the replay ordering the test uses.
``RAISE_AS`` (``None``, or ``{"<recorded error type>": "MODULE:CLASS"}`` from ``--raise-as``) is a literal
too; the test passes it to ``run_regression_case(raise_as=...)``, which imports the classes it names like
the entrypoint (docs/replay.md, "Raising recorded failures as your own exceptions").

The two path constants are the only expressions, of exactly one shape each, so that ``stepfork run`` and
``stepfork score`` can read them without importing the test::

    HERE = Path(__file__).resolve().parent
    TRACE_PATH = HERE / 'notify.sftrace'      # a str literal, relative to the test file (posix separators)
    IMPORT_ROOT = HERE / '..'                 # or None: resolve ENTRYPOINT against sys.path only

Script form (``stepfork export BUNDLE -- python agent.py ARGS``; issue 11): ``COMMAND`` is the command as
typed (a list of str literals), ``ENTRYPOINT`` is None, and the test body calls
:func:`stepfork.cli.scriptrun.run_script_regression_case`, which runs the program under replay in the
directory IMPORT_ROOT names, as ``stepfork replay BUNDLE -- python ...`` does.
"""

from __future__ import annotations

import ast
import os
import pprint
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepfork.analysis.export._checks import EXPORT_MODES as EXPORT_MODES
from stepfork.analysis.export._checks import REFUSED_EXPORT_MODES as REFUSED_EXPORT_MODES
from stepfork.analysis.export._checks import (
    _check_command,
    _check_entrypoint,
    _check_ignore_labels,
    _check_live_llms,
    _check_mode,
    _check_ordering,
    _checked_allow_commands,
    _checked_allow_hosts,
    _checked_ignore,
    _checked_ignore_output,
    _checked_raise_as,
    _checked_trace,
    _raise_as_unmatched,
    _refuse_program_bundle,
)
from stepfork.analysis.export._exported import (
    HERE_EXPRESSION,
    check_raise_as,
    read_exported_constants,
)
from stepfork.analysis.export._files import (
    ExportError,
    ExportResult,
    write_atomically,
)

if TYPE_CHECKING:  # pragma: no cover - annotations only
    pass

__all__ = [
    "EXPORT_MODES",
    "default_output_path",
    "export_pytest_test",
    "generate_pytest_source",
]


def default_output_path(trace_path: str | os.PathLike[str]) -> Path:
    """``./test_<trace stem>_regression.py`` in the working directory (spec "export", ``--output``)."""
    stem = Path(trace_path).name.removesuffix(".sftrace")
    return Path(f"test_{_identifier(stem)}_regression.py")


def _identifier(text: str) -> str:
    """A lowercase ASCII identifier fragment of ``text`` (names only; never embeds data in code)."""
    cleaned = re.sub(r"[^a-z0-9_]+", "_", text.lower()).strip("_")
    return cleaned or "trace"


def _literal(value: Any, what: str) -> str:
    """The Python literal of a JSON value, checked to read back to the same value with ast.literal_eval."""
    source = pprint.pformat(value, width=100, sort_dicts=False)
    try:
        back = ast.literal_eval(source)
    except (ValueError, SyntaxError, MemoryError, RecursionError) as exc:
        raise ExportError(f"{what} cannot be written as a literal: {exc}", code="unsafe_source") from exc
    if repr(back) != repr(value):
        raise ExportError(f"{what} does not round-trip as a literal", code="unsafe_source")
    return source


def _relative_posix(target: Path, start: Path) -> str:
    return Path(os.path.relpath(target.resolve(), start.resolve())).as_posix()


def generate_pytest_source(
    *,
    trace_path: str | os.PathLike[str],
    output_path: str | os.PathLike[str],
    entrypoint: str,
    expectation: Any = None,
    has_expectation: bool = True,
    trajectory_expectation: Any = None,
    mode: str = "frozen",
    live_llms: Iterable[str] | None = None,
    allow_live_tools: Iterable[str] | None = None,
    import_root: str | os.PathLike[str] | None = None,
    expectation_source: str | None = None,
    raise_as: Mapping[str, str] | None = None,
    network: str | None = None,
    allow_hosts: Iterable[str] | None = None,
    ordering: str = "auto",
    ignore: Mapping[str, list[str]] | None = None,
    command: Sequence[str] | None = None,
    ignore_output: Sequence[str] | None = None,
    allow_commands: Iterable[str] | None = None,
) -> str:
    """Return the source of a pytest module that replays ``trace_path`` through ``entrypoint`` (or, with
    ``command`` (``["python", "agent.py", ARGS...]``), through that program:
    :func:`._script.script_source`).

    Paths are embedded relative to ``output_path``'s directory, so the test and bundle can move together.
    ``expectation_source`` (``"file"``, ``"recorded"`` or ``"none"``; default ``"file"``, or ``"none"``
    without an expectation) is embedded as EXPECTATION_SOURCE so that ``stepfork score`` can tell a
    reviewed expectation from a copy of the recorded run (spec "score": "no expectation to score").
    ``expectation`` and ``trajectory_expectation`` are JSON values embedded as literals, redacted here
    with ``redact_json`` (interop notes section 3; CASES.md C5: no public path writes a secret into
    generated code, whoever calls it). Sets are written as sorted lists. ``raise_as``
    (``{recorded error type: "MODULE:CLASS"}``) is embedded as the RAISE_AS literal, keys sorted;
    ``ordering`` (a replay ordering, default ``auto``) as ORDERING and ``ignore`` (``{label: [JSON
    paths]}``, ``--ignore TOOL:PATH``) as IGNORE and ``ignore_output`` (JSON paths of the output,
    ``--ignore PATH``) as IGNORE_OUTPUT; ``network``/``allow_hosts``/``allow_commands`` as
    NETWORK/ALLOW_HOSTS/ALLOW_COMMANDS; all passed to ``run_regression_case``, with EXPECTATION_SOURCE (a
    ``"file"`` expectation is compared exactly but for IGNORE_OUTPUT; ``"recorded"`` up to noise).

    Raises:
        ExportError: ``invalid_mode`` for a mode outside :data:`EXPORT_MODES` (``manual``: a test runs
            unattended); ``invalid_option`` when ``allow_live_tools`` is given without mode live or
            ``live_llms`` without mode hybrid (the "only valid" rule of interop/REFERENCE-API.md), mode
            hybrid without ``live_llms`` or with ``command``, or ``raise_as`` is not of the shape
            :func:`._exported.check_raise_as` accepts; ``missing_entrypoint`` for an empty
            entrypoint; ``invalid_entrypoint`` for one without the ``MODULE:FUNCTION`` form that replay
            requires (:func:`._exported.entrypoint_form_problem`; nothing is imported);
            ``unsafe_source`` when the generated module fails the literal check; ``invalid_option`` when
            ``command`` is not a non-empty list of str; ``secret_in_command`` when an argument of
            ``command`` holds a secret (a credential pattern, a registered secret, or the value after an
            option such as ``--api-key``: :func:`._exported.command_secret_problem`, whose
            line names the argument; the test runs its command as written, so a secret is refused, never
            written into the file).
    """
    _check_mode(mode, live_llms, command)
    if command is None:
        _check_entrypoint(entrypoint)
    live = sorted(set(live_llms)) if live_llms else None
    tools = sorted(set(allow_live_tools)) if allow_live_tools else None
    if tools and mode != "live":
        raise ExportError("--allow-live-tool is only valid with --mode live.", code="invalid_option")

    classes = _checked_raise_as(raise_as)
    _check_ordering(ordering)
    if network not in (None, "sealed", "open"):
        raise ExportError(f"network must be 'sealed' or 'open', got {network!r}", code="invalid_option")
    allow_hosts = _checked_allow_hosts(allow_hosts)
    commands = _checked_allow_commands(allow_commands)
    from stepfork.trace.redaction import redact_json

    if expectation is not None:
        expectation = redact_json(expectation).value
    if trajectory_expectation is not None:
        trajectory_expectation = redact_json(trajectory_expectation).value
    if expectation_source is None:
        expectation_source = "file" if has_expectation else "none"
    if expectation_source not in ("file", "recorded", "none"):
        raise ExportError(f"unknown expectation source {expectation_source!r}", code="invalid_option")
    out_dir = Path(output_path).parent
    trace_rel = _relative_posix(Path(trace_path), out_dir)
    root_src = "None"
    if import_root is not None:
        root_src = f"HERE / {_literal(_relative_posix(Path(import_root), out_dir), 'IMPORT_ROOT')}"
    stem = _identifier(Path(trace_path).name.removesuffix(".sftrace"))
    values = {
        "ENTRYPOINT": _literal(entrypoint, "ENTRYPOINT"),
        "MODE": _literal(mode, "MODE"),
        "LIVE_LLMS": _literal(live, "LIVE_LLMS"),
        "ALLOW_LIVE_TOOLS": _literal(tools, "ALLOW_LIVE_TOOLS"),
        "EXPECTATION": _literal(expectation, "EXPECTATION"),
        "HAS_EXPECTATION": _literal(bool(has_expectation), "HAS_EXPECTATION"),
        "EXPECTATION_SOURCE": _literal(expectation_source, "EXPECTATION_SOURCE"),
        "TRAJECTORY_EXPECTATION": _literal(trajectory_expectation, "TRAJECTORY_EXPECTATION"),
        "RAISE_AS": _literal(dict(sorted(classes.items())) if classes else None, "RAISE_AS"),
        "NETWORK": _literal(network, "NETWORK"),
        "ALLOW_HOSTS": _literal(sorted(set(allow_hosts)) if allow_hosts else None, "ALLOW_HOSTS"),
        "ALLOW_COMMANDS": _literal(sorted(set(commands)) if commands else None, "ALLOW_COMMANDS"),
        "ORDERING": _literal(ordering, "ORDERING"),
        "IGNORE": _literal(_checked_ignore(ignore), "IGNORE"),
        "IGNORE_OUTPUT": _literal(_checked_ignore_output(ignore_output), "IGNORE_OUTPUT"),
    }
    if command is not None:
        from stepfork.analysis.export._script import script_source

        _check_command(command)
        values["COMMAND"] = _literal(list(command), "COMMAND")
        return script_source(_literal(trace_rel, "TRACE_PATH"), root_src, stem, values)
    constants = "\n".join(f"{name} = {source}" for name, source in values.items())
    source = f'''"""Stepfork regression test, generated by `stepfork export`.

Edit the constants, not the test body: `stepfork run` and `stepfork score` read them with ast.
"""

from pathlib import Path

from stepfork.export import run_regression_case

HERE = {HERE_EXPRESSION}
TRACE_PATH = HERE / {_literal(trace_rel, "TRACE_PATH")}
IMPORT_ROOT = {root_src}
{constants}


def test_stepfork_regression_{stem}() -> None:
    run_regression_case(
        trace_path=TRACE_PATH,
        import_root=IMPORT_ROOT,
        entrypoint=ENTRYPOINT,
        expectation=EXPECTATION,
        has_expectation=HAS_EXPECTATION,
        trajectory_expectation=TRAJECTORY_EXPECTATION,
        mode=MODE,
        live_llms=set(LIVE_LLMS) if LIVE_LLMS else None,
        allow_live_tools=set(ALLOW_LIVE_TOOLS) if ALLOW_LIVE_TOOLS else None,
        raise_as=RAISE_AS,
        network=NETWORK,
        allow_hosts=ALLOW_HOSTS,
        allow_commands=ALLOW_COMMANDS,
        ordering=ORDERING,
        ignore=IGNORE,
        expectation_source=EXPECTATION_SOURCE,
        ignore_output=IGNORE_OUTPUT,
    )
'''
    try:
        check_raise_as(read_exported_constants(source).get("RAISE_AS"))
    except ValueError as exc:
        raise ExportError(f"generated test failed the literal check: {exc}", code="unsafe_source") from exc
    return source


def _recorded_output(trace: Any) -> tuple[bool, Any]:
    """(found, output) of the last completed run_end in ``trace`` (interop notes section 6 "Export").

    A run_end without an output (null: ``set_output`` never called, as in a ``stepfork record -- python``
    run) records no final output, as replay's ``NOT RECORDED`` says: nothing is found, so the exported
    test checks the calls only instead of asserting ``None`` against what the agent returns."""
    for event in reversed(trace.events):
        if getattr(event, "type", None) == "run_end" and str(event.run_status) == "completed":
            return event.output is not None, event.output
    return False, None


def export_pytest_test(
    *,
    trace_path: str | os.PathLike[str],
    entrypoint: str,
    output_path: str | os.PathLike[str] | None = None,
    expectation: Any = None,
    has_expectation: bool | None = None,
    trajectory_expectation: Any = None,
    mode: str = "frozen",
    live_llms: Iterable[str] | None = None,
    allow_live_tools: Iterable[str] | None = None,
    import_root: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    raise_as: Mapping[str, str] | None = None,
    network: str | None = None,
    allow_hosts: Iterable[str] | None = None,
    ordering: str = "auto",
    ignore: Mapping[str, list[str]] | None = None,
    command: Sequence[str] | None = None,
    allow_commands: Iterable[str] | None = None,
    check_call: bool = False,
    ignore_output: Sequence[str] | None = None,
) -> ExportResult:
    """Validate the bundle strictly, generate the test and write it atomically.

    ``command`` (``["python", "agent.py", ARGS...]``, the script form; ``entrypoint`` is then ignored and
    may be empty) writes a test that replays that program; ``expectation`` is then compared with the
    program's standard output (its JSON value when it parses as JSON, else its text; nothing is asserted
    without one: a program records no output), ``trajectory_expectation`` with the calls it made, and
    ``raise_as`` is refused (``invalid_option``). A command with an argument holding a secret is refused
    before the bundle is read (``secret_in_command``, the line naming the argument; CASES C5). Without
    ``command``, a bundle recorded from a program by ``stepfork record --`` is refused
    (``program_bundle``, the line giving the export that works: issue 29).

    ``has_expectation=None`` means "decide": with an ``expectation`` it is asserted; without one the
    recorded run output (redacted) is asserted, or nothing when the run has no completed output.
    ``import_root`` defaults to the working directory (where ``--entrypoint`` resolves).
    ``raise_as``: ``{recorded error type: "MODULE:CLASS"}`` written as RAISE_AS (nothing is imported
    here); keys are matched against the failures the replay serves by stepfork.replay.raise_as's rules:
    an ambiguous pair is refused, a key matching nothing is reported in ``raise_as_unmatched``.
    ``check_call`` (the CLI sets it): import ``entrypoint`` from ``import_root`` and refuse it when the
    recorded run input cannot call it (:func:`._call.check_entrypoint_call`).

    Returns:
        an :class:`ExportResult` (``expectation_source`` says which expectation was embedded).

    Raises:
        ExportError: ``invalid_trace`` when the bundle is unreadable, fails strict validation or
            integrity verification (integrity.json digests, stored payload hashes; a legacy bundle
            without them passes), checked after the entrypoint's form; the codes of
            :func:`generate_pytest_source` (``invalid_option`` also for two ``raise_as`` keys
            matching one recorded type), ``write_failed`` on an OS error, ``missing_argument`` (with
            ``check_call``) when a required parameter of the entrypoint gets no value from the recorded
            run input (replay's one line), ``secret_in_command`` (see :func:`generate_pytest_source`).
        ExportExistsError: the destination exists and ``overwrite`` is false (never overwritten).
    """
    from stepfork.trace.models import ToolCall
    from stepfork.trace.redaction import redact_json

    if command is None:
        _check_entrypoint(entrypoint)
    else:
        _check_command(command)  # before the bundle is read, as the CLI
    if command is not None and raise_as:
        raise ExportError(
            "--raise-as is not supported with -- python SCRIPT (a program's exceptions are its own); "
            "use --entrypoint",
            code="invalid_option",
        )
    trace_file = Path(trace_path)
    trace = _checked_trace(trace_file)
    if command is None:
        _refuse_program_bundle(trace_file, entrypoint)
    tool_names = {e.name for e in trace.events if isinstance(e, ToolCall)}
    unknown = sorted(set(allow_live_tools or ()) - tool_names)
    if unknown:
        raise ExportError(
            f"--allow-live-tool names a tool the trace never calls: {', '.join(unknown)}.",
            code="invalid_option",
        )
    _check_live_llms(live_llms, trace)
    _check_ignore_labels(ignore, trace)
    unmatched = _raise_as_unmatched(raise_as, trace, mode, live_llms)
    if check_call and command is None:
        from stepfork.analysis.export._call import check_entrypoint_call

        check_entrypoint_call(trace, entrypoint, Path.cwd() if import_root is None else import_root)

    source_kind = "file"
    if command is not None:  # a program's output is its standard output; none was recorded to default to
        has_expectation = expectation is not None
        expectation = redact_json(expectation).value if has_expectation else None
        source_kind = "file" if has_expectation else "none"
    elif has_expectation is None:
        if expectation is not None:
            has_expectation = True
        else:
            found, recorded = _recorded_output(trace)
            has_expectation = found
            expectation = redact_json(recorded).value if found else None
            source_kind = "recorded" if found else "none"
    else:
        expectation = redact_json(expectation).value if expectation is not None else None
        source_kind = "file" if has_expectation else "none"

    destination = Path(output_path) if output_path is not None else default_output_path(trace_file)
    source = generate_pytest_source(
        trace_path=trace_file,
        output_path=destination,
        entrypoint=entrypoint,
        expectation=expectation,
        has_expectation=has_expectation,
        trajectory_expectation=trajectory_expectation,
        mode=mode,
        live_llms=live_llms,
        allow_live_tools=allow_live_tools,
        import_root=Path.cwd() if import_root is None else import_root,
        expectation_source=source_kind,
        raise_as=raise_as,
        network=network,
        allow_hosts=allow_hosts,
        ordering=ordering,
        ignore=ignore,
        command=command,
        ignore_output=ignore_output,
        allow_commands=allow_commands,
    )
    write_atomically(destination, source, overwrite=overwrite)
    return ExportResult(destination, expectation, bool(has_expectation), source_kind, unmatched)
