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

from stepfork.analysis.export._exported import (
    HERE_EXPRESSION,
    check_raise_as,
    command_secret_problem,
    entrypoint_form_problem,
    read_exported_constants,
)
from stepfork.analysis.export._files import (
    ExportError,
    ExportResult,
    write_atomically,
)

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from stepfork.trace.bundle import Trace
__all__ = [
    "EXPORT_MODES",
    "default_output_path",
    "export_pytest_test",
    "generate_pytest_source",
]

# Validation codes of integrity verification; integrity_unverified (a legacy bundle) is not a problem.
_INTEGRITY_CODES = frozenset(
    {
        "integrity_mismatch",
        "payload_hash_mismatch",
        "integrity_metadata_invalid",
        "integrity_algorithm_unsupported",
    }
)

# Modes a generated test may use (spec/replay.txt "Modes"; hybrid is Python-API only but valid in a test,
# with the LLM labels it runs live). A test runs unattended: manual (a person approves each call) and the
# reserved derived cannot run in one, so export refuses them (docs/decisions.md).
EXPORT_MODES = ("frozen", "live", "forbidden", "hybrid")
REFUSED_EXPORT_MODES = {
    "manual": "--mode manual cannot be exported: it asks a person to approve each call, and an exported "
    "test runs unattended (stepfork replay --mode manual asks on a terminal); export --mode frozen, live, "
    "forbidden or hybrid",
    "derived": "replay mode 'derived' is reserved and not supported in this version",
}
"""The modes ``export`` refuses with a reason of their own (``ExportError`` code ``invalid_mode``)."""


def _check_mode(mode: str, live_llms: Iterable[str] | None, command: Sequence[str] | None) -> None:
    """ExportError unless a test in ``mode`` can run unattended: ``invalid_mode`` for a mode outside
    :data:`EXPORT_MODES` (a reason of its own for :data:`REFUSED_EXPORT_MODES`); ``invalid_option`` for
    ``hybrid`` without ``live_llms`` (the replay would refuse to start: it runs only the LLMs named) or
    for a program (``command``: its replay takes no LLM labels), and for ``live_llms`` outside hybrid."""
    if mode in REFUSED_EXPORT_MODES:
        raise ExportError(REFUSED_EXPORT_MODES[mode], code="invalid_mode")
    if mode not in EXPORT_MODES:
        raise ExportError(f"Invalid replay mode {mode}.", code="invalid_mode")
    if live_llms and mode != "hybrid":
        raise ExportError("--live-llm is only valid with --mode hybrid.", code="invalid_option")
    if mode == "hybrid" and command is not None:
        raise ExportError(
            "--mode hybrid is not supported with -- python SCRIPT (a program's replay runs no LLM live); "
            "use --entrypoint",
            code="invalid_option",
        )
    if mode == "hybrid" and not live_llms:
        raise ExportError(
            "--mode hybrid needs --live-llm LABEL for each LLM the test runs live (a label of the "
            "recording's LLM calls, as `stepfork inspect` names them); hybrid replay runs no other",
            code="invalid_option",
        )


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


def _checked_allow_hosts(allow_hosts: Iterable[str] | None) -> list[str] | None:
    """``allow_hosts`` normalized for ALLOW_HOSTS (``HOST`` or ``HOST:PORT``,
    :func:`stepfork.replay.network.parse_allowed_host`), or None; ExportError ``invalid_option`` for a
    malformed entry, which the test's replay would refuse."""
    if not allow_hosts:
        return None
    from stepfork.replay.network import format_host, parse_allowed_host

    try:
        return [format_host(*parse_allowed_host(host)) for host in allow_hosts]
    except ValueError as exc:
        raise ExportError(str(exc), code="invalid_option") from None


def _checked_ignore_output(paths: Sequence[str] | None) -> list[str] | None:
    """``paths`` as the IGNORE_OUTPUT literal (JSON paths of the run's output, in order), or None;
    ExportError ``invalid_option`` for a path that does not start with ``$`` or holds a stray ``[``."""
    if not paths:
        return None
    from stepfork.replay.ignoring import check_output_paths

    try:
        return check_output_paths(paths)
    except ValueError as exc:
        raise ExportError(str(exc), code="invalid_option") from None


def _checked_allow_commands(allow_commands: Iterable[str] | None) -> list[str] | None:
    """``allow_commands`` checked for ALLOW_COMMANDS (:func:`stepfork.replay.network.parse_allowed_command`),
    or None; ExportError ``invalid_option`` for a malformed entry, which the test's replay would refuse."""
    if not allow_commands:
        return None
    from stepfork.replay.network import parse_allowed_command

    try:
        return [parse_allowed_command(command) for command in allow_commands]
    except ValueError as exc:
        raise ExportError(str(exc), code="invalid_option") from None


def _checked_ignore(ignore: Mapping[str, list[str]] | None) -> dict[str, list[str]] | None:
    """``ignore`` as the IGNORE literal (labels sorted), or None; ExportError ``invalid_option`` when it
    is not ``{label: [JSON paths]}`` (stepfork.replay.ignoring)."""
    if not ignore:
        return None
    from stepfork.replay.ignoring import normalize_ignore

    try:
        normalize_ignore(ignore)
    except ValueError as exc:
        raise ExportError(str(exc), code="invalid_option") from None
    return {label: list(ignore[label]) for label in sorted(ignore)}


def _check_ignore_labels(ignore: Mapping[str, list[str]] | None, trace: Any) -> None:
    """ExportError ``invalid_option`` when ``ignore`` names a call the recording does not hold
    (stepfork.replay.ignoring.check_ignore_labels: the labels replay matches by)."""
    if not ignore:
        return
    from stepfork.replay.ignoring import check_ignore_labels
    from stepfork.replay.plan import extract_all_calls

    try:
        check_ignore_labels(ignore, (call.label for call in extract_all_calls(list(trace.events))))
    except ValueError as exc:
        raise ExportError(str(exc), code="invalid_option") from None


def _check_ordering(ordering: str) -> None:
    """ExportError ``invalid_option`` unless ``ordering`` is a replay ordering (stepfork.replay.ordering)."""
    from stepfork.replay.ordering import normalize_ordering

    try:
        normalize_ordering(ordering)
    except ValueError as exc:
        raise ExportError(str(exc), code="invalid_option") from None


def _check_entrypoint(entrypoint: str) -> None:
    """ExportError ``missing_entrypoint`` (empty) or ``invalid_entrypoint`` (not ``MODULE:FUNCTION``, the
    message replay prints for it): a test naming such an entrypoint could never run."""
    if not entrypoint:
        raise ExportError(
            "An executable regression test needs --entrypoint MODULE:FUNCTION.", code="missing_entrypoint"
        )
    problem = entrypoint_form_problem(entrypoint)
    if problem is not None:
        raise ExportError(problem, code="invalid_entrypoint")


def _checked_trace(trace_file: Path) -> Trace:
    """The bundle at ``trace_file``, loaded once, or ExportError ``invalid_trace`` unless it passes strict
    validation and, when it carries integrity.json or stored payload hashes, integrity verification:
    replay rejects a tampered bundle, so a test of one could never pass (docs/decisions.md). A legacy
    bundle without them is accepted, unless it is a finished run cut short (fewer or more events than its
    manifest counts): then the message is the ``event_count_mismatch`` line replay prints
    (:func:`stepfork.trace.load_verified_trace`, which is the load: the refusal needs no second read).
    A bundle that cannot be loaded gets the codes strict validation finds in it."""
    from stepfork.trace.bundle import load_verified_trace
    from stepfork.trace.errors import TraceIntegrityError, TraceStorageError
    from stepfork.trace.validation import validate_bundle

    trace: Trace | None = None
    unreadable: Exception | None = None
    try:
        trace = load_verified_trace(trace_file)
    except TraceIntegrityError as exc:  # the one integrity line of every command, cut bundles' too, as is
        raise ExportError(str(exc), code="invalid_trace", path=str(trace_file)) from None
    except (TraceStorageError, OSError) as exc:  # validation below names what is wrong, with its code
        unreadable = exc
    result = validate_bundle(trace_file, strict=True, verify_integrity=True)
    codes = sorted({issue.code for issue in result.issues} - {"integrity_unverified"})
    if not codes and trace is not None:
        return trace
    if not codes:  # unreadable, though validation found nothing to name: the loader's own words
        raise ExportError(str(unreadable), code="invalid_trace", path=str(trace_file))
    if set(codes) <= _INTEGRITY_CODES:
        raise ExportError(
            f"Export requires a bundle that passes integrity verification ({', '.join(codes)}); "
            f"check it with stepfork validate {trace_file} --verify-integrity.",
            code="invalid_trace",
            path=str(trace_file),
        )
    # validate's first reason, as every other command gives it (a symlinked or FIFO events.jsonl of a legacy
    # bundle: "events.jsonl: a symbolic link (refused)"), not the code alone
    first = next(issue for issue in result.issues if issue.code != "integrity_unverified")
    raise ExportError(
        f"Export requires a bundle that passes strict validation ({', '.join(codes)}): {first.message}; "
        f"run `stepfork validate {trace_file}` for every issue.",
        code="invalid_trace",
        path=str(trace_file),
    )


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


def _check_live_llms(live_llms: Iterable[str] | None, trace: Any) -> None:
    """ExportError ``invalid_option`` when a ``--live-llm`` label is not the label of an LLM call of
    ``trace``: the test's hybrid replay would refuse it before running (``_shared.labels``, as ``fork``)."""
    from stepfork.analysis._shared.labels import live_llm_problem

    problem = live_llm_problem(live_llms, trace)
    if problem is not None:
        raise ExportError(problem, code="invalid_option")


def _refuse_program_bundle(trace_file: Path, entrypoint: str) -> None:
    """ExportError ``program_bundle`` when the bundle was recorded from a program by ``stepfork record --``
    (its ``program.json``): its requests were captured in every httpx client the program created, which
    an entrypoint test does not install, so the test would fail for correct code (issue 29). The one line
    names the export that works: the program form, with the recorded command (redacted when it held a
    secret, which the line then says: an exported test cannot hold one)."""
    from stepfork.integrations.autocapture import recorded_program
    from stepfork.trace.redaction import REPLACEMENT

    program = recorded_program(trace_file)
    if program is None:
        return
    shown = " ".join(program)
    secret = (
        f" (each {REPLACEMENT} stood for a secret: have the program read it from an environment variable)"
        if any(REPLACEMENT in part for part in program)
        else ""
    )
    raise ExportError(
        f"{trace_file} was recorded from a program (`stepfork record -- {shown}`), whose HTTP requests "
        f"were captured in every httpx client it created; a test of --entrypoint {entrypoint} would replay "
        f"it without that capture. Export the program instead: stepfork export {trace_file} --pytest "
        f"-o TEST.py -- {shown}{secret}",
        code="program_bundle",
        path=str(trace_file),
    )


def _check_command(command: Sequence[str]) -> None:
    """ExportError ``invalid_option`` unless ``command`` is a non-empty list of str; ``secret_in_command``
    when an argument holds a secret (:func:`._exported.command_secret_problem`)."""
    if isinstance(command, str) or not command or not all(isinstance(part, str) for part in command):
        raise ExportError("the command must be a list of strings", code="invalid_option")
    problem = command_secret_problem(command)
    if problem is not None:
        raise ExportError(problem, code="secret_in_command")


def _raise_as_unmatched(
    raise_as: Mapping[str, str] | None, trace: Any, mode: str, live_llms: Iterable[str] | None
) -> tuple[str, ...]:
    """The ``raise_as`` keys matching no failure the test's replay serves (the session's own rule, so
    the test cannot fail on a mapping this accepted); ExportError ``invalid_option`` when ambiguous."""
    classes = _checked_raise_as(raise_as)
    if not classes:
        return ()
    from stepfork.replay.plan import extract_recorded_calls
    from stepfork.replay.raise_as import recorded_error_types, unmatched_keys

    calls = extract_recorded_calls(trace, mode=mode, live_llms=live_llms or ())
    try:
        return unmatched_keys(classes, recorded_error_types(calls))
    except ValueError as exc:
        raise ExportError(f"--raise-as: {exc}", code="invalid_option") from None


def _checked_raise_as(raise_as: Mapping[str, str] | None) -> dict[str, str] | None:
    """``raise_as`` as a dict of the RAISE_AS shape; ExportError ``invalid_option`` otherwise."""
    try:
        return check_raise_as(None if raise_as is None else dict(raise_as))
    except (ValueError, TypeError) as exc:
        raise ExportError(f"invalid raise_as: {exc}", code="invalid_option") from None
