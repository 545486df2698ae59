"""What a consumed, substituted call gives back (check 9 of :mod:`stepfork.replay.session`).

- a recorded success: its output rebuilt into the tool's return annotation (type-faithful replay, C4);
- a recorded failure: a :class:`~stepfork.replay.errors.RecordedDependencyError` carrying the recorded type,
  message, cause chain and details, sanitized again (C8), or, with ``raise_as``, the user's own exception
  class for that type (:mod:`stepfork.replay.raise_as`).

Nothing here imports or evaluates anything named by the bundle: types are compared as text.
"""

from __future__ import annotations

from typing import Any

from stepfork.replay.errors import RecordedDependencyError, ReplayMismatchError
from stepfork.replay.matching import LiveInput, build_diagnostic
from stepfork.replay.plan import RecordedCall
from stepfork.replay.raise_as import RaiseAs
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.control_flow import rebuild as rebuild_control_flow
from stepfork.trace.errors import TraceSerializationError
from stepfork.trace.jsonable import from_jsonable
from stepfork.trace.redaction import redact_json, redact_text


def recorded_failure(
    expected: RecordedCall, call: BoundaryCall, live: LiveInput, raise_as: RaiseAs | None = None
) -> BaseException:
    """The exception to raise for the recorded failure of ``expected`` (its status is ``error``).

    Args:
        expected: the recorded call, just consumed.
        call, live: the live call and its input (for the diagnostic).
        raise_as: the session's resolved ``raise_as`` mapping, or None (the default behaviour).

    Returns:
        The framework's own exception when the failure is recorded control flow (a LangGraph interrupt, a
        pydantic-ai ModelRetry...; stepfork.trace.control_flow, issue 12); else a RecordedDependencyError
        (``message`` redacted again, ``chain`` and ``details`` redacted; a missing type reads
        ``UnknownError``), or what ``raise_as`` makes of it. Never raises itself.
    """
    signal = rebuild_control_flow(expected.error_details)
    if signal is not None:
        return signal
    error = RecordedDependencyError(
        kind=expected.kind,
        name=expected.label,
        error_type=expected.error_type or "UnknownError",  # as the session resolves raise_as
        message=redact_text(expected.error_message or expected.error_type or "recorded failure"),
        chain=tuple(redact_json(list(expected.error_chain)).value),
        details=redact_json(expected.error_details).value,
        diagnostic=build_diagnostic(expected, call, live),
    )
    return raise_as.convert(error) if raise_as is not None else error


def rebuild_output(expected: RecordedCall, call: BoundaryCall, live: LiveInput) -> Any:
    """The recorded output of ``expected`` rebuilt with ``from_jsonable(output, call.return_type)`` (C4).

    Raises:
        ReplayMismatchError: ``output_annotation_mismatch`` when the output no longer fits the annotation;
            ``path`` names where, the message names the call, the tool and the step.
    """
    try:
        return from_jsonable(expected.output, call.return_type)
    except TraceSerializationError as exc:
        path = getattr(exc, "path", "$")
        raise ReplayMismatchError(
            f"call #{expected.index + 1}: the recorded output of {expected.kind} "
            f"{expected.label!r} does not fit its return annotation {call.return_type!r} at {path} "
            f"(step {expected.step}): {exc}",
            code="output_annotation_mismatch",
            diagnostic=build_diagnostic(expected, call, live),
            path=path,
        ) from exc
