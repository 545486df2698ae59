"""Property tests: generated traces round-trip save -> load exactly and validate; corruption never crashes."""

from __future__ import annotations

import string
import tempfile
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepfork.trace.bundle import Trace, load_trace, save_trace
from stepfork.trace.canonical import fingerprint
from stepfork.trace.errors import TraceStorageError
from stepfork.trace.models import (
    HASHED_FIELDS,
    ErrorEvent,
    EventBase,
    FailureInfo,
    LLMRequest,
    LLMResponse,
    ReplayPolicy,
    RunEnd,
    RunStart,
    RunStatus,
    StateChange,
    ToolCall,
    ToolResult,
)
from stepfork.trace.validation import validate_bundle

# No ASCII letters: no generated key or string can look like a secret, so redaction changes nothing and
# the round trip must be exact. Unicode, controls, quotes, backslashes and digits stay in.
TEXT = st.text(st.characters(codec="utf-8", exclude_characters=string.ascii_letters), max_size=12)
NAMES = st.text(st.characters(codec="utf-8", exclude_characters=string.ascii_letters), min_size=1, max_size=8)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(TEXT, children, max_size=4),
    max_leaves=12,
)
TIMES = st.datetimes(
    min_value=datetime(1980, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=45)), timezone(timedelta(hours=-8))]),
)
POLICIES = st.sampled_from(list(ReplayPolicy))
DURATIONS = st.none() | st.integers(min_value=0, max_value=10**7)


@st.composite
def traces(draw: st.DrawFn) -> Trace:
    """A well-formed run: run_start, calls with their results, state changes, maybe a failure, run_end."""
    failed = draw(st.booleans())
    trace = Trace(
        run_id=draw(NAMES),
        agent_name=draw(NAMES),
        created_at=draw(TIMES),
        status=RunStatus.FAILED if failed else RunStatus.COMPLETED,
    )
    counter = iter(range(10**6))

    def add(event_type: type[EventBase], **fields: Any) -> EventBase:
        return trace.add(
            event_type(
                id=f"evt_{next(counter)}",
                run_id=trace.run_id,
                timestamp=draw(TIMES),
                replay_policy=draw(POLICIES),
                **fields,
            )
        )

    root = add(RunStart, input=draw(JSON))
    for kind in draw(st.lists(st.sampled_from(["tool", "llm", "state"]), max_size=6)):
        if kind == "tool":
            name = draw(NAMES)
            call = add(ToolCall, parent_id=root.id, name=name, input=draw(JSON))
            add(ToolResult, parent_id=call.id, name=name, output=draw(JSON), duration_ms=draw(DURATIONS))
        elif kind == "llm":
            model = draw(NAMES)
            request = add(
                LLMRequest, parent_id=root.id, model=model, provider=draw(st.none() | NAMES), input=draw(JSON)
            )
            add(
                LLMResponse,
                parent_id=request.id,
                model=model,
                output=draw(JSON),
                prompt_tokens=draw(DURATIONS),
                cost_usd=draw(st.none() | st.floats(min_value=0, max_value=1e6)),
            )
        else:
            add(
                StateChange,
                parent_id=root.id,
                key=draw(st.none() | NAMES),
                before=draw(JSON),
                after=draw(JSON),
            )
    if failed:
        error = add(
            ErrorEvent, parent_id=root.id, error_type=draw(NAMES), message=draw(NAMES), details=draw(JSON)
        )
        trace.failure = FailureInfo(type="E", message="m", step=error.step)
    add(RunEnd, parent_id=root.id, run_status=trace.status, output=draw(JSON))
    return trace


def _without_hashes(event: EventBase) -> dict[str, Any]:
    return event.model_dump(exclude={"input_hash", "output_hash"})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces())
def test_any_trace_round_trips_exactly_and_validates_strict_with_integrity(trace: Trace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = save_trace(trace, Path(tmp) / "run.sftrace")
        loaded = load_trace(path)
        result = validate_bundle(path, strict=True, verify_integrity=True)
    assert result.valid, result.issues
    assert loaded.manifest == trace.manifest
    assert [_without_hashes(e) for e in loaded.events] == [_without_hashes(e) for e in trace.events]
    for event in loaded.events:
        in_field, out_field = HASHED_FIELDS[event.type]
        assert event.input_hash == (fingerprint(getattr(event, in_field)) if in_field else None)
        assert event.output_hash == (fingerprint(getattr(event, out_field)) if out_field else None)


@settings(max_examples=150, deadline=None)
@given(trace=traces(), data=st.data())
def test_any_corrupted_byte_loads_or_fails_with_a_storage_code_never_anything_else(
    trace: Trace, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = save_trace(trace, Path(tmp) / "run.sftrace")
        name = data.draw(st.sampled_from(["events.jsonl", "manifest.json", "redactions.json"]))
        raw = bytearray((path / name).read_bytes())
        index = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        raw[index] = data.draw(st.integers(min_value=0, max_value=255))
        (path / name).write_bytes(bytes(raw))
        try:
            load_trace(path)
        except TraceStorageError as exc:
            assert exc.code in {"invalid_json", "invalid_event", "invalid_manifest", "unsupported_schema"}
        result = validate_bundle(path, strict=False, verify_integrity=True)
    assert result.integrity is not None
