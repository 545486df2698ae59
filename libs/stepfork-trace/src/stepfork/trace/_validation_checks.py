"""The event checks of validation, run on slim event records (docs/format.md "Validation").

Every check but the payload hashes needs only an event's metadata, so the checks read :class:`EventMeta`
records (id, run_id, parent_id, step, type, name, model, run_status) and a streaming validator can drop
each event's payloads as soon as :func:`payload_hash_issues` has fingerprinted them. The rules and their
codes are those of ``stepfork.trace.validation`` (its module docstring and docs/format.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple, Protocol

from stepfork.trace._format import HASHED_FIELDS, EventType, RunStatus
from stepfork.trace._validation_codes import RUN_INCOMPLETE, TIMESTAMP_ORDER

if TYPE_CHECKING:  # the checks read plain records: importing them imports no pydantic (_quick_validation)
    from datetime import datetime

    from stepfork.trace._validation_types import ValidationIssue
    from stepfork.trace.models import EventBase


class Totals(Protocol):
    """The counts the checks read of ``totals`` (``TraceTotals``)."""

    @property
    def events(self) -> int: ...

    @property
    def llm_calls(self) -> int: ...

    @property
    def tool_calls(self) -> int: ...


class Failure(Protocol):
    """What the checks read of ``failure`` (``FailureInfo``)."""

    @property
    def step(self) -> int: ...


class RunHeader(Protocol):
    """What the checks read of the manifest (notes 1.2): a ``TraceManifest``, an in-memory ``Trace``, or
    the quick verdict's plain record of manifest.json (``_quick_validation``)."""

    @property
    def run_id(self) -> str: ...

    @property
    def status(self) -> RunStatus: ...

    @property
    def totals(self) -> Totals: ...

    @property
    def failure(self) -> Failure | None: ...


class EventMeta(NamedTuple):
    """The fields of one event the structure, totals, execution and pairing checks read; no payload.

    ``name`` is set for tool_call/tool_result, ``model`` for llm_request/llm_response (None when the
    response names none), ``run_status`` for run_end; each is None for the other types. ``timestamp`` is
    the event's (aware) datetime.
    """

    id: str
    run_id: str
    parent_id: str | None
    step: int
    type: EventType
    name: str | None
    model: str | None
    run_status: RunStatus | None
    timestamp: datetime | None = None

    @classmethod
    def of(cls, event: EventBase, run_id: str) -> EventMeta:
        """The record of ``event``; ``run_id`` (the manifest's) is shared when equal, to save a string."""
        # a pydantic model keeps its field values in __dict__: .get avoids the slow __getattr__ of a miss
        fields = event.__dict__
        return cls(
            event.id,
            run_id if event.run_id == run_id else event.run_id,
            event.parent_id,
            event.step,
            event.type,
            fields.get("name"),
            fields.get("model"),
            fields.get("run_status"),
            event.timestamp,
        )


_RESULT_OF = {EventType.TOOL_RESULT: EventType.TOOL_CALL, EventType.LLM_RESPONSE: EventType.LLM_REQUEST}


class Findings(NamedTuple):
    """The outcome of :func:`check_events`: issues and warnings in check order, and ``incomplete``."""

    issues: list[ValidationIssue]
    warnings: list[ValidationIssue]
    incomplete: bool


def check_events(
    header: RunHeader,
    events: list[EventMeta],
    *,
    strict: bool,
    hash_issues: list[ValidationIssue] | None = None,
) -> Findings:
    """Run the event checks of ``events`` (in file order) against ``header``; never raises.

    Order of the issues: structure, totals (skipped in partial mode while ``running``), execution and
    pairing (strict only), then ``hash_issues`` (the payload hash issues, computed by the caller with
    :func:`payload_hash_issues`). ``incomplete``: the manifest is ``running``, its totals disagree with the
    events and there is no run_end (then a ``run_incomplete`` warning is added last).
    """
    issues: list[ValidationIssue] = []
    warnings: list[ValidationIssue] = []
    issues += _structure(header, events)
    if strict or header.status != RunStatus.RUNNING:
        issues += _totals(header, events)
    if strict:
        issues += _execution(header, events, warnings)
    else:
        _status_warning(header, events, warnings)
    if hash_issues is not None:
        issues += hash_issues
    _timestamp_warning(events, warnings)
    # The recorder writes totals only when the run ends: a running manifest whose totals disagree with the
    # events is a recording still going or killed (a legacy writer's running bundle has its totals).
    incomplete = (
        header.status == RunStatus.RUNNING
        and header.totals.events != len(events)
        and not any(event.type == EventType.RUN_END for event in events)
    )
    if incomplete:
        warnings.append(
            _issue(
                RUN_INCOMPLETE,
                "the run never finished: its recording is still going or was interrupted (manifest status "
                "running, totals never written)" + ("; validate it with --partial" if strict else ""),
            )
        )
    return Findings(issues, warnings, incomplete)


def _issue(
    code: str, message: str, event: EventMeta | EventBase | None = None, location: str | None = None
) -> ValidationIssue:
    # imported here: a valid bundle has no issue, and the quick verdict (cold start) imports no dataclasses
    from stepfork.trace._validation_types import ValidationIssue

    if event is None:
        return ValidationIssue(code, message, location=location)
    return ValidationIssue(code, message, event_id=event.id, step=event.step, location=location)


def _structure(header: RunHeader, events: list[EventMeta]) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    first_index: dict[str, int] = {}
    for index, event in enumerate(events):
        first_index.setdefault(event.id, index)
    seen: set[str] = set()
    previous_step: int | None = None
    for index, event in enumerate(events):
        if event.id in seen:
            issues.append(
                _issue("duplicate_event_id", f"event id {event.id!r} is used more than once", event)
            )
        seen.add(event.id)
        if event.run_id != header.run_id:
            issues.append(
                _issue(
                    "run_id_mismatch", f"event run_id {event.run_id!r} differs from {header.run_id!r}", event
                )
            )
        if previous_step is not None and event.step < previous_step:
            issues.append(_issue("step_order", f"step {event.step} comes after step {previous_step}", event))
        previous_step = event.step
        if event.parent_id is not None:
            parent = first_index.get(event.parent_id)
            if parent is None:
                issues.append(_issue("invalid_parent", f"parent {event.parent_id!r} is not an event", event))
            elif parent >= index:
                issues.append(
                    _issue("parent_not_earlier", f"parent {event.parent_id!r} is not earlier", event)
                )
    return issues


def _totals(header: RunHeader, events: list[EventMeta]) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    totals = header.totals
    if totals.events != len(events):
        issues.append(
            _issue(
                "event_count_mismatch",
                f"totals.events is {totals.events}, events.jsonl has {len(events)}",
                location="manifest.json:totals.events",
            )
        )
    for name, kind in (("llm_calls", EventType.LLM_REQUEST), ("tool_calls", EventType.TOOL_CALL)):
        count = sum(1 for event in events if event.type == kind)
        if getattr(totals, name) != count:
            issues.append(
                _issue(
                    "totals_mismatch",
                    f"totals.{name} is {getattr(totals, name)}, events hold {count}",
                    location=f"manifest.json:totals.{name}",
                )
            )
    return issues


def _timestamp_warning(events: list[EventMeta], warnings: list[ValidationIssue]) -> None:
    """One ``timestamp_order`` warning when an event's timestamp is earlier than the line before it.

    A recorder that stamped events before taking its write lock (Stepfork before issue 12) wrote such
    inversions when threads recorded at once; the events are still valid, but their order in time is not
    their line order, so the warning counts them and names the first.
    """
    first: EventMeta | None = None
    count = 0
    previous: datetime | None = None
    for event in events:
        stamp = event.timestamp
        if stamp is not None and previous is not None and stamp < previous:
            count += 1
            if first is None:
                first = event
        if stamp is not None:
            previous = stamp if previous is None or stamp > previous else previous
    if first is not None:
        warnings.append(
            _issue(
                TIMESTAMP_ORDER,
                f"{count} event(s) carry a timestamp earlier than an event written before them (line order "
                "contradicts time; written by a recorder that stamped events outside its lock); replay "
                "orders concurrent calls by line, so re-record to get exact concurrency",
                first,
            )
        )


def _status_warning(header: RunHeader, events: list[EventMeta], warnings: list[ValidationIssue]) -> None:
    ends = [event for event in events if event.type == EventType.RUN_END]
    if ends and header.status == RunStatus.RUNNING and ends[-1].run_status != RunStatus.RUNNING:
        warnings.append(
            _issue(
                "status_mismatch",
                f"manifest status is running but run_end says {ends[-1].run_status}",
                ends[-1],
                location="manifest.json:status",
            )
        )


def _execution(
    header: RunHeader, events: list[EventMeta], warnings: list[ValidationIssue]
) -> list[ValidationIssue]:
    issues: list[ValidationIssue] = []
    starts = sum(1 for event in events if event.type == EventType.RUN_START)
    if starts != 1:
        issues.append(_issue("run_start_count", f"expected exactly 1 run_start, found {starts}"))
    errors = [event for event in events if event.type == EventType.ERROR]
    if header.status == RunStatus.FAILED and not errors:
        issues.append(_issue("missing_error_event", "the run failed but has no error event"))
    failure = header.failure
    if failure is not None and not any(event.step == failure.step for event in errors):
        issues.append(
            _issue(
                "failure_step",
                f"failure.step {failure.step} is not the step of an error event",
                location="manifest.json:failure.step",
            )
        )
    for index, event in enumerate(events):
        if event.step != index:
            issues.append(
                _issue("step_mismatch", f"step {event.step} at line {index + 1} (expected {index})", event)
            )
    ends = [(index, event) for index, event in enumerate(events) if event.type == EventType.RUN_END]
    for index, event in ends:
        if index != len(events) - 1 or len(ends) > 1:
            issues.append(_issue("run_end_position", "run_end must be the last event and unique", event))
    ended = bool(ends) or header.status != RunStatus.RUNNING
    if not ends and header.status != RunStatus.RUNNING:
        issues.append(_issue("run_end_position", f"the run is {header.status.value} but has no run_end"))
    if ends:
        run_status = ends[-1][1].run_status
        if header.status != RunStatus.RUNNING and run_status != header.status:
            issues.append(
                _issue(
                    "status_mismatch",
                    f"manifest status {header.status.value} but run_end says {run_status}",
                    ends[-1][1],
                    location="manifest.json:status",
                )
            )
    _status_warning(header, events, warnings)
    issues += _pairing(events, ended=ended)
    return issues


def _same_call(call: EventMeta, result: EventMeta) -> bool:
    if result.type == EventType.TOOL_RESULT:
        return call.name == result.name
    return result.model is None or call.model == result.model


def _pairing(events: list[EventMeta], *, ended: bool) -> list[ValidationIssue]:
    """Pair each result with its call: by parent, else the nearest earlier unpaired call of that name.

    An error event whose parent is an unpaired call closes it (a failed LLM request has no response,
    notes 1.5). Calls left open are reported only when the run ended: a killed recorder leaves calls open.
    """
    issues: list[ValidationIssue] = []
    pending: dict[str, EventMeta] = {}  # insertion order = recording order
    for event in events:
        if event.type in (EventType.TOOL_CALL, EventType.LLM_REQUEST):
            pending.setdefault(event.id, event)
        elif event.type == EventType.ERROR:
            if event.parent_id in pending:
                del pending[event.parent_id]
        elif event.type in _RESULT_OF:
            kind = _RESULT_OF[event.type]
            call = pending.get(event.parent_id or "")
            if call is None or call.type != kind or not _same_call(call, event):
                call = next(
                    (c for c in reversed(pending.values()) if c.type == kind and _same_call(c, event)), None
                )
            if call is None:
                issues.append(
                    _issue("unpaired_result", f"{event.type.value} has no matching open call", event)
                )
            else:
                del pending[call.id]
    if ended:
        for call in pending.values():
            issues.append(_issue("unpaired_call", f"{call.type.value} never got a result", call))
    return issues


def payload_hash_issues(event: EventBase) -> list[ValidationIssue]:
    """Check ``event``'s input_hash/output_hash against the fingerprints of its payloads (notes 2.2).

    Returns one ``integrity_unverified`` issue per hashed field whose stored hash is null and one
    ``payload_hash_mismatch`` per stored hash that differs (a payload with no canonical bytes never
    matches), located at ``events.jsonl:<hash name>``; empty when both hold. Never raises.
    """
    from stepfork.trace.canonical import canonical_of_fingerprint, fingerprint
    from stepfork.trace.errors import TraceError

    issues: list[ValidationIssue] = []
    for field_name, hash_name in zip(HASHED_FIELDS[event.type], ("input_hash", "output_hash"), strict=True):
        if field_name is None:
            continue
        stored = getattr(event, hash_name)
        location = f"events.jsonl:{hash_name}"
        if stored is None:
            issues.append(_issue("integrity_unverified", f"{hash_name} is null", event, location))
            continue
        value = getattr(event, field_name)
        if canonical_of_fingerprint(value, stored) is not None:  # proven as replay proves it (no float check)
            continue
        try:
            actual = fingerprint(value)
        except TraceError as exc:
            actual = f"<{exc.code}>"
        if actual != stored:
            issues.append(
                _issue(
                    "payload_hash_mismatch",
                    f"{hash_name} does not match the {field_name} payload",
                    event,
                    location,
                )
            )
    return issues
