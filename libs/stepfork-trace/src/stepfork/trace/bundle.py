"""``Trace`` and the ``.sftrace`` bundle: loading, saving and the crash-safe incremental writer.

Bytes are those of schema 0.1 (interop/REFERENCE-NOTES.md sections 1-2, restated in docs/format.md):
manifest.json, redactions.json and integrity.json are pretty JSON in model key order; events.jsonl holds one
compact object per line, the 12 common fields first, payload keys in their recorded order (hashes cover
the canonical, sorted bytes). Saving redacts every event and the manifest, recomputes the payload hashes
and the counts, and writes through a temporary directory renamed into place. Loading never repairs,
guesses or executes: every problem is a ``TraceStorageError`` with a code, a path and, for events.jsonl,
a 1-based line. The loaders that build a ``Trace`` (``load_trace``, ``load_verified_trace``,
``read_trace``) live here beside it; the files they read are opened and streamed by
``stepfork.trace.reading``, which knows nothing of ``Trace`` (``read_extension`` is re-exported here).
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from stepfork.trace import _files
from stepfork.trace._files import EVENTS_FILE, MANIFEST_FILE, PAYLOAD_FILES, REDACTIONS_FILE
from stepfork.trace._urls import url_of
from stepfork.trace.canonical import fingerprint
from stepfork.trace.errors import TraceIntegrityError, TraceStorageError
from stepfork.trace.integrity import write_integrity
from stepfork.trace.models import (
    HASHED_FIELDS,
    EnvironmentInfo,
    Event,
    EventBase,
    EventType,
    FailureInfo,
    NonEmptyStr,
    RedactionEntry,
    RedactionManifest,
    RunStatus,
    Timestamp,
    TraceManifest,
    TraceTotals,
    event_fields,
    new_run_id,
    utc_now,
)
from stepfork.trace.reading import check_integrity, counted_events, open_bundle
from stepfork.trace.reading import read_extension as read_extension
from stepfork.trace.redaction import Redactor, redact_event, redact_manifest

MANIFEST_EVENT_ID = "__manifest__"
WRITE_BUFFER_BYTES = 64 * 1024


class Trace(BaseModel):
    """A whole run in memory: the manifest fields, the events in order, and the known redaction entries.

    ``run_id`` defaults to a fresh ``run_`` id; events given without an explicit ``run_id`` take it.

    ``redactions`` holds the entries of redactions.json (loaded, or found by earlier saves) so that loading
    and saving a bundle keeps them; saving adds the findings of its own redaction pass.
    """

    model_config = ConfigDict(extra="forbid", validate_default=True)

    run_id: NonEmptyStr = Field(default_factory=new_run_id)
    agent_name: NonEmptyStr
    created_at: Timestamp = Field(default_factory=utc_now)
    status: RunStatus = RunStatus.RUNNING
    failure: FailureInfo | None = None
    environment: EnvironmentInfo = Field(default_factory=EnvironmentInfo)
    totals: TraceTotals = Field(default_factory=TraceTotals)
    events: list[Event] = Field(default_factory=list)
    redactions: list[RedactionEntry] = Field(default_factory=list)

    @model_validator(mode="after")
    def _events_take_the_run_id(self) -> Trace:
        # An event built without a run_id (its default is a fresh one) belongs to this trace (reference).
        for index, event in enumerate(self.events):
            if "run_id" not in event.model_fields_set and event.run_id != self.run_id:
                self.events[index] = event.model_copy(update={"run_id": self.run_id})
        return self

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Trace:
        """Read the bundle at ``path``; see :func:`load_trace`."""
        return load_trace(path)

    def save(
        self,
        path: str | os.PathLike[str],
        *,
        status: RunStatus | str | None = None,
        failure: FailureInfo | None = None,
        environment: EnvironmentInfo | None = None,
        overwrite: bool = False,
        redactor: Redactor | None = None,
    ) -> Path:
        """Write this trace as a bundle at ``path`` and return the path; see :func:`save_trace`.

        ``status``, ``failure``, ``environment`` (the reference's signature) set those manifest fields in
        the written bundle; this trace is not changed.
        """
        return save_trace(
            self,
            path,
            overwrite=overwrite,
            redactor=redactor,
            status=status,
            failure=failure,
            environment=environment,
        )

    def add(self, event: EventBase) -> EventBase:
        """Append a copy of ``event`` with this run's id and ``step`` = its 0-based index; return the copy.

        Updates ``totals.events``, ``totals.llm_calls`` (llm_request) and ``totals.tool_calls`` (tool_call)
        (notes 1.5). The caller's event is not changed.
        """
        stored = event.model_copy(update={"run_id": self.run_id, "step": len(self.events)})
        self.events.append(stored)  # type: ignore[arg-type]
        self.totals = self.totals.model_copy(
            update={
                "events": self.totals.events + 1,
                "llm_calls": self.totals.llm_calls + (stored.type == EventType.LLM_REQUEST),
                "tool_calls": self.totals.tool_calls + (stored.type == EventType.TOOL_CALL),
            }
        )
        return stored

    def _repr_html_(self) -> str:
        """Notebook rendering: the summary, the first calls and the full view a click away (issue 16).

        Drawn by ``stepfork.analysis.view`` when stepfork-analysis is installed (imported only here, so
        ``import stepfork.trace`` stays light); otherwise the escaped text of :meth:`_repr_pretty_`.
        """
        try:
            from stepfork.analysis.view.notebook import trace_html
        except ImportError:
            import html

            return f"<pre>{html.escape(_trace_text(self))}</pre>"
        return trace_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython text rendering: one summary line and the first calls."""
        printer.text(_trace_text(self))

    @property
    def manifest(self) -> TraceManifest:
        """The manifest of this trace as it stands (totals as stored, not recomputed).

        Raises pydantic.ValidationError when ``failure`` is not set exactly when ``status`` is failed.
        """
        return TraceManifest(
            run_id=self.run_id,
            agent_name=self.agent_name,
            created_at=self.created_at,
            status=self.status,
            failure=self.failure,
            environment=self.environment,
            totals=self.totals,
        )


def _trace_text(trace: Trace) -> str:
    """One summary line and the first ten calls of ``trace`` (names redacted)."""
    from stepfork.trace.redaction import redact_text

    lines = [f"Trace {trace.agent_name} {trace.run_id}: {trace.status}, {len(trace.events)} events"]
    calls = [e for e in trace.events if e.type in (EventType.TOOL_CALL, EventType.LLM_REQUEST)]
    for event in calls[:10]:
        label = getattr(event, "name", None) or getattr(event, "model", "")
        lines.append(f"  {event.step:>4}  {event.type:<12} {redact_text(str(label))}  ({event.status})")
    if len(calls) > 10:
        lines.append(f"  ... {len(calls) - 10} more")
    return "\n".join(lines)


# ----------------------------------------------------------------------------------------------- loading


def load_trace(path: str | os.PathLike[str]) -> Trace:
    """Read the bundle directory at ``path`` into a :class:`Trace`, exactly as stored (notes 1, 5).

    Reads manifest.json, events.jsonl and redactions.json (integrity.json is not read; see
    ``verify_bundle_integrity``). Payload values come back exactly (big ints, floats); totals as written.
    The bundle's ``concurrency.json`` and ``minted.json``, when present and well formed, are attached to
    the trace (``stepfork.trace.concurrency.facts_of``, ``stepfork.trace.minting.minted_of``); a missing or
    unreadable one is ignored.

    Raises:
        TraceStorageError: ``missing_file`` (no directory, a required file absent or not a regular file),
            ``invalid_manifest`` (no ``.sftrace`` suffix, a symlinked manifest/redactions file, a bad
            manifest or redactions shape, unknown keys), ``invalid_json`` (bad JSON, invalid UTF-8, a blank
            line, a final line without ``\\n``), ``invalid_event`` (a bad event, unknown keys, a symlinked
            events.jsonl), ``unsupported_schema`` (schema_version other than "0.1"). ``line`` is set for
            problems inside events.jsonl.
    """
    return _load(path)


def _load(path: str | os.PathLike[str], verified: Mapping[str, bytes] | None = None) -> Trace:
    """:func:`load_trace`, from the payload files' ``verified`` bytes when given (:func:`open_bundle`)."""
    trace = _read_trace(path, verified=verified)[0]
    from stepfork.trace.concurrency import attach_facts, load_facts

    attach_facts(trace, load_facts(path))  # concurrency.json, when the recorder wrote one (issue 12)
    from stepfork.trace.minting import attach_minted, load_minted

    attach_minted(trace, load_minted(path))  # minted.json (stepfork.trace.minting)
    return trace


def load_verified_trace(path: str | os.PathLike[str]) -> Trace:
    """:func:`check_integrity`, then :func:`load_trace`: the loader of every command that replays or
    rewrites a bundle. Raises TraceIntegrityError (a TraceStorageError) first, then as :func:`load_trace`,
    then TraceIntegrityError ``event_count_mismatch`` for a finished run (completed or failed) whose
    events.jsonl does not hold the number of events its manifest counts (``totals.events``, when given):
    a bundle without integrity.json (written before it, or by another tool) cut at a line boundary, which
    would otherwise replay as a divergence of the agent (``exhausted``) instead of being refused as
    damaged; then TraceIntegrityError for what ``export`` refuses too (``validation.replay_issues``): a
    stored payload hash that does not match its payload (code ``payload_hash_mismatch``: edited with
    integrity.json rewritten, or a legacy bundle edited) or a bundle that fails strict validation (the first
    issue's code, ``step_mismatch``...; partial rules while the manifest says ``running``), which would
    otherwise replay as DIVERGED or even MATCHED.

    Each payload file up to 16 MiB (``integrity.KEPT_LIMIT``) is read once: the bytes hashed against
    integrity.json are the bytes parsed, so a file changed between the check and the read cannot be loaded
    unverified. A bundle with a larger file is hashed in chunks and read again to parse (memory bounded by
    the parsed trace, not the file twice)."""
    verified: dict[str, bytes] = {}
    check_integrity(path, keep=verified)
    # none kept: a bundle without integrity.json (legacy), a URL (fetched and verified by the remote reader)
    # or a file past integrity.KEPT_LIMIT: read from disk
    whole = all(name in verified for name in PAYLOAD_FILES)
    trace = _load(path, verified if whole else None)
    counted = counted_events(trace)
    if counted is not None and counted != len(trace.events):
        bundle = url_of(path) or str(path)
        raise TraceIntegrityError(
            f"{bundle}: events.jsonl holds {len(trace.events)} event(s) but manifest.json counts "
            f"{trace.totals.events} (totals.events) for a finished run: the bundle was cut or edited and is "
            f"refused; run `stepfork validate {bundle}`",
            code="event_count_mismatch",
            path=str(Path(str(path)) / EVENTS_FILE) if url_of(path) is None else bundle,
            bundle=bundle,
        )
    _refuse_invalid(trace, url_of(path) or str(path))
    return trace


def _refuse_invalid(trace: Trace, bundle: str) -> None:
    """Raise TraceIntegrityError when ``trace`` (read from ``bundle``) fails the checks of
    ``validation.replay_issues``: a stored payload hash that does not match its payload (code
    ``payload_hash_mismatch``, the ``--verify-integrity`` advice), else strict validation (the first
    issue's code; partial rules while the run is ``running``). One line, as ``export`` refuses it."""
    from stepfork.trace.validation import (
        replay_issues,  # imported when used: the loaders stay cheap to import
    )

    issues = replay_issues(trace)
    if not issues:
        return
    codes = ", ".join(sorted({issue.code for issue in issues}))
    stale = [issue for issue in issues if issue.code == "payload_hash_mismatch"]
    first = stale[0] if stale else issues[0]
    if stale:
        where = f"step {first.step}: " if first.step is not None else ""
        message = (
            f"{bundle}: {where}{first.message} ({codes}): the bundle changed after it was written and is "
            f"refused; run `stepfork validate --verify-integrity {bundle}`"
        )
    else:
        message = (
            f"{bundle} fails strict validation ({codes}): {first.message}; the bundle is refused; "
            f"run `stepfork validate {bundle}` for every issue"
        )
    raise TraceIntegrityError(message, code=first.code, path=bundle, bundle=bundle)


def read_trace(path: str | os.PathLike[str], *, torn_tail_ok: bool = False) -> tuple[Trace, int | None]:
    """:func:`load_trace`, and for partial validation the one case a crash legitimately leaves behind.

    With ``torn_tail_ok`` and a manifest still ``running``, a final events.jsonl line without ``\\n`` (a
    write cut by SIGKILL: the kernel may stop a write part-way) is left out of the returned trace, and its
    1-based line number is returned second (else None). Nothing is changed on disk. Raises as
    :func:`load_trace`.
    """
    return _read_trace(path, torn_tail_ok=torn_tail_ok)


def _read_trace(
    path: str | os.PathLike[str],
    *,
    torn_tail_ok: bool = False,
    verified: Mapping[str, bytes] | None = None,
) -> tuple[Trace, int | None]:
    """:func:`read_trace`, from the payload files' ``verified`` bytes when given (:func:`open_bundle`)."""
    with open_bundle(path, verified=verified) as opened:
        stream = opened.events(torn_tail_ok=torn_tail_ok)
        with _files.cyclic_gc_paused():
            events = list(stream)
        redactions = opened.redactions()
    manifest = opened.manifest
    trace = Trace.model_construct(
        run_id=manifest.run_id,
        agent_name=manifest.agent_name,
        created_at=manifest.created_at,
        status=manifest.status,
        failure=manifest.failure,
        environment=manifest.environment,
        totals=manifest.totals,
        events=events,
        redactions=redactions.entries,
    )
    return trace, stream.torn


# ----------------------------------------------------------------------------------------------- writing


def serialize_event(event: EventBase) -> bytes:
    """Return the events.jsonl line of ``event`` as stored, ending in ``\\n`` (no redaction, no hashing).

    Payload dicts keep their key order (``_files.event_line``), so a loaded bundle re-serializes to its
    own bytes.

    Raises CanonicalJsonError when a payload is not plain JSON.
    """
    return _files.event_line(event_fields(event))


def prepare_event(event: EventBase, redactor: Redactor | None = None) -> tuple[bytes, list[RedactionEntry]]:
    """Redact ``event``, recompute its hashes and return ``(line, new redaction entries)``.

    New redaction paths are appended to the event's ``redactions`` (existing ones kept, no duplicates);
    ``input_hash``/``output_hash`` become the fingerprints of the redacted fields of notes 2.2 (H(null)
    for a null field; null where the type hashes nothing). ``event`` itself is not changed.

    Raises:
        RedactionError: a secret sits in a protected field (notes 3).
        CanonicalJsonError: a payload is not plain JSON.
    """
    redacted, findings = redact_event(dict(event_fields(event)), redactor)
    paths = list(event.redactions)
    entries: list[RedactionEntry] = []
    for finding in findings:
        if finding.path not in paths:
            paths.append(finding.path)
        entries.append(RedactionEntry(event_id=event.id, path=finding.path, reason=finding.reason))
    input_field, output_field = HASHED_FIELDS[event.type]
    redacted["redactions"] = paths
    redacted["input_hash"] = fingerprint(redacted[input_field]) if input_field else None
    redacted["output_hash"] = fingerprint(redacted[output_field]) if output_field else None
    line = _files.event_line((name, redacted[name]) for name in type(event).model_fields)
    return line, entries


def hash_event_payloads(event: EventBase) -> EventBase:
    """A copy of ``event`` with ``input_hash``/``output_hash`` set to the fingerprints of its payload fields
    as stored (notes 2.2; null where the type hashes nothing). The reference's name; saving does the same
    after redaction (:func:`prepare_event`). Raises CanonicalJsonError when a payload is not plain JSON."""
    input_field, output_field = HASHED_FIELDS[event.type]
    return event.model_copy(
        update={
            "input_hash": fingerprint(getattr(event, input_field)) if input_field else None,
            "output_hash": fingerprint(getattr(event, output_field)) if output_field else None,
        }
    )


def manifest_bytes(
    manifest: TraceManifest, redactor: Redactor | None = None
) -> tuple[bytes, list[RedactionEntry]]:
    """Redact ``manifest`` and return its manifest.json bytes with the redaction entries found.

    Raises RedactionError when a protected manifest field holds a secret (notes 3).
    """
    redacted, findings = redact_manifest(manifest.model_dump(mode="json"), redactor)
    entries = [RedactionEntry(event_id=MANIFEST_EVENT_ID, path=f.path, reason=f.reason) for f in findings]
    return _files.pretty_json(redacted), entries


def redactions_bytes(entries: Iterable[RedactionEntry]) -> bytes:
    """redactions.json bytes of ``entries``, de-duplicated on (event_id, path, reason), first kept."""
    seen: set[tuple[str, str, str]] = set()
    unique: list[RedactionEntry] = []
    for entry in entries:
        key = (entry.event_id, entry.path, entry.reason)
        if key not in seen:
            seen.add(key)
            unique.append(entry)
    return _files.pretty_json(RedactionManifest(entries=unique).model_dump(mode="json"))


def _count_totals(trace: Trace) -> TraceTotals:
    llm = sum(1 for e in trace.events if e.type == EventType.LLM_REQUEST)
    tools = sum(1 for e in trace.events if e.type == EventType.TOOL_CALL)
    return trace.totals.model_copy(
        update={"events": len(trace.events), "llm_calls": llm, "tool_calls": tools}
    )


def build_manifest(
    trace: Trace,
    *,
    status: RunStatus | str | None = None,
    failure: FailureInfo | None = None,
    environment: EnvironmentInfo | None = None,
) -> TraceManifest:
    """The manifest ``save_trace`` writes for ``trace`` (REFERENCE-API.md ``build_manifest``).

    Totals are recounted from the events (events, llm_calls, tool_calls; cost and duration kept);
    ``status``/``failure``/``environment`` replace the trace's fields when given (``failure`` is cleared
    when ``status`` is given without one and is not ``failed``). Raises pydantic.ValidationError when
    ``failure`` is not set exactly when the status is ``failed``.
    """
    update: dict[str, Any] = {"totals": _count_totals(trace)}
    if status is not None:
        update["status"] = RunStatus(status)
        update["failure"] = failure
    elif failure is not None:
        update["failure"] = failure
    if environment is not None:
        update["environment"] = environment
    data = {
        "run_id": trace.run_id,
        "agent_name": trace.agent_name,
        "created_at": trace.created_at,
        "status": trace.status,
        "failure": trace.failure,
        "environment": trace.environment,
        **update,
    }
    return TraceManifest(**data)


def _concurrency_file(
    trace: Trace, directory: Path, *, given: Mapping[str, bytes] | None = None
) -> tuple[str, ...]:
    """Write the concurrency facts attached to ``trace`` (a loaded bundle's, or a subset's) beside its
    events, limited to its events, and its minted spans (``minted.json``); return the extension file names
    written (for integrity.json). Nothing when the caller hands a file over in ``given`` (a redacted copy
    passes every listed extension file)."""
    from stepfork.trace.concurrency import EXTENSION_NAME, facts_of
    from stepfork.trace.minting import EXTENSION_NAME as MINTED
    from stepfork.trace.minting import minted_of

    written: list[str] = []
    minted = None if f"{MINTED}.json" in (given or {}) else minted_of(trace)
    if minted is not None:  # the minted spans travel with the trace too (a minimize candidate's)
        _files.write_file(directory / f"{MINTED}.json", _files.pretty_json(minted.to_json()))
        written.append(f"{MINTED}.json")
    name = f"{EXTENSION_NAME}.json"
    facts = None if name in (given or {}) else facts_of(trace)
    if facts is None:
        return tuple(written)
    ids = {event.id for event in trace.events}
    _files.write_file(directory / name, _files.pretty_json(facts.to_json(ids)))
    return (*written, name)


def save_trace(
    trace: Trace,
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    redactor: Redactor | None = None,
    status: RunStatus | str | None = None,
    failure: FailureInfo | None = None,
    environment: EnvironmentInfo | None = None,
    extra_files: Mapping[str, bytes] | None = None,
) -> Path:
    """Write ``trace`` as a bundle at ``path`` atomically and return the path (notes 5, "Saving").

    ``status``, ``failure`` and ``environment`` (REFERENCE-API.md ``save_trace``) replace the trace's own
    manifest fields in the written bundle only (see :func:`build_manifest`). ``extra_files`` maps extension
    file names (``sdk-versions.json``; already redacted bytes) to their content, written beside the payload
    files and listed in integrity.json.

    Redacts every event and the manifest, recomputes hashes and totals (events, llm_calls, tool_calls),
    writes the four files into ``.<name>.tmp-<hex>`` beside the target (integrity.json last), then renames
    it into place. ``trace`` is not changed. ``redactor``: a ``Redactor`` (None: the default one).

    Raises:
        TraceStorageError: ``invalid_path`` (no ``.sftrace`` suffix, or the path is a file),
            ``already_exists`` (a non-empty directory without ``overwrite``), ``not_a_bundle`` (with
            ``overwrite``, a directory that is not a bundle: :func:`bundle_replace_problem`),
            ``invalid_manifest`` (the
            manifest fields do not validate, e.g. failed without failure).
        RedactionError, CanonicalJsonError: see :func:`prepare_event`.
    """
    target = Path(path)
    replace = _files.check_target(target, overwrite=overwrite)
    try:
        manifest = build_manifest(trace, status=status, failure=failure, environment=environment)
    except ValidationError as exc:
        raise TraceStorageError(
            f"invalid manifest: {exc.errors()[0]['msg']}", code="invalid_manifest", path=str(target)
        ) from None
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _files.temp_name(target)
    tmp.mkdir()
    old: Path | None = None
    try:
        entries = list(trace.redactions)
        fd = os.open(tmp / EVENTS_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as handle:
            for event in trace.events:
                line, found = prepare_event(event, redactor)
                handle.write(line)
                entries.extend(found)
            handle.flush()
            os.fsync(handle.fileno())
        data, found = manifest_bytes(manifest, redactor)
        _files.write_file(tmp / MANIFEST_FILE, data)
        _files.write_file(tmp / REDACTIONS_FILE, redactions_bytes([*entries, *found]))
        extras = dict(extra_files or {})
        for name, content in extras.items():
            _files.write_file(tmp / name, content)
        write_integrity(tmp, (*extras, *_concurrency_file(trace, tmp, given=extras)))
        _files.fsync_dir(tmp)
        if replace:
            old = _files.temp_name(target, "old")
            os.rename(target, old)
        elif target.exists():
            target.rmdir()  # an empty directory
        os.rename(tmp, target)
    except BaseException:
        if old is not None and not target.exists():
            os.rename(old, target)
            old = None
        if tmp.exists():
            _files.remove_tree(tmp)
        raise
    if old is not None:
        _files.remove_tree(old)
    _files.fsync_dir(target.parent)
    return target


def bundle_replace_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the existing non-empty directory ``path`` may not be replaced by a bundle, or None.

    The rule every bundle write applies with ``overwrite`` (``save_trace``, :class:`BundleWriter`, so
    ``record``, ``fork``, ``minimize`` and the pytest plugin): only a directory that is a bundle (a
    ``manifest.json`` and nothing but bundle files) is replaced; a user's directory never is (issue 14).
    Commands call it before doing any work, so the refusal comes before a run, not after. Returns a
    one-line reason naming what the directory holds.
    """
    return _files.not_replaceable(Path(path))


class BundleWriter:
    """The crash-safe incremental writer of one recording (docs/architecture.md, "Crash safety").

    Opening creates the bundle directory and writes manifest.json (pass status ``running``) and an empty
    redactions.json atomically. Event lines are appended to events.jsonl through a buffer of at most
    ``buffer_bytes`` that :meth:`flush` hands to the OS (the recorder flushes at every call boundary, so a
    killed process keeps every event up to the last flush). :meth:`finalize` rewrites the manifest and the
    redactions atomically and writes integrity.json last. All methods are thread-safe.

    The writer does not redact or hash events: give it lines made by :func:`prepare_event`. It does redact
    the manifests it writes and adds those findings to the redaction entries.

    A writer belongs to the process that opened it: in a forked child (``os.fork``, a ``multiprocessing``
    pool forking) every method does nothing, so the child can neither append to the parent's events.jsonl
    through the descriptor it inherited nor finalize the bundle (:func:`_disown_writers_in_child`).

    Raises (constructor): TraceStorageError ``invalid_path`` / ``already_exists`` as :func:`save_trace`;
    with ``overwrite`` an existing bundle is removed first.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        manifest: TraceManifest,
        *,
        overwrite: bool = False,
        buffer_bytes: int = WRITE_BUFFER_BYTES,
        redactor: Redactor | None = None,
    ) -> None:
        self.path = Path(path)
        replace = _files.check_target(self.path, overwrite=overwrite)
        self._lock = threading.Lock()
        self._buffer = bytearray()
        self._limit = buffer_bytes
        self._redactor = redactor
        self._closed = False
        self._disowned = False  # True in a forked child: the bundle is the parent's
        self.events_written = 0
        data, _ = manifest_bytes(manifest, redactor)
        # The three files are made in a hidden staging directory renamed into place, so a process killed
        # while opening leaves either no bundle or a whole one, never a directory missing a required file.
        self.path.parent.mkdir(parents=True, exist_ok=True)
        staging = _files.temp_name(self.path, "open")
        staging.mkdir()
        self._fd: int | None = None
        try:
            _files.write_file(staging / REDACTIONS_FILE, redactions_bytes([]))
            _files.write_file(staging / MANIFEST_FILE, data)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
            self._fd = os.open(staging / EVENTS_FILE, flags, 0o644)
            _files.fsync_dir(staging)
            if replace:
                _files.remove_tree(self.path)
            elif self.path.exists():
                self.path.rmdir()  # an empty directory (check_target allows it)
            os.rename(staging, self.path)  # the open descriptor follows the renamed directory
        except BaseException:
            if self._fd is not None:
                os.close(self._fd)
            if staging.exists():
                _files.remove_tree(staging)
            raise
        _files.fsync_dir(self.path.parent)
        _open_writers.add(self)

    def _disown(self) -> None:
        """Forget the bundle in a forked child: its queued lines and its descriptor are the parent's."""
        self._disowned = True
        self._lock = threading.Lock()  # another parent thread may have held it at the fork
        self._buffer = bytearray()
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)  # the child's copy only

    def append(self, event_line: bytes) -> None:
        """Queue one events.jsonl line (exactly one ``\\n``, at the end); write out when the buffer is full.

        Raises ValueError for a malformed line, TraceStorageError ``writer_closed`` after finalize/close.
        """
        if not event_line.endswith(b"\n") or b"\n" in event_line[:-1]:
            raise ValueError("an event line must hold exactly one newline, at its end")
        if self._disowned:
            return
        with self._lock:
            self._check_open()
            self._buffer += event_line
            self.events_written += 1
            if len(self._buffer) >= self._limit:
                self._write_buffer()

    def write_line(self, event_line: bytes, flush: bool = True) -> None:
        """:meth:`append` then, with ``flush``, :meth:`flush`, under one lock: the recorder's path.

        A line written with the buffer empty goes to the OS as is, not copied into the buffer first.
        Raises as :meth:`append` and :meth:`flush` do.
        """
        if event_line.find(b"\n") != len(event_line) - 1:  # memchr: no copy of the line
            raise ValueError("an event line must hold exactly one newline, at its end")
        if self._disowned:
            return
        with self._lock:
            if self._closed:
                self._check_open()
            self.events_written += 1
            buffer = self._buffer
            if flush and not buffer:
                self._write_all(event_line)
            else:
                buffer += event_line
                if flush or len(buffer) >= self._limit:
                    self._write_buffer()

    def append_event(self, event: EventBase) -> list[RedactionEntry]:
        """Redact, hash and queue ``event`` (:func:`prepare_event`); return its new redaction entries."""
        line, entries = prepare_event(event, self._redactor)
        self.append(line)
        return entries

    def flush(self) -> None:
        """Hand every queued line to the OS (no fsync: survives a killed process, not a power loss)."""
        if self._disowned:
            return
        with self._lock:
            self._check_open()
            self._write_buffer()

    def finalize(
        self,
        manifest: TraceManifest,
        redaction_entries: Sequence[RedactionEntry],
        extra_files: Mapping[str, bytes] | None = None,
    ) -> Path:
        """Flush and fsync events.jsonl, rewrite manifest and redactions atomically, write integrity last.

        ``extra_files`` maps extension file names (``sdk-versions.json``; already redacted bytes) to their
        content: each is written atomically and listed in integrity.json (DESIGN.md "Bundle I/O").
        Returns the bundle path. The manifest is written as given (the caller sets status and totals).
        Raises TraceStorageError ``writer_closed`` when already finalized or closed.
        """
        if self._disowned:
            return self.path
        with self._lock:
            self._check_open()
            self._close_events()
            data, found = manifest_bytes(manifest, self._redactor)
            extras = dict(extra_files or {})
            for name, content in extras.items():
                _files.atomic_write(self.path / name, content)
            _files.atomic_write(self.path / REDACTIONS_FILE, redactions_bytes([*redaction_entries, *found]))
            _files.atomic_write(self.path / MANIFEST_FILE, data)
            write_integrity(self.path, tuple(extras))
            _files.fsync_dir(self.path)
        return self.path

    def close(self) -> None:
        """Flush, fsync, close events.jsonl; no finalize (leaves a ``running`` bundle). Idempotent."""
        if self._disowned:
            return
        with self._lock:
            if not self._closed:
                self._close_events()

    def _check_open(self) -> None:
        if self._closed:
            raise TraceStorageError("bundle writer is closed", code="writer_closed", path=str(self.path))

    def _write_buffer(self) -> None:
        self._write_all(self._buffer)
        self._buffer.clear()

    def _write_all(self, data: bytes | bytearray) -> None:
        fd = self._fd
        if fd is None:
            return
        written = os.write(fd, data)
        if written == len(data):  # the common case: one write took it all
            return
        view = memoryview(data)[written:]  # a partial write (a signal, a full disk): write the rest
        try:
            while view:
                view = view[os.write(fd, view) :]
        finally:
            view.release()

    def _close_events(self) -> None:
        self._write_buffer()
        self._closed = True
        if self._fd is not None:
            os.fsync(self._fd)
            os.close(self._fd)
            self._fd = None


_open_writers: weakref.WeakSet[BundleWriter] = weakref.WeakSet()


def _disown_writers_in_child() -> None:
    """``os.register_at_fork`` hook: a forked child writes nothing into its parent's bundles."""
    for writer in list(_open_writers):
        writer._disown()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_disown_writers_in_child)
