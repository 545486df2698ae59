"""The TraceError family: typed errors for conversion, canonical JSON, storage, redaction and the boundary.

Every error carries a machine-readable ``code`` (the issue codes of interop/REFERENCE-NOTES.md section 4
where one applies) so that programs and the CLI branch on data, never on message text.
"""

from __future__ import annotations


class TraceError(Exception):
    """Base class of every error raised by :mod:`stepfork.trace`.

    Attributes:
        code: a stable snake_case identifier of the problem (for example ``invalid_json``).
    """

    code: str = "trace_error"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class TraceSerializationError(TraceError, TypeError):
    """A Python value cannot be turned into JSON (a cycle, an unsupported type, too deep).

    Attributes:
        path: the JSON path of the offending value, ``$`` for the root (``$.a[0].b``).
    """

    code = "unserializable_value"

    def __init__(self, message: str, *, path: str = "$", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.path = path


class CanonicalJsonError(TraceError, TypeError):
    """A value is not plain JSON, so it has no canonical bytes (NaN, a non-str key, a set...).

    Canonical JSON never tags: turn Python values into JSON with ``to_jsonable`` first.

    Attributes:
        path: the JSON path of the offending value, ``$`` for the root (``$.a[0].b``).
    """

    code = "not_canonical_json"

    def __init__(self, message: str, *, path: str = "$", code: str | None = None) -> None:
        super().__init__(message, code=code)
        self.path = path


class TraceStorageError(TraceError, ValueError):
    """A bundle cannot be read or written.

    Attributes:
        code: ``missing_file``, ``invalid_json``, ``invalid_manifest``, ``invalid_event``,
            ``unsupported_schema``, ``unsafe_path``, ``already_exists`` or ``invalid_path``.
        path: the bundle or file concerned, when known.
        line: the 1-based line of ``events.jsonl``, when the problem is in one line.
    """

    code = "invalid_manifest"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        path: str | None = None,
        line: int | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.path = path
        self.line = line


class TraceIntegrityError(TraceStorageError):
    """A bundle does not match its integrity.json: it changed after it was written (notes 2.4).

    Raised by :func:`stepfork.trace.bundle.load_verified_trace`, the loader every command that replays or
    rewrites a bundle uses (replay, minimize, fork, diff, export, run, the pytest marker). The message is
    one line naming the file and recommending ``stepfork validate --verify-integrity``; the CLI prints it
    as is and exits 2.

    Attributes:
        code: the first integrity issue's code (``integrity_mismatch``, ``missing_file``,
            ``integrity_metadata_invalid``, ``integrity_algorithm_unsupported``).
        path: the file concerned (inside the bundle), or the bundle.
        bundle: the bundle directory.
    """

    code = "integrity_mismatch"

    def __init__(
        self, message: str, *, code: str | None = None, path: str | None = None, bundle: str
    ) -> None:
        super().__init__(message, code=code, path=path)
        self.bundle = bundle


class RedactionError(TraceError, ValueError):
    """A secret sits in a field that redaction may not rewrite (an id, a timestamp, a status)."""

    code = "redaction_error"


class BoundaryContextError(TraceError, RuntimeError):
    """An instrumented call or a recording cannot tell which session it belongs to.

    Raised (code ``boundary_context``) when a call arrives from a thread that did not copy the context while
    more than one session is active in the process (docs/recording.md, "Threads and context"), and (code
    ``record_during_replay``) when ``record()`` is entered outside a replay's context while that replay is
    being prepared or runs in the process: module-level code of the entrypoint's module, run by its import,
    or a thread started without the context (docs/recording.md, "Inside a replay").
    """

    code = "boundary_context"


UNFINISHED_MESSAGE = "the run ended before this call returned"
UNFINISHED_TYPE = "stepfork.trace.errors.UnfinishedCallError"
"""The ``error_type`` recorded for such a call (:class:`UnfinishedCallError`'s qualified name)."""
INCOMPLETE_RESPONSE = "the session ended before the response"
"""The ``incomplete`` value the HTTP captures record for a request whose response had not come when the
session ended (``stepfork.integrations._http_streams.snapshot``)."""


class UnfinishedCallError(TraceError, RuntimeError):
    """The outcome recorded for an instrumented call still running when the run ended.

    Never raised by recording: the session writes it, at its end, as the failure of each call whose result
    had not come (a daemon thread's request in flight when the program exited), so every call event of a
    finished bundle has an outcome (strict validation's ``unpaired_call``, notes 4). A replay that reaches
    such a call holds it until the replay's run ends and then raises it as the recorded failure, which is
    what the caller saw while recorded: nothing before the run ended (docs/recording.md, "Calls still
    running when the run ends"). ``code`` is ``unfinished_call``; the message is :data:`UNFINISHED_MESSAGE`.
    """

    code = "unfinished_call"

    def __init__(self, message: str = UNFINISHED_MESSAGE) -> None:
        super().__init__(message)
