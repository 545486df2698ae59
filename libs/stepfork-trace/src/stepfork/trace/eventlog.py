"""The recorder's hot path: turn one event into a redacted, hashed ``events.jsonl`` line and append it.

Used by :mod:`stepfork.trace.recording`. Per event (DESIGN.md "Data flow"): build the event as a plain dict
in schema 0.1 field order (REFERENCE-NOTES.md 1.3-1.4), redact its fields (the rules of ``redact_event``,
notes 3), fingerprint the hashed payload fields of the *redacted* event (notes 2.2, ``HASHED_FIELDS``),
then, under one lock, give it its step (its position in the file), serialize it and append it to the
crash-safe ``BundleWriter``. A plain-JSON payload's canonical (sorted) bytes come from the boundary's scan
(``plainjson.take_plain_facts``): when its dict keys and a one-pass screen of those bytes
(``Redactor.may_change``) leave nothing to redact, those bytes are hashed, and the line gets the value in
its recorded key order (one more orjson encoding, skipped when it holds under two distinct keys);
otherwise the redaction walk runs and the redacted value is encoded both ways (docs/performance.md
"Recording"). Key order is kept so that a replayed value is the recorded one, ``json.dumps`` of it
included; hashes cover the sorted bytes, so they do not depend on it (notes 2.2, docs/format.md).

No pydantic on this path: the line is built from the dict directly, and its bytes equal
``serialize_event`` of the same event (tests/trace/test_recording_lines.py checks that). Lines are
appended whole under the lock, so concurrent calls (asyncio tasks, threads) never interleave (C6).
"""

from __future__ import annotations

import itertools
import secrets
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from hashlib import sha256
from typing import Any

import orjson

from stepfork.trace.bundle import BundleWriter
from stepfork.trace.canonical import canonical_json, compact_json
from stepfork.trace.models import HASHED_FIELDS, RedactionEntry
from stepfork.trace.plainjson import take_plain_facts
from stepfork.trace.redaction import RedactionFinding, Redactor, default_redactor

# Each event type's hashed fields, keyed by the plain string type (no enum hashing on the hot path).
_HASHED: dict[str, tuple[str | None, str | None]] = {str(t.value): f for t, f in HASHED_FIELDS.items()}

_NULL_DIGEST = sha256(b"null").hexdigest()  # a null payload's fingerprint (notes 2.2)
MAX_CHAIN = 16  # exception causes kept in an error event's details (C8); bounded against cycles


def new_id(prefix: str) -> str:
    """``prefix`` + 32 lowercase hex of a uuid4 (REFERENCE-NOTES.md 1.5): ``evt_...`` or ``run_...``."""
    return prefix + uuid.uuid4().hex


class IdSource:
    """Event ids for one recording: ``evt_`` + 32 lowercase hex, unique and cheap.

    16 random hex digits per session followed by a 16-digit counter: the shape of the reference ids
    (notes 1.5) without a uuid4 per event. Thread-safe (``itertools.count`` advances atomically).
    """

    def __init__(self) -> None:
        self._prefix = "evt_" + secrets.token_hex(8)
        self._counter = itertools.count(1 << 64)  # hex() then writes "0x1" and 16 digits, zeros kept

    def __call__(self) -> str:
        return self._prefix + hex(next(self._counter))[3:]


def now_timestamp() -> tuple[datetime, str]:
    """The current UTC time and its schema 0.1 text (``...Z``, fraction only when non-zero; notes 1.3)."""
    now = datetime.now(UTC)
    return now, now.isoformat()[:-6] + "Z"  # isoformat already omits a zero fraction


class UtcClock:
    """The current UTC time as schema 0.1 text, as :func:`now_timestamp` writes it, for every event.

    ``datetime.now(UTC).isoformat()`` costs about 1 us; this reads ``time.time_ns()`` (the clock
    ``datetime.now`` reads, floored to microseconds as it does) and formats the date and time of day once
    per second. Thread-safe: the cached second and its text are one tuple, swapped whole.
    """

    def __init__(self) -> None:
        self._second: tuple[int, str] = (-1, "")

    def __call__(self) -> str:
        second, micros = divmod(time.time_ns() // 1000, 1_000_000)
        cached, text = self._second
        if cached != second:
            t = time.gmtime(second)
            date = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}"
            text = f"{date}T{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
            self._second = (second, text)
        return f"{text}.{micros:06d}Z" if micros else text + "Z"


def _digest(event: dict[str, Any], field: str, lines: dict[str, bytes]) -> str:
    """SHA-256 of the canonical bytes of ``event[field]`` (a payload the fast path did not take); its
    compact bytes go into ``lines`` for the event line."""
    payload = event[field]
    if payload is None:
        return _NULL_DIGEST
    lines[field] = compact_json(payload, assume_json=True)
    return sha256(canonical_json(payload, assume_json=True)).hexdigest()


def qualified_type_name(exc: BaseException) -> str:
    """The exception's type as the format records it (``error_type``, ``failure.type``) and as Python's
    traceback prints it: the class's ``__qualname__``, prefixed with its module unless that is
    ``builtins`` or ``__main__`` (``ValueError``, ``app.errors.RateLimited``). Builtins are written as the
    format documents (interop REFERENCE-NOTES.md 1.4: the exception class name); other classes keep their
    module (CASES C8), except ``__main__``, which names how the agent was started, not the class (a replay
    imports ``agent.RateLimited``). Readers accept the older ``builtins.ValueError`` too; docs/decisions.md.
    """
    cls = type(exc)
    module = cls.__module__
    if not module or module in _UNQUALIFIED_MODULES:
        return cls.__qualname__
    return f"{module}.{cls.__qualname__}"


_UNQUALIFIED_MODULES = frozenset({"builtins", "__main__"})  # traceback.TracebackException's rule


def exception_message(exc: BaseException) -> str:
    """``str(exc)``, or the class name when that is empty (REFERENCE-NOTES.md 1.4); never empty.

    Lone surrogates (not UTF-8, so not writable) are escaped as ``\\udxxx`` text.
    """
    try:
        text = str(exc)
    except Exception:  # a broken __str__ must not break recording
        text = ""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text or type(exc).__name__


def exception_chain(exc: BaseException) -> list[dict[str, str]]:
    """The exceptions ``exc`` was raised from, nearest first: ``[{"type", "message"}, ...]`` (C8).

    Follows ``__cause__``, else ``__context__`` unless suppressed (``raise ... from None``), as the
    traceback printer does; stops at a cycle or after ``MAX_CHAIN`` entries. Messages are redacted later
    with the event that carries them.
    """
    chain: list[dict[str, str]] = []
    seen = {id(exc)}
    current: BaseException | None = exc
    while current is not None and len(chain) < MAX_CHAIN:
        cause = current.__cause__
        if cause is None and not current.__suppress_context__:
            cause = current.__context__
        if cause is None or id(cause) in seen:
            break
        seen.add(id(cause))
        chain.append({"type": qualified_type_name(cause), "message": exception_message(cause)})
        current = cause
    return chain


class EventLog:
    """The events of one recording as they are written: step counter, totals and redaction entries.

    Thread-safe: :meth:`emit` may be called from any thread or task. ``writer`` is the open
    ``BundleWriter``; ``redactor`` holds the redaction rules (None: ``default_redactor``).
    """

    def __init__(self, writer: BundleWriter, run_id: str, redactor: Redactor | None = None) -> None:
        self.writer = writer
        self.run_id = run_id
        self.redactor: Redactor = redactor if redactor is not None else default_redactor
        self.lock = threading.Lock()
        self.new_event_id = IdSource()
        self.clock = UtcClock()
        self.count = 0
        self.llm_calls = 0
        self.tool_calls = 0
        self.cost_usd: float | None = None
        self.redaction_entries: list[RedactionEntry] = []
        self.closed = False

    def emit(
        self,
        type_: str,
        fields: dict[str, Any],
        *,
        parent_id: str | None,
        status: str = "ok",
        duration_ms: int | None = None,
        replay_policy: str = "frozen",
        flush: bool = True,
        event_id: str | None = None,
    ) -> tuple[str, int, dict[str, Any]]:
        """Redact, hash, number and append one event; return ``(event_id, step, redacted_event_dict)``.

        The id (unless pre-allocated), the timestamp and the step are taken together under the log's lock,
        as the line is appended: the file's line order never contradicts its timestamps.

        Args:
            type_: the event type (``"tool_call"``...).
            fields: the type-specific fields in schema order, values already JSON (``to_jsonable``).
            parent_id, status, duration_ms, replay_policy: the common fields (notes 1.3).
            flush: flush the writer after the line (call boundaries; DESIGN.md "Bundle I/O").
            event_id: a pre-allocated id, else a new ``evt_`` id (allocated under the lock).

        Raises:
            RuntimeError: the log is closed (the session finished).
            RedactionError: a secret sits in a protected field.
            TraceStorageError / OSError: the line could not be written.
        """
        # id, timestamp and step are given together under the lock (below): line order, step order and
        # timestamp order then agree, even when threads emit at once (issue 12, "Concurrency that holds").
        event: dict[str, Any] = {
            "id": event_id,
            "run_id": self.run_id,
            "parent_id": parent_id,
            "step": 0,
            "type": type_,
            "timestamp": "",
            "duration_ms": duration_ms,
            "status": status,
            "replay_policy": replay_policy,
            "input_hash": None,
            "output_hash": None,
            "redactions": [],
            **fields,
        }
        # Redact the type's fields (notes 3). The 12 common fields are protected and made here from ids,
        # the clock, enums and ints, so they cannot hold a secret; redact_event would only re-scan them
        # (measured: ~150 us per event with the default rules). Same result as redact_event otherwise.
        rules = self.redactor
        findings: list[RedactionFinding] = []
        in_field, out_field = _HASHED[type_]
        digests: dict[str, str] = {}  # SHA-256 of a payload's canonical (sorted) bytes
        lines: dict[str, bytes] = {}  # its compact bytes in recorded key order: what the line holds
        for name, value in fields.items():
            kind = type(value)
            if value is None or kind is bool or kind is int or kind is float:
                continue
            if kind is str:
                if rules.is_clean_text(value):  # names, models: cached verdicts
                    continue
            elif name in (in_field, out_field):
                # Plain JSON (the boundary's scan, reused): its sorted encoding is hashed; when the keys and
                # the screen over these very bytes show nothing to redact, the value is written unchanged.
                facts = take_plain_facts(value)
                if facts is not None:
                    data = facts.encoded
                    if facts.risky_floats:
                        data = canonical_json(value, assume_json=True)
                    keys = facts.keys
                    if not rules.may_change(keys, data, value):
                        digests[name] = sha256(data).hexdigest()
                        # The line keeps the recorded key order; with at most one distinct key no dict
                        # can be out of order, so the sorted bytes are those bytes too. orjson wrote this
                        # value already, so only a float in its risky band needs the checked encoder.
                        if len(keys) > 1:
                            if facts.risky_floats:
                                data = compact_json(value, assume_json=True)
                            else:
                                data = orjson.dumps(value)
                        lines[name] = data
                        continue
            result = rules.redact(value, base_path="/" + name)
            event[name] = result.value
            findings.extend(result.findings)
        if findings:
            event["redactions"] = list(dict.fromkeys(f.path for f in findings))
        # Hash the canonical bytes of the redacted payloads (notes 2.2: the parsed value, not the line text);
        # the line keeps their key order (docs/format.md).
        if in_field is not None:
            event["input_hash"] = digests.get(in_field) or _digest(event, in_field, lines)
        if out_field is not None:
            event["output_hash"] = digests.get(out_field) or _digest(event, out_field, lines)
        with self.lock:
            if self.closed:
                raise RuntimeError("the recording session has finished; no more events can be recorded")
            step = self.count
            if event_id is None:
                event_id = event["id"] = self.new_event_id()
            event["timestamp"] = self.clock()
            event["step"] = step
            self.writer.write_line(line_bytes(event, lines), flush)
            self.count = step + 1
            if type_ == "tool_call":
                self.tool_calls += 1
            elif type_ == "llm_request":
                self.llm_calls += 1
            elif type_ == "llm_response" and event.get("cost_usd") is not None:
                self.cost_usd = (self.cost_usd or 0.0) + float(event["cost_usd"])
            for finding in findings:
                self.redaction_entries.append(
                    RedactionEntry(event_id=event_id, path=finding.path, reason=finding.reason)
                )
        return event_id, step, event

    def unique_entries(self) -> Iterator[RedactionEntry]:
        """The redaction entries, de-duplicated on (event_id, path, reason) (REFERENCE-NOTES.md 3)."""
        seen: set[tuple[str, str, str]] = set()
        for entry in self.redaction_entries:
            key = (entry.event_id, entry.path, entry.reason)
            if key not in seen:
                seen.add(key)
                yield entry


def _slow_line(event: dict[str, Any], payloads: dict[str, bytes]) -> bytes:
    parts = []
    for name, value in event.items():
        data = payloads.get(name)
        parts.append(b'"' + name.encode() + b'":' + (data if data is not None else compact_json(value)))
    return b"{" + b",".join(parts) + b"}\n"


def line_bytes(event: dict[str, Any], payloads: dict[str, bytes] | None = None) -> bytes:
    """The ``events.jsonl`` line of an event dict: the same bytes as ``bundle.serialize_event``.

    ``event`` holds the 12 common fields first, then the type's fields in model order (notes 1.3);
    ``payloads`` maps field names to their already computed line bytes (compact JSON, recorded key order:
    ``canonical.compact_json``), spliced in as ``orjson.Fragment`` (not re-encoded). Every other value is
    written as ``compact_json`` writes it (``_files.event_line``): orjson writes ids, names, messages, ints
    and null with those bytes, except floats and values it refuses (big ints, lone surrogates), which go
    through ``compact_json``'s checked path.

    Raises CanonicalJsonError when a value is not plain JSON.
    """
    fields = dict(event)
    if payloads:
        for name, data in payloads.items():
            fields[name] = orjson.Fragment(data)
    cost = fields.get("cost_usd")
    if type(cost) is float:  # orjson and repr() differ on some floats (canonical.py)
        fields["cost_usd"] = orjson.Fragment(canonical_json(cost))
    try:
        return orjson.dumps(fields, option=orjson.OPT_APPEND_NEWLINE)
    except orjson.JSONEncodeError:
        return _slow_line(event, payloads or {})
