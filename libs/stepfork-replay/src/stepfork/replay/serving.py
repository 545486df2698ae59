"""What a consumed, substituted call gives back (check 9 of :mod:`stepfork.replay.session_calls`).

- a recorded success: its output rebuilt into the tool's return annotation (type-faithful replay, C4);
- a recorded failure: a :class:`~stepfork.replay.errors.RecordedDependencyError` carrying the recorded type,
  message, cause chain and details, sanitized again (C8), or, with ``raise_as``, the user's own exception
  class for that type (:mod:`stepfork.replay.raise_as`); its cause chain as ``__cause__`` links
  (:mod:`stepfork.replay.causes`).

Nothing here imports or evaluates anything named by the bundle: types are compared as text.
"""

from __future__ import annotations

import inspect
from typing import Any, Final

import orjson

from stepfork.replay.causes import link_causes
from stepfork.replay.errors import RecordedDependencyError, ReplayMismatchError
from stepfork.replay.matching import LiveInput, build_diagnostic
from stepfork.replay.plan import RecordedCall
from stepfork.replay.raise_as import RaiseAs, builtin_exception, combined_instance
from stepfork.trace.boundary import BoundaryCall
from stepfork.trace.control_flow import rebuild as rebuild_control_flow
from stepfork.trace.errors import TraceSerializationError
from stepfork.trace.jsonable import from_jsonable
from stepfork.trace.plainjson import holds_tag
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
        ``UnknownError``), or what ``raise_as`` makes of it; a failure of a Python builtin type
        (``ValueError``, ``TimeoutError``, ``KeyError``...) that ``raise_as`` does not cover is an instance
        of that builtin combined with RecordedDependencyError (``str()`` the recorded message, ``repr()``
        ``ValueError('...')``: docs/replay.md, NEWCOMER3 finding 3); either way with the recorded chain as
        ``__cause__`` links (:mod:`stepfork.replay.causes`). Never raises itself.
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
    raised = raise_as.convert(error) if raise_as is not None else error
    if raised is error:
        builtin = builtin_exception(error.error_type)
        if builtin is not None:  # `except ValueError`, str(e) and repr(e) behave as they did live
            raised = combined_instance(builtin, error, "a recorded builtin failure") or error
    link_causes(raised, error, raise_as)  # the recorded chain as __cause__ links (C8)
    return raised


def rebuild_output(expected: RecordedCall, call: BoundaryCall, live: LiveInput, plain: bool = False) -> Any:
    """The recorded output of ``expected`` rebuilt with ``from_jsonable(output, call.return_type)`` (C4).

    ``plain``: ``check_outcome`` checked the fingerprint of ``expected.output`` and found no tagged form in
    it (its return value). For a call that only reads its output (``call.reads_output``, no annotation)
    and ``plain``, the recorded value itself is returned: ``from_jsonable`` would return an equal copy, and
    the caller changes nothing (the HTTP capture encodes it to response bytes at once).

    Raises:
        ReplayMismatchError: ``output_annotation_mismatch`` when the output no longer fits the annotation;
            ``path`` names where, the message names the call, the tool and the step.
    """
    annotation = call.return_type
    if annotation is None or annotation is inspect.Signature.empty:
        if call.reads_output and plain:
            return expected.output
        copied = _tagless_copy(expected.output)
        if copied is not _NOT_PLAIN:
            return copied
    elif type(expected.output) is annotation and annotation in _OWN_VALUE:
        return expected.output  # what pydantic makes of a JSON scalar of the very type annotated: itself
    try:
        return from_jsonable(expected.output, annotation)
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


_OWN_VALUE: Final = frozenset({str, int, float, bool, type(None)})
"""Annotations into which ``from_jsonable`` validates a recorded value of that exact type as the value itself
(``-> None`` of a tool returning nothing, ``-> str``...): no pydantic call is needed for them."""

_NOT_PLAIN: Final = object()
# orjson would write these Python types itself; refused, so that only JSON values take the copy
_NATIVE_TYPES_REFUSED: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def _tagless_copy(output: Any) -> Any:
    """A fresh copy of a recorded output that holds no tagged form (what ``from_jsonable(output)`` returns
    for it), or ``_NOT_PLAIN`` (use ``from_jsonable``).

    A recorded output is JSON parsed from the bundle (``check_outcome`` fingerprints it as such), so
    orjson writes it and reads it back as an equal value, key order and floats included, in two C
    calls: an SSE stream's output holds hundreds of small dicts, which the decoding walk visits one by
    one. A ``"$stepfork":`` key (a tag to decode), an int beyond 64 bits or a lone surrogate (orjson
    refuses them) takes the walk.
    """
    if type(output) is not dict and type(output) is not list:
        return _NOT_PLAIN
    try:
        data = orjson.dumps(output, option=_NATIVE_TYPES_REFUSED)
    except orjson.JSONEncodeError:
        return _NOT_PLAIN
    if holds_tag(data):
        return _NOT_PLAIN
    return orjson.loads(data)
