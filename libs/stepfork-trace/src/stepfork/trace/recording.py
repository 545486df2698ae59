"""Recording a run into a ``.sftrace`` bundle: :func:`record` and :class:`RecordingSession`.

A ``RecordingSession`` is a boundary handler (docs/architecture.md, "The boundary"): while it is active,
every ``@trace_tool`` call and ``llm_request`` becomes events, written as they happen to a crash-safe
``BundleWriter`` (docs/architecture.md, "Crash safety"). Behaviour follows interop/REFERENCE-NOTES.md
section 5 and REFERENCE-API.md ``stepfork.recorder``, with the differences Stepfork chose:

- error types are qualified (``module.Qualname``) and error events carry the cause chain (C8);
- ``run_end`` and the final error hang off ``run_start``; a call's events hang off the enclosing call, or
  off ``run_start`` (a task-local scope stack in a ContextVar, so ``asyncio.gather`` tasks and threads
  started with ``contextvars.copy_context()`` nest right, C6);
- a call from a thread *without* the context, while this is the only active session, is recorded under
  ``run_start`` and warns :class:`OrphanCallWarning` once per session; with several sessions active it
  raises ``BoundaryContextError`` (boundary module docstring);
- token usage and cost come from :class:`~stepfork.trace.instrument.LLMOutput` or the ``llm_call`` handle.

Inside a replay (the active handler has ``is_replay`` True, or any handler while a replay is active in the
process, as under ``fork``) a session is *inert*: no events, no file. Entered outside the replay's context
while a replay is prepared or runs in the process (``boundary.replay_in_process``: the entrypoint's module
recording at import, a thread started without the context) it raises ``BoundaryContextError`` code
``record_during_replay`` before anything runs or is written (docs/decisions.md).
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
import threading
from contextlib import suppress
from contextvars import Token
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from stepfork.trace import _files, boundary, executors
from stepfork.trace._version import __version__
from stepfork.trace.boundary import BoundaryHandler
from stepfork.trace.callrecording import LLMCallHandle, OrphanCallWarning, _Scope, _scope
from stepfork.trace.explicit import ExplicitRecording

if TYPE_CHECKING:
    from stepfork.trace.bundle import Trace
    from stepfork.trace.eventlog import EventLog
    from stepfork.trace.jsonable import Serializer
    from stepfork.trace.minting import MintLog
    from stepfork.trace.redaction import Redactor

__all__ = [
    "DEFAULT_TRACE_DIR",
    "LLMCallHandle",
    "OrphanCallWarning",
    "RecordingSession",
    "active_recorder",
    "record",
    "safe_agent_name",
]

DEFAULT_TRACE_DIR = Path(".stepfork") / "traces"
"""Where :func:`record` writes by default: ``<DEFAULT_TRACE_DIR>/<safe-agent>-<run_id>.sftrace``."""


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_METADATA_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_RESERVED_METADATA = frozenset({"manifest", "events", "redactions", "integrity", "concurrency", "minted"})


def safe_agent_name(agent_name: str) -> str:
    """The agent name for a file name: runs outside ``[A-Za-z0-9._-]`` become ``-``, ends stripped, else
    ``agent`` (REFERENCE-NOTES.md 5)."""
    return _UNSAFE.sub("-", agent_name).strip("-") or "agent"


def active_recorder() -> RecordingSession | None:
    """The recording session active in the current context, or None (none, inert, or a replay)."""
    handler = boundary.active_handler()
    return handler if isinstance(handler, RecordingSession) else None


def record(
    agent_name: str,
    *,
    output: str | Path | None = None,
    overwrite: bool = False,
    serializer: Serializer | None = None,
    run_input: Any = None,
    redactor: Redactor | None = None,
    keep: Any = "always",
) -> RecordingSession:
    """Describe a recording; enter it with ``with record("agent") as session:`` (or ``async with``).

    Args:
        agent_name: non-empty name stored in the manifest.
        output: the bundle directory (must end in ``.sftrace``); default
            ``DEFAULT_TRACE_DIR/<safe-agent>-<run_id>.sftrace``. ``{run_id}`` and ``{agent}`` in it are
            replaced. An fsspec URL (``s3://bucket/runs/{run_id}.sftrace``; ``stepfork-trace[remote]``)
            records into a local spool and uploads when the run ends, integrity.json last; an upload
            failure is logged (``stepfork.trace`` logger) and keeps the spool for ``stepfork upload``.
        keep: retention: ``"always"`` (default), ``"failures"`` (only failed runs), or a share
            ``0 < p <= 1`` (sampled runs plus every failure); a discarded run leaves nothing behind.
        overwrite: replace an existing non-empty bundle directory.
        serializer: turns a value with no JSON form of its own into one (REFERENCE-API.md); used for
            every value this session records (inputs of calls that name none, outputs, run input/output).
        run_input: the run's input, recorded (redacted) on ``run_start``.
        redactor: a ``stepfork.trace.redaction.Redactor`` (None: the default one).

    Returns:
        A :class:`RecordingSession` (nothing is written before it is entered).
    """
    return RecordingSession(
        agent_name,
        output=output,
        overwrite=overwrite,
        serializer=serializer,
        run_input=run_input,
        redactor=redactor,
        keep=keep,
    )


class RecordingSession(ExplicitRecording):
    """One recording: a sync and async context manager and a boundary handler (``is_replay = False``).

    Parameters are those of :func:`record`. Attributes/properties: ``agent_name``, ``run_id``,
    ``output_path`` (where the bundle goes: the spool for a URL), ``path`` (the bundle once written; None
    before entering, when inert, and once discarded or uploaded), ``inert``, ``trace`` (a
    :class:`~stepfork.trace.bundle.Trace` loaded from what was written), ``url`` (the upload URL or None),
    ``keep``, ``upload_status`` (``uploaded``, ``spooled``: upload failed, ``discarded``, or None).

    Raises:
        RuntimeError: entering twice, or using the session's own API (``set_output``, ``add_metadata``,
            ``llm_call``...) after it finished; an instrumented call that reaches it then runs untouched.
        ValueError: an empty agent name.
        BoundaryContextError: (code ``record_during_replay``, on entering) a replay is prepared or runs in
            this process and the session is entered outside its context (module docstring).
    """

    _minting: MintLog | None = None
    submit_carries_context = True
    """Work submitted to a thread pool under this session runs in it (stepfork.trace.executors); written
    into ``concurrency.json`` so that replay applies the same rule."""

    def __init__(
        self,
        agent_name: str,
        *,
        output: str | Path | None = None,
        overwrite: bool = False,
        serializer: Serializer | None = None,
        run_input: Any = None,
        redactor: Redactor | None = None,
        keep: Any = "always",
    ) -> None:
        if not isinstance(agent_name, str) or not agent_name:
            raise ValueError("agent_name must be a non-empty string")
        from stepfork.trace._retention import check_keep, expand_output, spool_path
        from stepfork.trace._urls import url_of
        from stepfork.trace.eventlog import new_id

        self.agent_name = agent_name
        self.run_id = new_id("run_")
        self.keep = check_keep(keep)
        self.url: str | None = None  # where the bundle is uploaded (an fsspec URL output)
        self.upload_status: str | None = None  # "uploaded", "spooled", "discarded" or None (kept locally)
        if output is not None:
            output = expand_output(os.fspath(output), run_id=self.run_id, agent=safe_agent_name(agent_name))
            self.url = url_of(output)
        self.output_path = (
            spool_path(self.url, self.run_id)
            if self.url is not None
            else Path(output)
            if output is not None
            else DEFAULT_TRACE_DIR / f"{safe_agent_name(agent_name)}-{self.run_id}.sftrace"
        )
        self.overwrite = overwrite
        self.serializer = serializer
        self.run_input = run_input
        self.redactor = redactor
        self.path: Path | None = None
        self.inert = False
        self._entered = False
        self._pid = 0  # the process that entered the session (a forked child never finishes it)
        self._finished = False
        self._log: EventLog | None = None
        self._root_id = ""
        self._created_at: datetime | None = None
        self._output: Any = None
        self._token: Token[BoundaryHandler | None] | None = None
        self._scope_token: Token[_Scope | None] | None = None
        self._orphan_warned = False
        self._open_call_list = []
        self._inflight = {}
        self._calls_lock = threading.RLock()
        self._metadata: dict[str, Any] = {}
        self._trace: Trace | None = None

    # -- lifecycle -------------------------------------------------------------------------------------

    def __enter__(self) -> RecordingSession:
        self._start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._deactivate()
        self._finish_or_note(exc)

    async def __aenter__(self) -> RecordingSession:
        self._start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._deactivate()
        # The final writes (fsync, renames, integrity) run in a worker thread: no blocking of the loop.
        await asyncio.to_thread(self._finish_or_note, exc)

    def _start(self) -> None:
        if self._entered:
            raise RuntimeError("a RecordingSession cannot be re-entered; call record() again")
        self._entered = True
        self._pid = os.getpid()
        current = boundary.active_handler()
        replaying = (current is not None and current.is_replay) or boundary.replay_in_process()
        if replaying and current is not None:
            # REFERENCE-NOTES.md 5: no events, no file inside a replay; its calls go to the replay (or the
            # handler a fork put around it), never to the live dependencies
            self.inert = True
            return
        if replaying:  # outside the replay's context: nothing would serve the calls (docs/decisions.md)
            from stepfork.trace.errors import BoundaryContextError

            raise BoundaryContextError(
                f"record({self.agent_name!r}) refused: a replay is running in this process and this "
                "recording is outside its context (code run when the entrypoint's module is imported, or a "
                f"thread started without the context), so its calls would run live and it would write "
                f'{self.output_path}; put a script\'s recording under `if __name__ == "__main__":`',
                code="record_during_replay",
            )
        from stepfork.trace.bundle_writer import BundleWriter
        from stepfork.trace.eventlog import EventLog, new_id, now_timestamp

        run_input = self._jsonable(self.run_input)  # refuse a bad input before anything is written
        self._created_at, _ = now_timestamp()
        writer = BundleWriter(self.output_path, self._manifest("running"), overwrite=self.overwrite)
        self.path = self.output_path
        log = EventLog(writer, self.run_id, self.redactor)
        from stepfork.trace import concurrency

        if concurrency.RECORD_FACTS:  # the lane entering the session is run_start's lane
            self._concurrency = concurrency.ConcurrencyLog()
        self._root_id = new_id("evt_")
        try:
            log.emit("run_start", {"input": run_input}, parent_id=None, event_id=self._root_id)
        except BaseException:
            writer.close()  # leaves a "running" bundle; nothing more will be written to it
            raise
        self._log = log
        from stepfork.trace import minting

        if minting.RECORD_MINTED:  # the values this run mints (minted.json; stepfork.trace.minting)
            self._minting = log.minting = minting.start()
        executors.install()
        self._token = boundary.activate(self)
        self._scope_token = _scope.set(None)
        from stepfork.trace._after_import import capture_framework_tools, capture_mcp_sessions

        capture_mcp_sessions()  # an MCP session the agent did not instrument is recorded all the same
        capture_framework_tools()  # and so is a framework tool without @trace_tool

    def _deactivate(self) -> None:
        if self._token is not None:
            boundary.deactivate(self, self._token)
            self._token = None
        if self._scope_token is not None:
            with suppress(ValueError):  # exited from another context (see boundary.deactivate)
                _scope.reset(self._scope_token)
            self._scope_token = None

    def _finish_or_note(self, exc: BaseException | None) -> None:
        if self.inert or self._log is None or self._finished:
            return
        if os.getpid() != self._pid:  # a forked child leaving the block: the bundle is the parent's
            self.inert = True
            return
        try:
            self._finish(exc)
        except Exception as save_error:
            if exc is None:
                raise
            exc.add_note(f"stepfork: trace was not saved: {type(save_error).__name__}: {save_error}")
            return
        if self.keep != "always" or self.url is not None:
            from stepfork.trace._retention import finish_bundle

            assert self.path is not None
            self.upload_status = finish_bundle(
                self.path, keep=self.keep, failed=exc is not None, url=self.url
            )
            if self.upload_status in ("discarded", "uploaded"):
                self.path = None  # nothing left locally

    def _finish(self, exc: BaseException | None) -> None:
        from stepfork.trace.eventlog import now_timestamp

        log = self._log
        assert log is not None
        self._close_inflight()  # open streams as their consumer left them, running calls as unfinished
        failure: dict[str, Any] | None = None
        if exc is not None:
            _, step, event = self._emit_error(exc, parent_id=self._root_id)
            failure = {"type": event["error_type"], "message": event["message"], "step": step}
            status = "failed"
            output = None
        else:
            status = "completed"
            output = self._output
        log.emit("run_end", {"run_status": status, "output": output}, parent_id=self._root_id)
        with log.lock:
            log.closed = True
        if self._minting is not None:
            from stepfork.trace import minting

            minting.stop(self._minting)
        end, _ = now_timestamp()
        assert self._created_at is not None
        duration = max(0, int((end - self._created_at).total_seconds() * 1000))
        manifest = self._manifest(status, failure=failure, duration_ms=duration)
        extras = {f"{name}.json": _files.pretty_json(value) for name, value in self._metadata.items()}
        if self._concurrency is not None and "concurrency" not in self._metadata:
            from stepfork.trace.concurrency import EXTENSION_NAME
            from stepfork.trace.redaction import redact_json

            carries = self.submit_carries_context
            facts = self._concurrency.to_json(self._root_id, submit_carries_context=carries)
            facts = redact_json(facts).value  # thread/task names
            extras[f"{EXTENSION_NAME}.json"] = _files.pretty_json(facts)
        if self._minting is not None and "minted" not in self._metadata:
            from stepfork.trace.minting import EXTENSION_NAME as MINTED
            from stepfork.trace.minting import RecordedMinted

            drawn = self._minting.random_state if self._minting.drew_random else None  # `random`'s start
            minted = RecordedMinted(log.minted, drawn, self._minting.utc_offset)
            extras[f"{MINTED}.json"] = _files.pretty_json(minted.to_json())
        log.writer.finalize(manifest, list(log.unique_entries()), extras)

    def _manifest(
        self, status: str, *, failure: dict[str, Any] | None = None, duration_ms: int | None = None
    ) -> Any:
        from stepfork.trace.models import EnvironmentInfo, FailureInfo, RunStatus, TraceManifest, TraceTotals

        log = self._log
        totals = TraceTotals()
        if log is not None:
            totals = TraceTotals(
                events=log.count,
                llm_calls=log.llm_calls,
                tool_calls=log.tool_calls,
                cost_usd=log.cost_usd,
                duration_ms=duration_ms,
            )
        return TraceManifest(
            run_id=self.run_id,
            agent_name=self.agent_name,
            created_at=self._created_at or datetime.now(UTC),
            status=RunStatus(status),
            failure=FailureInfo(**failure) if failure else None,
            environment=EnvironmentInfo(
                python=f"{sys.version_info.major}.{sys.version_info.minor}",
                os=sys.platform,
                stepfork_version=__version__,
            ),
            totals=totals,
        )

    @property
    def trace(self) -> Trace | None:
        """The bundle as written so far, loaded with ``Trace.load`` (None before entering, when inert or
        discarded; read back from the URL once uploaded)."""
        if self.path is None and self.upload_status == "uploaded" and self._trace is None:
            from stepfork.trace.bundle import Trace

            assert self.url is not None
            self._trace = Trace.load(self.url)
        if self.path is None or self._log is None:
            return self._trace
        if self._trace is not None:
            return self._trace
        from stepfork.trace.bundle import Trace

        if not self._finished:
            with self._log.lock:
                self._log.writer.flush()
            return Trace.load(self.path)
        self._trace = Trace.load(self.path)
        return self._trace

    # -- manual recording API (REFERENCE-API.md stepfork.recorder) -------------------------------------

    def set_output(self, value: Any) -> None:
        """Set the run's output, recorded on ``run_end`` (converted with ``to_jsonable`` now)."""
        self._require_log()
        self._output = None if self.inert else self._jsonable(value)

    def add_metadata(self, name: str, value: Any, *, merge: bool = False) -> None:
        """Attach an extension file to the bundle: ``<name>.json``, written at the end and listed in
        integrity.json (DESIGN.md "Bundle I/O": extensions go into extra files, never new manifest keys).

        Args:
            name: ``[a-z0-9][a-z0-9_-]*``, not a schema 0.1 file name (``manifest``, ``events``...).
            value: converted with ``to_jsonable`` and redacted now.
            merge: when both the stored and the new value are objects, update the stored one key by key.

        Raises:
            ValueError: a bad or reserved name. RuntimeError: the session has finished. Does nothing when
            the session is inert.
        """
        if not _METADATA_NAME.fullmatch(name) or name in _RESERVED_METADATA:
            raise ValueError(f"metadata name {name!r} must match [a-z0-9][a-z0-9_-]* and not be reserved")
        if self._require_log() is None:
            return
        from stepfork.trace.redaction import redact_json

        clean = redact_json(self._jsonable(value)).value
        stored = self._metadata.get(name)
        if merge and isinstance(stored, dict) and isinstance(clean, dict):
            clean = {**stored, **clean}
        self._metadata[name] = clean

    @property
    def metadata(self) -> dict[str, Any]:
        """The extension files attached so far, ``{name: JSON value}`` (a copy)."""
        return dict(self._metadata)

    def record_state_change(
        self, *, key: str | None = None, before: Any = None, after: Any = None
    ) -> str | None:
        """Record a ``state_change`` event under the current scope; return its id (None when inert)."""
        log = self._require_log()
        if log is None:
            return None
        fields = {"key": key, "before": self._jsonable(before), "after": self._jsonable(after)}
        return log.emit("state_change", fields, parent_id=self._parent())[0]

    def record_error(
        self, error_type: str, message: str, *, details: Any = None, parent_id: str | None = None
    ) -> str | None:
        """Record an ``error`` event (redacted like every event); return its id (None when inert)."""
        log = self._require_log()
        if log is None:
            return None
        fields = {"error_type": error_type, "message": message, "details": self._jsonable(details)}
        parent = parent_id or self._parent()
        return log.emit("error", fields, parent_id=parent, status="error")[0]
