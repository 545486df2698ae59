"""``Trace`` and the ``.sftrace`` bundle: the model of a whole run and the loaders that build one.

Bytes are those of schema 0.1 (interop/REFERENCE-NOTES.md sections 1-2, restated in docs/format.md):
manifest.json, redactions.json and integrity.json are pretty JSON in model key order; events.jsonl holds one
compact object per line, the 12 common fields first, payload keys in their recorded order (hashes cover
the canonical, sorted bytes). Loading never repairs, guesses or executes: every problem is a
``TraceStorageError`` with a code, a path and, for events.jsonl, a 1-based line. The loaders that build a
``Trace`` (``load_trace``, ``load_verified_trace``, ``read_trace``) live here beside it; the files they read
are opened and streamed by ``stepfork.trace.reading``, which knows nothing of ``Trace``.

Writing lives beside this module, and its names are re-exported here (their documented import path):
``stepfork.trace.saving`` (``save_trace``, ``build_manifest``, ``bundle_replace_problem``: a whole trace,
atomically), ``stepfork.trace.bundle_writer`` (``BundleWriter``: a recording, crash-safe, line by line) and
``stepfork.trace.bundle_bytes`` (``prepare_event``, ``serialize_event``, ``hash_event_payloads``,
``manifest_bytes``, ``redactions_bytes``: the bytes of each file). ``read_extension`` is re-exported from
``stepfork.trace.reading``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from stepfork.trace import _files
from stepfork.trace._files import EVENTS_FILE, PAYLOAD_FILES
from stepfork.trace._urls import url_of
from stepfork.trace.bundle_bytes import MANIFEST_EVENT_ID as MANIFEST_EVENT_ID
from stepfork.trace.bundle_bytes import hash_event_payloads as hash_event_payloads
from stepfork.trace.bundle_bytes import manifest_bytes as manifest_bytes
from stepfork.trace.bundle_bytes import prepare_event as prepare_event
from stepfork.trace.bundle_bytes import redactions_bytes as redactions_bytes
from stepfork.trace.bundle_bytes import serialize_event as serialize_event
from stepfork.trace.bundle_writer import WRITE_BUFFER_BYTES as WRITE_BUFFER_BYTES
from stepfork.trace.bundle_writer import BundleWriter as BundleWriter
from stepfork.trace.errors import TraceIntegrityError
from stepfork.trace.models import (
    EnvironmentInfo,
    Event,
    EventBase,
    EventType,
    FailureInfo,
    NonEmptyStr,
    RedactionEntry,
    RunStatus,
    Timestamp,
    TraceManifest,
    TraceTotals,
    new_run_id,
    utc_now,
)
from stepfork.trace.reading import check_integrity, counted_events, open_bundle
from stepfork.trace.reading import read_extension as read_extension
from stepfork.trace.redaction import Redactor
from stepfork.trace.saving import build_manifest as build_manifest
from stepfork.trace.saving import bundle_replace_problem as bundle_replace_problem
from stepfork.trace.saving import save_trace as save_trace


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
