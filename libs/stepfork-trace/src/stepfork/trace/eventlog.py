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

No pydantic on this path: the line is formatted from the texts of its parts (:mod:`stepfork.trace._eventline`;
a ``tool_call``/``tool_result`` with a clean name and a clean plain payload straight from the payload's
bytes, :meth:`EventLog.emit_tool`), and its bytes equal ``serialize_event`` of the same event
(tests/trace/test_recording.py and the golden bytes of tests/trace/test_recorded_bytes_golden.py check
that). Lines are appended whole under the lock, so concurrent calls (asyncio tasks, threads) never
interleave (C6).
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

from stepfork.trace._eventline import (
    LINE,
    TOOL_LINE,
    dumps,
    enum_texts,
    fields_text,
    int_text,
    line_bytes,
    quoted,
)
from stepfork.trace.bundle_writer import BundleWriter
from stepfork.trace.canonical import canonical_json, compact_json
from stepfork.trace.minting import MIN_NUMBER, Spans
from stepfork.trace.models import HASHED_FIELDS, RedactionEntry
from stepfork.trace.plainjson import take_plain_facts
from stepfork.trace.redaction import RedactionFinding, Redactor, default_redactor

# Each event type's hashed fields, keyed by the plain string type (no enum hashing on the hot path).
_HASHED: dict[str, tuple[str | None, str | None]] = {str(t.value): f for t, f in HASHED_FIELDS.items()}

_NULL_DIGEST = sha256(b"null").hexdigest()  # a null payload's fingerprint (notes 2.2)
_OK = quoted("ok")
MAX_CHAIN = 16  # exception causes kept in an error event's details (C8); bounded against cycles
SCANNED = 4096  # distinct strings whose minted spans a recording remembers (eventlog._note_minted)
SHORTEST_NUMBER = 10 ** (MIN_NUMBER - 1)  # the smallest integer value scanned as a drawn number's text


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


_Redacted = tuple[
    dict[str, Any], dict[str, bytes], tuple[str | None, str | None], list[str], list[RedactionFinding]
]
"""An event's fields as written, its payloads' line bytes, ``(input_hash, output_hash)``, its redaction
pointers and findings (:meth:`EventLog._redact`)."""


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
        self._run_id_text = dumps(run_id)
        self.minting: Spans | None = None
        """The values this run mints (set by the recorder): their spans in payloads go to minted.json."""
        self.minted: set[str] = set()
        self._scanned: dict[str, tuple[str, ...]] = {}  # string -> its minted spans (bounded: SCANNED)

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
        redacted = self._redact(type_, fields)
        event_id, step, timestamp = self._append(
            type_, parent_id, redacted, status=status, duration_ms=duration_ms, replay_policy=replay_policy,
            flush=flush, event_id=event_id,
        )  # fmt: skip
        common = (event_id, parent_id, step, type_, timestamp, duration_ms, status, replay_policy)
        return event_id, step, self._event(common, redacted)

    def emit_line(
        self,
        type_: str,
        fields: dict[str, Any],
        parent_id: str | None,
        replay_policy: str = "frozen",
        duration_ms: int | None = None,
        *,
        walk: str | None = None,
    ) -> str:
        """:meth:`emit` of an ``ok`` event, flushed, for the call path; returns only the event's id (the
        event dict is not built). ``walk``: a payload field known to need the redaction walk (not screened
        again). Raises as :meth:`emit`."""
        redacted = self._redact(type_, fields, walk)
        policy = replay_policy
        return self._append(type_, parent_id, redacted, duration_ms=duration_ms, replay_policy=policy)[0]

    def emit_tool(
        self,
        type_: str,
        name: str,
        payload: Any,
        parent_id: str,
        replay_policy: str,
        duration_ms: int | None = None,
    ) -> str:
        """:meth:`emit_line` of a ``tool_call`` (``payload`` is its input) or ``tool_result`` (its output),
        the common case written straight from its parts: a clean name and a plain payload that redaction
        leaves unchanged (anything else takes :meth:`emit_line`). Returns the event's id; raises as
        :meth:`emit`."""
        field = "input" if type_ == "tool_call" else "output"
        if not self.redactor.is_clean_text(name):
            fields = {"name": name, field: payload}
            return self.emit_line(type_, fields, parent_id, replay_policy, duration_ms)
        if payload is None:
            digest, data = _NULL_DIGEST, b"null"
        else:
            clean = self._clean_payload(payload)
            if clean is None:  # not plain JSON, or something to redact: the walk decides
                fields = {"name": name, field: payload}
                return self.emit_line(type_, fields, parent_id, replay_policy, duration_ms, walk=field)
            digest, data = clean
        try:
            name_text, parent_text, policy_text = dumps(name), dumps(parent_id), quoted(replay_policy)
        except orjson.JSONEncodeError:  # a lone surrogate: the checked path (the payload is screened again)
            fields = {"name": name, field: payload}
            return self.emit_line(type_, fields, parent_id, replay_policy, duration_ms)
        if self.minting:  # the minted values the tool's name and payload hold (written unchanged)
            self._note_minted([name, payload])
        hash_text = b'"%b"' % digest.encode()
        if field == "input":
            rest = (b"null", _OK, policy_text, hash_text, b"null", b"[]", name_text, data)
        else:
            rest = (int_text(duration_ms), _OK, policy_text, b"null", hash_text, b"[]", name_text, data)
        return self._commit(type_, TOOL_LINE[type_], parent_text, quoted(type_), rest)[0]

    def _clean_payload(self, value: Any) -> tuple[str, bytes] | None:
        """``(fingerprint, line bytes)`` of a payload redaction leaves unchanged, from the boundary's scan
        (``take_plain_facts``): its sorted encoding is hashed and, when its keys and the screen over these
        very bytes show nothing to redact, the value is written unchanged, in its recorded key order
        (docs/format.md). None when it is not plain JSON or the redaction walk must decide."""
        if value is None:
            return _NULL_DIGEST, b"null"
        facts = take_plain_facts(value)
        if facts is None:
            return None
        data = facts.encoded
        if facts.risky_floats:
            data = canonical_json(value, assume_json=True)
        keys = facts.keys
        if self.redactor.may_change(keys, data, value):
            return None
        digest = sha256(data).hexdigest()
        # With at most one distinct key no dict can be out of order, so the sorted bytes are the line's too.
        # orjson wrote this value already, so only a float in its risky band needs the checked encoder.
        if len(keys) > 1:
            data = compact_json(value, assume_json=True) if facts.risky_floats else dumps(value)
        return digest, data

    def _redact(self, type_: str, fields: dict[str, Any], walk: str | None = None) -> _Redacted:
        """Redact the type's fields (notes 3) and fingerprint its payloads (notes 2.2, of the redacted
        values); return ``(fields as written, payload line bytes, (input_hash, output_hash), redactions,
        findings)``. ``walk``: a payload field that goes to the redaction walk without the screen.

        The 12 common fields are protected and made by the log from ids, the clock, enums and ints, so they
        cannot hold a secret; redact_event would only re-scan them (about 150 us per event with the
        default rules). Same result as redact_event otherwise.
        """
        rules = self.redactor
        findings: list[RedactionFinding] = []
        in_field, out_field = _HASHED[type_]
        out = fields  # copied before the first redacted value replaces one
        digests: dict[str, str] = {}
        lines: dict[str, bytes] = {}  # a payload's compact bytes in recorded key order: what the line holds
        for name, value in fields.items():
            kind = type(value)
            if value is None or kind is bool or kind is int or kind is float:
                continue
            if kind is str:
                if rules.is_clean_text(value):  # names, models: cached verdicts
                    continue
            elif name in (in_field, out_field) and name != walk:
                clean = self._clean_payload(value)
                if clean is not None:
                    digests[name], lines[name] = clean
                    continue
            result = rules.redact(value, base_path="/" + name)
            if out is fields:
                out = dict(fields)
            out[name] = result.value
            findings.extend(result.findings)
        redactions = list(dict.fromkeys(f.path for f in findings)) if findings else []
        input_hash = output_hash = None
        if in_field is not None:
            input_hash = digests.get(in_field) or _digest(out, in_field, lines)
        if out_field is not None:
            output_hash = digests.get(out_field) or _digest(out, out_field, lines)
        if self.minting:  # the minted values this event's payloads hold, as written (redacted)
            self._note_minted([out[name] for name in fields])
        return out, lines, (input_hash, output_hash), redactions, findings

    def _append(
        self,
        type_: str,
        parent_id: str | None,
        redacted: _Redacted,
        *,
        status: str = "ok",
        duration_ms: int | None = None,
        replay_policy: str = "frozen",
        flush: bool = True,
        event_id: str | None = None,
    ) -> tuple[str, int, str]:
        """Number, stamp and append one redacted event (:meth:`_redact`'s result); return ``(event_id,
        step, timestamp)``. The line is :data:`_eventline.LINE` ending in the type's fields as
        ``fields_text`` writes them or, when orjson refuses a value, ``line_bytes`` of the event dict."""
        out, lines, (input_hash, output_hash), redactions, _ = redacted
        tail = fields_text(out, lines)
        parent = kind = b""
        rest: tuple[bytes | memoryview, ...] | None = None  # the line's texts after the timestamp
        if tail is not None:
            try:
                kind, status_text, policy = enum_texts(type_, status, replay_policy)
                parent = b"null" if parent_id is None else dumps(parent_id)
                rest = (
                    int_text(duration_ms),
                    status_text,
                    policy,
                    b"null" if input_hash is None else b'"%b"' % input_hash.encode(),
                    b"null" if output_hash is None else b'"%b"' % output_hash.encode(),
                    dumps(redactions) if redactions else b"[]",
                    tail,
                )
            except orjson.JSONEncodeError:  # a lone surrogate in a parent id or a pointer
                rest = None
        common = (parent_id, status, duration_ms, replay_policy)
        return self._commit(type_, LINE, parent, kind, rest, flush, event_id, redacted, common)

    def _commit(
        self,
        type_: str,
        template: bytes,
        parent: bytes,
        kind: bytes,
        rest: tuple[bytes | memoryview, ...] | None,
        flush: bool = True,
        event_id: str | None = None,
        redacted: _Redacted | None = None,
        common: tuple[str | None, str, int | None, str] | None = None,
    ) -> tuple[str, int, str]:
        """Under the lock: give the event its id (unless ``event_id``), step and timestamp, write its line
        and count it; return ``(event_id, step, timestamp)``.

        The line is ``template`` formatted with the event's texts (``parent``: the parent id's, ``kind``:
        the type's, ``rest``: those after the timestamp) or, when ``rest`` is None (orjson refused a
        value), ``line_bytes`` of the event dict of ``common`` (``(parent_id, status, duration_ms,
        replay_policy)``) and ``redacted``, whose findings and cost are noted too.
        """
        with self.lock:
            if self.closed:
                raise RuntimeError("the recording session has finished; no more events can be recorded")
            step = self.count
            if event_id is None:
                event_id = self.new_event_id()
            timestamp = self.clock()
            if rest is not None:
                when = timestamp.encode()
                line = template % (dumps(event_id), self._run_id_text, parent, step, kind, when, *rest)
            else:
                assert redacted is not None
                assert common is not None
                parent_id, status, duration_ms, replay_policy = common
                filled = (event_id, parent_id, step, type_, timestamp, duration_ms, status, replay_policy)
                line = line_bytes(self._event(filled, redacted), redacted[1])
            self.writer.write_line(line, flush)
            self.count = step + 1
            if type_ == "tool_call":
                self.tool_calls += 1
            elif type_ == "llm_request":
                self.llm_calls += 1
            elif redacted is not None and type_ == "llm_response":
                cost = redacted[0].get("cost_usd")
                if cost is not None:
                    self.cost_usd = (self.cost_usd or 0.0) + float(cost)
            if redacted is not None:
                for finding in redacted[4]:
                    self.redaction_entries.append(
                        RedactionEntry(event_id=event_id, path=finding.path, reason=finding.reason)
                    )
        return event_id, step, timestamp

    def _event(self, common: tuple[Any, ...], redacted: _Redacted) -> dict[str, Any]:
        """The event dict of an appended event: ``common`` is ``(id, parent_id, step, type, timestamp,
        duration_ms, status, replay_policy)``, ``redacted`` :meth:`_redact`'s result (notes 1.3 order)."""
        event_id, parent_id, step, type_, timestamp, duration_ms, status, replay_policy = common
        out, _, (input_hash, output_hash), redactions, _ = redacted
        return {
            "id": event_id,
            "run_id": self.run_id,
            "parent_id": parent_id,
            "step": step,
            "type": type_,
            "timestamp": timestamp,
            "duration_ms": duration_ms,
            "status": status,
            "replay_policy": replay_policy,
            "input_hash": input_hash,
            "output_hash": output_hash,
            "redactions": redactions,
            **out,
        }

    def _note_minted(self, stack: list[Any]) -> None:
        """Note the minted values an event's field values (``stack``, consumed) hold, as written (the
        redacted values; strings, and integers by their decimal text, not keys: a renaming never applies
        to keys). Each distinct string is scanned once (a conversation repeats its messages in every
        request), so a run pays one scan per string it sends."""
        minting = self.minting
        assert minting is not None
        seen = self._scanned
        noted = self.minted
        pop, push = stack.pop, stack.extend
        while stack:
            value = pop()
            kind = type(value)
            if kind is int and value >= SHORTEST_NUMBER:  # a drawn number sent as a number: its text
                kind, value = str, str(value)
            if kind is str:
                if len(value) < MIN_NUMBER:
                    continue
                found = seen.get(value)
                if found is None:
                    if len(seen) >= SCANNED:
                        seen.clear()
                    found = seen[value] = tuple(value[a:b] for a, b in minting.spans(value))
                if found:
                    noted.update(found)
            elif kind is dict:
                push(value.values())
            elif kind is list:
                push(value)

    def unique_entries(self) -> Iterator[RedactionEntry]:
        """The redaction entries, de-duplicated on (event_id, path, reason) (REFERENCE-NOTES.md 3)."""
        seen: set[tuple[str, str, str]] = set()
        for entry in self.redaction_entries:
            key = (entry.event_id, entry.path, entry.reason)
            if key not in seen:
                seen.add(key)
                yield entry
