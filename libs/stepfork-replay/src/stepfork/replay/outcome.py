"""``replay_entrypoint``: run a replay and build the report the CLI renders (spec replay.txt, "CLI").

The report separates three questions:

- execution: did the entrypoint complete (``COMPLETED``) or raise (``RAISED`` with type and message)?
- dependency matching: ``COMPLETE`` (every recorded call matched and consumed), ``DIVERGED`` (a replay
  error, with its code and diagnostic), ``REJECTED`` (a stored fingerprint does not match its recorded
  payload: the bundle changed after it was recorded, so nothing the agent did is in question; the message
  says so and recommends ``stepfork validate --verify-integrity``) or ``INCOMPLETE`` (recorded calls left
  unconsumed);
- recorded behaviour: ``MATCHED`` / ``DIVERGED`` (first difference path) against the recorded final output,
  ``NOT RECORDED`` (no final output recorded), ``REPRODUCED FAILURE`` (the run was recorded as failed and
  raised the same error type), ``NOT COMPARED`` (the replay diverged or was rejected, so the output proves
  nothing),
  ``UNVERIFIABLE`` (the return value has no JSON form).

Exit codes (spec): 0 the run completed or reproduced the recorded failure; 1 it diverged (matching
DIVERGED/INCOMPLETE, or behaviour DIVERGED); 2 invalid mode, unreadable trace (a stored fingerprint that does
not match its payload counts: the bundle is rejected) or unresolvable entrypoint. Errors raised before the
run (ValueError, TraceStorageError, EntrypointError) are raised, not reported: map them with
:func:`exit_code_for_error`.

The report's types (:class:`ReplayOutcome` and its three verdicts) live in
:mod:`stepfork.replay.outcome_report` and are importable from here too.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from stepfork.replay.diagnostics import display_path, preview
from stepfork.replay.entrypoint import recorded_run_input, resolve_entrypoint, run_in_session
from stepfork.replay.errors import (
    RecordedDependencyError,
    ReplayError,
    ReplayExhaustedError,
    ReplayMismatchError,
    short_type_name,
)
from stepfork.replay.ignoring import check_output_paths
from stepfork.replay.modes import Approver
from stepfork.replay.noise import Origins
from stepfork.replay.noise.output import output_differences
from stepfork.replay.outcome_report import BehaviorReport, ExecutionReport, MatchingReport, ReplayOutcome
from stepfork.replay.raise_as import RaiseAsTarget, recorded_error_types, resolve_raise_as, unmatched_keys
from stepfork.replay.session import ReplaySession, load_source
from stepfork.trace.bundle import Trace
from stepfork.trace.eventlog import qualified_type_name
from stepfork.trace.jsonable import to_jsonable
from stepfork.trace.models import EventType, RunStatus
from stepfork.trace.redaction import redact_json, redact_text

__all__ = [
    "REJECTING_CODES",
    "BehaviorReport",
    "ExecutionReport",
    "MatchingReport",
    "ReplayOutcome",
    "exit_code_for_error",
    "replay_entrypoint",
    "session_outcome",
]

REJECTING_CODES = frozenset(
    {"invalid_input_fingerprint", "invalid_output_fingerprint", "content_not_captured"}
)


def _text(message: str) -> str:
    return redact_text(message)


def exit_code_for_error(error: BaseException) -> int:
    """The CLI exit code of an error raised before a replay could run: 2 for an invalid mode or option
    (ValueError), an unreadable trace (TraceError) or an unresolvable entrypoint (EntrypointError); 1 for a
    replay error; 2 for anything else (the replay could not be attempted)."""
    if isinstance(error, ReplayError):
        return 2 if getattr(error, "code", None) in REJECTING_CODES else 1
    return 2


def _matching(session: ReplaySession) -> MatchingReport:
    total = len(session.calls)
    matched = len(session.matched)
    error = session.divergence
    if error is not None:
        return MatchingReport(
            "REJECTED" if error.code in REJECTING_CODES else "DIVERGED",
            matched,
            total,
            error.code,
            _text(error.summary),
            error.diagnostic,
            session.summary.remaining,
            error,
        )
    try:
        session.verify_complete()
    except ReplayExhaustedError as exc:
        return MatchingReport(
            "INCOMPLETE", matched, total, exc.code, _text(exc.summary), exc.diagnostic, exc.remaining, exc
        )
    except ReplayMismatchError as exc:  # request_not_made: a request of the agent's never came
        return MatchingReport(
            "DIVERGED", matched, total, exc.code, _text(exc.summary), exc.diagnostic, (), exc
        )
    return MatchingReport("COMPLETE", matched, total)


def _json_result(result: Any) -> tuple[Any, str | None]:
    """The redacted JSON form of a return value and None, or None and why it has no JSON form."""
    try:
        return redact_json(to_jsonable(result)).value, None
    except (TypeError, ValueError) as exc:
        return None, str(exc)


def _behavior(
    trace: Trace,
    raised: BaseException | None,
    actual: Any,
    result_error: str | None,
    matching: MatchingReport,
    live: Origins | None = None,
    ignore_output: Iterable[str] = (),
    scope: Any = None,
) -> BehaviorReport:
    """The comparison with the recorded run; ``actual`` and ``result_error`` as :func:`_json_result` of
    the return value (both None when the entrypoint raised); ``live``: where the replay's values came from
    (``ReplaySession.live_origins``); ``ignore_output``: JSON paths of the output not compared; ``scope``:
    the replay's comparison to continue (``ReplaySession.output_scope``)."""
    failure = trace.failure
    run_ends = [event for event in trace.events if event.type == EventType.RUN_END]
    run_end = run_ends[-1] if run_ends else None
    recorded_failed = trace.status == RunStatus.FAILED or (
        run_end is not None and getattr(run_end, "run_status", None) == RunStatus.FAILED
    )
    failure_type = failure.type if failure is not None else None
    if matching.status in ("DIVERGED", "REJECTED"):
        what = "diverged" if matching.status == "DIVERGED" else "was rejected"
        return BehaviorReport(
            "NOT COMPARED", f"the replay {what}; the output is not compared", recorded_failure=failure_type
        )
    if raised is not None:
        raised_types = {short_type_name(qualified_type_name(raised))}
        if isinstance(raised, RecordedDependencyError):
            raised_types.add(short_type_name(raised.error_type))
        if recorded_failed and failure_type is not None and short_type_name(failure_type) in raised_types:
            return BehaviorReport(
                "REPRODUCED FAILURE", f"raised {failure_type} as recorded", recorded_failure=failure_type
            )
        expected = f"failure {failure_type}" if recorded_failed else "completion"
        return BehaviorReport(
            "DIVERGED",
            f"expected {expected}, got {qualified_type_name(raised)}",
            expected=expected,
            actual=qualified_type_name(raised),
            recorded_failure=failure_type,
        )
    if result_error is not None:
        why = f"the return value has no JSON form: {result_error}"
        return BehaviorReport("UNVERIFIABLE", why, recorded_failure=failure_type)
    if recorded_failed:
        return BehaviorReport(
            "DIVERGED",
            f"expected failure {failure_type}, got completion",
            expected=f"failure {failure_type}",
            actual="completion",
            recorded_failure=failure_type,
        )
    recorded_output = getattr(run_end, "output", None) if run_end is not None else None
    if recorded_output is None:
        return BehaviorReport("NOT RECORDED", "the trace records no final output")
    # ``actual`` is redacted with today's rules: so is the recorded output, which a bundle written with
    # narrower rules holds in clear (docs/redaction.md, "Bundles written with narrower rules"); the same
    # value is then hidden on both sides and never printed in a difference (NEWCOMER2 finding 19)
    recorded_output = redact_json(recorded_output).value
    # up to noise: fresh ids renamed one-to-one, framework-message timing and new fields (issue 28)
    found = output_differences(
        recorded_output, actual, Origins(trace), live=live, ignore=ignore_output, scope=scope
    )
    if found.first is None:
        message = "the output matches the recorded output"
        if found.ignored_count:
            message += f" (up to {found.ignored_count} difference(s) accepted as noise)"
        return BehaviorReport("MATCHED", message, ignored=found.ignored, ignored_count=found.ignored_count)
    difference = found.first
    path = display_path(difference.path)
    at = difference.at or (None, None)
    expected, got = preview(difference.expected, around=at[0]), preview(difference.actual, around=at[1])
    return BehaviorReport(
        "DIVERGED",
        f"output differs at '{path}': expected {expected}, got {got}",
        path=path,
        expected=expected,
        actual=got,
        differences=found.differences,
        difference_count=found.count,
        ignored=found.ignored,
        ignored_count=found.ignored_count,
    )


def session_outcome(session: ReplaySession, trace: Trace, raised: BaseException | None) -> ReplayOutcome:
    """The report of a replay that someone else ran under ``session`` (a pytest test body): how it ended
    (``raised``, or completed), which calls matched and where it diverged. The behaviour is ``NOT
    COMPARED``: the test's own assertions judge it. ``exit_code`` is 1 unless matching is COMPLETE and
    nothing was raised."""
    execution = (
        ExecutionReport("COMPLETED")
        if raised is None
        else ExecutionReport("RAISED", qualified_type_name(raised), _text(str(raised)))
    )
    matching = _matching(session)
    return ReplayOutcome(
        mode=session.mode,
        agent_name=trace.agent_name,
        run_id=trace.run_id,
        execution=execution,
        matching=matching,
        behavior=BehaviorReport("NOT COMPARED", "a test body: its own assertions judge the behaviour"),
        result=None,
        calls=session.executed_calls,
        exit_code=0 if raised is None and matching.status == "COMPLETE" else 1,
        network=session.network,
        allowed_hosts=session.allow_hosts,
        allowed_commands=session.allow_commands,
        seal_gaps=session.seal_gaps,
        requests=session.served_requests,
        recorded_requests=session.recorded_requests,
    )


def replay_entrypoint(
    trace: Trace | str | os.PathLike[str],
    entrypoint: Callable[..., Any] | str,
    *,
    mode: str = "frozen",
    live_llms: Iterable[str] | None = None,
    allow_live_tools: Iterable[str] | None = None,
    approve: Approver | None = None,
    import_root: str | os.PathLike[str] | None = None,
    ordering: str = "auto",
    raise_as: Mapping[str, RaiseAsTarget | str] | None = None,
    network: str | None = None,
    allow_hosts: Iterable[str] | None = None,
    ignore: Mapping[str, Iterable[str]] | None = None,
    ignore_output: Iterable[str] | None = None,
    allow_commands: Iterable[str] | None = None,
) -> ReplayOutcome:
    """Replay ``entrypoint`` (a callable or ``"MODULE:FUNCTION"``) against ``trace`` and report.

    ``mode``, ``live_llms``, ``allow_live_tools``, ``approve``, ``ordering``, ``network``,
    ``allow_hosts``, ``allow_commands``, ``ignore``: as :class:`ReplaySession`. ``ignore_output``: JSON
    paths of the run's output left out of the comparison with the recorded output (``$.generated_at``;
    ``replay --ignore PATH``), each difference there reported as ignored (``--ignore``).
    ``raise_as``: as :class:`ReplaySession`; a value may also be a ``"MODULE:CLASS"`` string, imported
    like the entrypoint against ``import_root`` (trusted: the caller names it, never the bundle). It
    changes which exception the entrypoint sees, not how the report judges what it then does
    (docs/decisions.md).

    Raises (before anything runs; map with :func:`exit_code_for_error`):
        TraceIntegrityError: the bundle does not match its integrity.json (a TraceStorageError).
        TraceStorageError: the bundle is unreadable.
        ValueError: an invalid mode, option combination, ``raise_as`` mapping, ``ignore`` label (no such
            recorded call) or ignored path (a stray ``[``).
        RaiseAsClassError: a ``raise_as`` string cannot be resolved (an EntrypointError; check it first).
        EntrypointError: the entrypoint cannot be resolved, or (EntrypointCallError, code
            ``missing_argument``) cannot be called with the recorded run input.
    """
    ignore_output = check_output_paths(ignore_output)  # a malformed path is a ValueError, before anything
    loaded = load_source(trace)
    classes = resolve_raise_as(raise_as, import_root=import_root)
    session = ReplaySession(
        loaded,
        mode,
        live_llms=live_llms,
        allow_live_tools=allow_live_tools,
        approve=approve,
        ordering=ordering,
        raise_as=classes,
        network=network,
        allow_hosts=allow_hosts,
        ignore=ignore,
        allow_commands=allow_commands,
    )
    if not isinstance(trace, Trace):
        session.attach_bundle(trace)  # extension files (an imported bundle's otel-import.json)
    unmatched = unmatched_keys(classes, recorded_error_types(session.calls)) if classes else ()
    function = (
        resolve_entrypoint(
            entrypoint,
            import_root=import_root,
            network=session.network,  # the import is sealed as the session will be
            allow_hosts=session.allow_hosts,
            mode=session.mode,
            allow_commands=session.allow_commands,
        )
        if isinstance(entrypoint, str)
        else entrypoint
    )
    result, raised = run_in_session(session, function, recorded_run_input(loaded))  # EntrypointCallError
    execution = (
        ExecutionReport("COMPLETED")
        if raised is None
        # a replay error's headline only: its detail lines are the matching report's
        else ExecutionReport(
            "RAISED",
            qualified_type_name(raised),
            _text(raised.summary if isinstance(raised, ReplayMismatchError) else str(raised)),
        )
    )
    matching = _matching(session)
    # the actual result is shown whenever the entrypoint completed, compared or not
    actual, result_error = _json_result(result) if raised is None else (None, None)
    behavior = _behavior(
        loaded,
        raised,
        actual,
        result_error,
        matching,
        session.live_origins(),
        tuple(ignore_output or ()),
        session.output_scope(),
    )
    if matching.status == "REJECTED":
        exit_code = 2
    elif matching.status != "COMPLETE" or behavior.status == "DIVERGED":
        exit_code = 1
    else:
        exit_code = 0
    suggestion = None
    if type(raised) is RecordedDependencyError and behavior.status == "DIVERGED":
        suggestion = f"--raise-as {raised.error_type}=MODULE:CLASS"
    return ReplayOutcome(
        raise_as_suggestion=suggestion,
        mode=session.mode,
        agent_name=loaded.agent_name,
        run_id=loaded.run_id,
        execution=execution,
        matching=matching,
        behavior=behavior,
        result=actual,
        calls=session.executed_calls,
        exit_code=exit_code,
        raise_as_unmatched=unmatched,
        result_error=result_error,
        ignored=tuple(session.ignored_differences),
        network=session.network,
        allowed_hosts=session.allow_hosts,
        allowed_commands=session.allow_commands,
        seal_gaps=session.seal_gaps,
        requests=session.served_requests,
        recorded_requests=session.recorded_requests,
    )
