"""``run_regression_case``: the body of every exported pytest regression test (spec hybrid-replay.txt;
interop/REFERENCE-NOTES.md section 6, "Export"; REFERENCE-API.md ``stepfork.export``).

It loads the bundle, resolves the trusted entrypoint, replays it, verifies that every recorded call was
consumed, applies the reviewed trajectory expectation and compares the output with the expectation. Every
failure is an ``AssertionError`` whose message starts with one of the reference's prefixes:

- ``stepfork: trace bundle not found: ...`` / ``stepfork: trace bundle unreadable: ...`` (also for a bundle
  that fails integrity verification; ``stepfork run``: could_not_execute, reasons bundle_missing and
  bundle_unreadable). The bundle is ``trace``, or the one ``stepfork run TEST --bundle PATH`` names
  (:data:`BUNDLE_ENV`)
- ``stepfork: entrypoint failed: ...`` (cannot be resolved, raised, or returned a non-JSON value)
- ``stepfork: could not execute: ...`` (the check cannot run: the entrypoint cannot be called with the
  recorded run input; ``stepfork run`` reports it as could_not_execute, not as a caught regression)
- ``stepfork: entrypoint unresolvable: ...`` (the check cannot run: the entrypoint's module exits when
  imported; ``stepfork run``: could_not_execute, reason entrypoint_unresolvable)
- ``stepfork: check cannot be built: ...`` (a ``ValueError``: the test's own replay options cannot run
  unattended, ``mode="manual"`` or ``hybrid`` without ``live_llms``; ``stepfork run``: could_not_execute,
  reason check_error)
- ``stepfork: capture missing: ...`` (the check cannot run as recorded: the bundle's requests were
  captured by the HTTP capture, which this process never installed; ``stepfork run``: could_not_execute,
  reason capture_missing)
- ``stepfork replay policy violation: ...`` (a ReplayPolicyError)
- ``stepfork replay divergence: ...`` (any other replay error, a caught divergence, unconsumed calls)
- ``behavior mismatch at '<path>': expected <v>, got <v>`` (first difference; values as canonical JSON),
  followed, when more than one path differs, by every differing path (up to a limit, then a count); the
  output is compared up to noise as replay's report compares it (stepfork.replay.noise: fresh ids renamed
  one-to-one, timing and new fields of framework messages)
- the trajectory assertions' own messages (``stepfork.replay.assertions``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from stepfork.replay.assertions import assert_trajectory, validate_trajectory_expectation
from stepfork.replay.diagnostics import difference_lines, display_path, preview
from stepfork.replay.entrypoint import (
    EntrypointCallError,
    EntrypointError,
    EntrypointImportExit,
    call_with_arguments,
    entrypoint_arguments,
    recorded_run_input,
    resolve_entrypoint,
)
from stepfork.replay.errors import (
    RecordedDependencyError,
    ReplayError,
    ReplayPolicyError,
    recorded_failure_text,
)
from stepfork.replay.ignoring import check_output_paths
from stepfork.replay.noise import Origins
from stepfork.replay.noise.output import output_differences
from stepfork.replay.raise_as import RaiseAsTarget, resolve_raise_as
from stepfork.replay.session import ReplaySession, load_source
from stepfork.trace.bundle import Trace
from stepfork.trace.errors import TraceError, TraceIntegrityError, TraceStorageError
from stepfork.trace.jsonable import to_jsonable
from stepfork.trace.redaction import redact_json, redact_text

COULD_NOT_EXECUTE = "stepfork: could not execute: "
"""The prefix of a failure that means the check never ran (``stepfork run`` reads it from the report)."""

ENTRYPOINT_UNRESOLVABLE = "stepfork: entrypoint unresolvable: "
"""The prefix of a failure whose entrypoint module exited while imported: the check never ran either."""

CHECK_NOT_BUILT = "stepfork: check cannot be built: "
"""The prefix of the ``ValueError`` raised when the test's own replay options cannot make a replay that
runs unattended (``mode="manual"``, ``hybrid`` without ``live_llms``, a label the recording lacks): the
check never ran (``stepfork run``: could_not_execute, reason check_error, as a fixture that cannot be
built)."""

CAPTURE_MISSING = "stepfork: capture missing: "
"""The prefix of a failure whose replay lacked the HTTP capture the bundle was recorded with (issue 29:
``stepfork.replay.requests.capture_missing``): the check could not run as recorded, it caught nothing."""

BUNDLE_ENV = "STEPFORK_RUN_BUNDLE"
"""The environment variable naming the bundle an exported test replays instead of the one it was given
(its TRACE_PATH): ``stepfork run TEST --bundle PATH`` sets it, as an absolute path, for the test's pytest
process (spec cli-reference.txt "run": ``--bundle <path>`` names the bundle instead of reading TRACE_PATH
from the test); :func:`bundle_source`."""

BUNDLE_NOT_FOUND = "stepfork: trace bundle not found: "
"""The prefix of a failure whose bundle is not there: the check never ran (``stepfork run``:
could_not_execute, reason bundle_missing)."""

BUNDLE_UNREADABLE = "stepfork: trace bundle unreadable: "
"""The prefix of a failure whose bundle cannot be read or fails integrity verification: the check never ran
(``stepfork run``: could_not_execute, reason bundle_unreadable)."""

PROGRAM_NOT_RUN = "stepfork: program could not run: "
"""The prefix of a program test (``stepfork export -- python ...``) whose replay exited 2: the program or
the bundle could not be run (a missing script, ``os._exit``, a rejected bundle)."""


def _text(message: str) -> str:
    return redact_text(message)


def _replay_failure(error: ReplayError, session: ReplaySession | None = None) -> AssertionError:
    from stepfork.replay.requests import capture_missing

    missing = capture_missing(session) if session is not None else None
    if missing is not None:
        return AssertionError(f"{CAPTURE_MISSING}{missing}")
    if isinstance(error, ReplayPolicyError):
        return AssertionError(f"stepfork replay policy violation: {_text(str(error))}")
    return AssertionError(f"stepfork replay divergence: {_text(str(error))}")


def bundle_source(
    trace: Trace | str | os.PathLike[str] | None,
) -> Trace | str | os.PathLike[str] | None:
    """The bundle a regression test replays: the path in :data:`BUNDLE_ENV` when it is set (``stepfork run
    TEST --bundle PATH``) and ``trace`` is a path (or None), else ``trace`` itself. An in-memory ``Trace``
    is never replaced."""
    named = os.environ.get(BUNDLE_ENV)
    if named and not isinstance(trace, Trace):
        return named
    return trace


def _load(trace: Trace | str | os.PathLike[str]) -> Trace:
    if not isinstance(trace, Trace) and not Path(trace).exists():
        raise AssertionError(f"{BUNDLE_NOT_FOUND}{trace}")
    try:
        return load_source(trace)
    except TraceIntegrityError as exc:  # the message names the file and the command that checks it
        raise AssertionError(f"{BUNDLE_UNREADABLE}{_text(str(exc))}") from exc
    except (TraceStorageError, TraceError, OSError) as exc:
        code = getattr(exc, "code", type(exc).__name__)
        raise AssertionError(f"{BUNDLE_UNREADABLE}{trace} ({code}): {_text(str(exc))}") from exc


def run_regression_case(
    entrypoint: Callable[..., Any] | str | None = None,
    trace: Trace | str | os.PathLike[str] | None = None,
    *,
    mode: str = "frozen",
    live_llms: Iterable[str] | None = None,
    allow_live_tools: Iterable[str] | None = None,
    expectation: Any = None,
    trajectory_expectation: Mapping[str, Any] | None = None,
    has_expectation: bool = True,
    import_root: str | os.PathLike[str] | None = None,
    trace_path: str | os.PathLike[str] | None = None,
    ordering: str = "auto",
    raise_as: Mapping[str, RaiseAsTarget | str] | None = None,
    network: str | None = None,
    allow_hosts: Iterable[str] | None = None,
    ignore: Mapping[str, Iterable[str]] | None = None,
    expectation_source: str = "recorded",
    ignore_output: Iterable[str] | None = None,
    allow_commands: Iterable[str] | None = None,
) -> Any:
    """Replay ``entrypoint`` against ``trace`` and check it like a reviewed regression test.

    Args:
        entrypoint: a callable (sync or ``async def``, run with ``asyncio.run``) or ``"MODULE:FUNCTION"``
            resolved against ``import_root`` (default: the current directory).
        trace: a bundle path or a ``Trace``; ``trace_path`` is accepted as the reference's keyword name.
            A path is replaced by the bundle :data:`BUNDLE_ENV` names, when set (``stepfork run --bundle``).
        mode, live_llms, allow_live_tools, ordering, network, allow_hosts, allow_commands, ignore: as
            :class:`ReplaySession` (the network is sealed in frozen mode unless ``network="open"``;
            ignored input differences pass and are the session's ``ignored_differences``).
        raise_as: as :class:`ReplaySession` (the entrypoint's own ``except`` clauses catch recorded
            failures; see stepfork.replay.raise_as); a value may also be a ``"MODULE:CLASS"`` string,
            resolved like the entrypoint against ``import_root``, so an exported test can hold the mapping
            as a literal constant.
        expectation: the reviewed output (JSON); compared with the redacted JSON form of the return value
            when ``has_expectation`` is True (``None`` is then a real expectation of ``null``).
        trajectory_expectation: a reviewed trajectory shape (see ``validate_trajectory_expectation``).
        has_expectation: False to skip the output comparison.
        expectation_source: ``"file"`` for an expectation the user wrote (``export --expect-output``): it
            is an oracle, compared exactly (no noise rule, no renaming) but for ``ignore_output``;
            ``"recorded"`` (the default) for the recording's own output, compared up to noise as replay's
            report compares it (fresh values renamed).
        ignore_output: JSON paths of the output not compared (``$.generated_at``, ``$.items[*].id``;
            ``export --ignore PATH``).

    Returns:
        The redacted JSON form of the entrypoint's return value.

    Raises:
        AssertionError: with the prefixes of the module docstring.
        ValueError: invalid replay options (before the entrypoint runs): ``mode="manual"`` (a test cannot
            approve calls), options ``ReplaySession`` refuses (``hybrid`` without ``live_llms``...), each
            with the :data:`CHECK_NOT_BUILT` prefix; a ``raise_as`` string that cannot be resolved (a
            :class:`~stepfork.replay.raise_as.RaiseAsClassError`); a bad trajectory expectation shape.
    """
    source = bundle_source(trace if trace is not None else trace_path)  # `stepfork run --bundle`
    if source is None or entrypoint is None:
        raise ValueError("run_regression_case needs an entrypoint and a trace (path or Trace)")
    if trajectory_expectation is not None:
        validate_trajectory_expectation(trajectory_expectation)
    ignore_output = check_output_paths(ignore_output)  # a malformed path is a ValueError, before anything
    loaded = _load(source)
    # "MODULE:CLASS" strings are imported like the entrypoint (trusted: the user wrote them)
    classes = resolve_raise_as(raise_as, import_root=import_root, exceptions_only=True)
    try:
        if mode == "manual":
            raise ValueError(
                "mode 'manual' asks for the approval of each call, and a regression test runs unattended "
                "(no approve callback); use frozen, live, forbidden or hybrid"
            )
        session = ReplaySession(
            loaded,
            mode,
            live_llms=live_llms,
            allow_live_tools=allow_live_tools,
            ordering=ordering,
            ignore=ignore,
            raise_as=classes,
            network=network,
            allow_hosts=allow_hosts,
            allow_commands=allow_commands,
        )
    except ValueError as exc:  # the test's own options: it never ran (stepfork run: could_not_execute)
        raise ValueError(f"{CHECK_NOT_BUILT}{_text(str(exc))}") from None
    if not isinstance(source, Trace):
        session.attach_bundle(source)  # extension files (an imported bundle's otel-import.json)
    if isinstance(entrypoint, str):
        try:
            function = resolve_entrypoint(
                entrypoint,
                import_root=import_root,
                network=session.network,  # the import is sealed as the session will be
                allow_hosts=session.allow_hosts,
                mode=session.mode,
                allow_commands=session.allow_commands,
            )
        except EntrypointImportExit as exc:  # a script without a __main__ guard: not the agent's verdict
            raise AssertionError(f"{ENTRYPOINT_UNRESOLVABLE}{_text(str(exc))}") from None
        except EntrypointError as exc:
            raise AssertionError(f"stepfork: entrypoint failed: {exc}") from exc
    else:
        function = entrypoint
    try:
        args, kwargs = entrypoint_arguments(function, recorded_run_input(loaded))
    except EntrypointCallError as exc:
        raise AssertionError(f"{COULD_NOT_EXECUTE}{_text(str(exc))}") from None
    try:
        with session:
            result = call_with_arguments(function, args, kwargs)
    except RecordedDependencyError as exc:
        if session.divergence is not None:
            raise _replay_failure(session.divergence, session) from exc
        # the reference's sentence, also when raise_as made str(exc) the bare recorded message
        text = recorded_failure_text(exc.kind, exc.name, exc.error_type, exc.message)
        raise AssertionError(f"stepfork: entrypoint failed: {_text(text)}") from exc
    except ReplayError as exc:
        raise _replay_failure(session.divergence or exc, session) from exc
    except Exception as exc:
        if session.divergence is not None:
            raise _replay_failure(session.divergence, session) from exc
        raise AssertionError(f"stepfork: entrypoint failed: {type(exc).__name__}: {_text(str(exc))}") from exc
    try:
        session.verify_complete()
    except ReplayError as exc:
        raise _replay_failure(session.divergence or exc, session) from exc
    for gap in session.seal_gaps:  # a pass, but not of a fully sealed replay: pytest's summary says so
        import warnings

        from stepfork.replay.network_children import NetworkSealWarning

        warnings.warn(NetworkSealWarning(f"network sealed, except: {gap}"), stacklevel=2)
    if trajectory_expectation is not None:
        assert_trajectory(session, trajectory_expectation)
    try:
        actual = redact_json(to_jsonable(result)).value
    except (TypeError, ValueError) as exc:
        raise AssertionError(f"stepfork: entrypoint returned a non-serializable value: {exc}") from exc
    if has_expectation:
        assert_expected_output(
            expectation,
            actual,
            loaded,
            live=session.live_origins(),
            exact=expectation_source == "file",
            ignore=ignore_output,
            scope=session.output_scope(),
        )
    return actual


def assert_expected_output(
    expectation: Any,
    actual: Any,
    trace: Trace,
    *,
    live: Origins | None = None,
    exact: bool = False,
    ignore: Iterable[str] | None = None,
    scope: Any = None,
) -> None:
    """The output assertion of an exported test (entrypoint and program forms alike).

    ``actual`` (redacted JSON) is compared with ``expectation``: exactly when ``exact`` (a reviewed
    expectation the user wrote is an oracle: a value that merely looks random is compared as any other),
    else up to noise, as replay's report compares (:mod:`stepfork.replay.noise`): fresh values (minted by
    the recording and by this replay, ``live``) compare up to a one-to-one renaming, an id the recording
    ``trace`` handed out must match exactly. Paths in ``ignore`` (``$.generated_at``) are not compared.
    ``scope``: the replay's comparison to continue (``ReplaySession.output_scope``: the renaming its input
    matching made), None for a new one.

    Raises:
        AssertionError: ``behavior mismatch at '<path>': expected <v>, got <v>`` (the reference's first
            line), then every differing path, the first one marked first.
    """
    found = output_differences(
        expectation, actual, Origins(trace), live=live, exact=exact, ignore=ignore, scope=scope
    )
    differences, count = found.differences, found.count
    if not differences:
        return
    difference = differences[0]
    lines = [
        f"behavior mismatch at '{display_path(difference.path)}': "
        f"expected {preview(difference.expected)}, got {preview(difference.actual)}"
    ]
    if count > 1:
        lines += difference_lines(differences, count, display=True)
    raise AssertionError("\n".join(lines))
