"""The refusals of ``stepfork export`` (spec/cli-reference.txt "export"; docs/decisions.md): every input a
generated test could not run with, checked before anything is written, each an :class:`ExportError` with
its code and one line (``invalid_mode``, ``invalid_option``, ``missing_entrypoint``,
``invalid_entrypoint``, ``invalid_trace``, ``program_bundle``, ``secret_in_command``). The options alone
(the modes a test may use, the allow-lists, ``--ignore``, ``--ordering``, ``--raise-as``, the command) and
the options against the bundle (it loads and validates strictly; the labels, tools and error types the
options name are in it). Used by :mod:`._codegen`, which re-exports ``EXPORT_MODES`` and
``REFUSED_EXPORT_MODES``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepfork.analysis.export._exported import (
    check_raise_as,
    command_secret_problem,
    entrypoint_form_problem,
)
from stepfork.analysis.export._files import ExportError

if TYPE_CHECKING:  # pragma: no cover - annotations only
    from stepfork.trace.bundle import Trace


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
