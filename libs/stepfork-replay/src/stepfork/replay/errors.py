"""The ReplayError family (spec replay.txt, "Errors"; interop/REFERENCE-API.md section 2).

```
ReplayError
├─ ReplayMismatchError ─ ReplayExhaustedError
├─ ReplayPolicyError ─ ChildProcessRefusedError (also a PermissionError)
└─ RecordedDependencyError
```

The spec says ``verify_complete()`` raises ReplayMismatchError in one place and ReplayExhaustedError in
another; ReplayExhaustedError is a subclass of ReplayMismatchError and is what it raises, so both hold.

Every error carries a stable ``code`` and, for divergences, a structured
:class:`~stepfork.replay.diagnostics.Diagnostic` (index, step, labels, input previews, JSON path of the
first difference, full SHA-256 fingerprints). Programs and the CLI read those fields, never the prose.
"""

from __future__ import annotations

import errno
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepfork.replay.diagnostics import Diagnostic


def short_type_name(type_name: str) -> str:
    """The last dotted component of a type name (``RateLimited`` for ``app.errors.RateLimited``): how a
    qualified recorded type is compared with a short one (the reference's bundles store short names)."""
    return type_name.rsplit(".", 1)[-1]


class ReplayError(Exception):
    """Base class of every replay error.

    Attributes:
        code: a stable snake_case identifier (``orphan_call``, ``not_active``, ``input_diverged``...).
        diagnostic: the structured description of the call concerned, or None.
    """

    code: str = "replay_error"

    def __init__(
        self, message: str, *, code: str | None = None, diagnostic: Diagnostic | None = None
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.diagnostic = diagnostic

    @property
    def summary(self) -> str:
        """The one-line headline of the error (``call #1: input diverged from the recording at $.city
        (tool 'search_flights', step 1)``), without the detail lines ``str()`` may add."""
        return str(self.args[0]) if self.args else ""

    @property
    def index(self) -> int | None:
        """0-based index of the call in the visible recorded call list, when known."""
        return self.diagnostic.index if self.diagnostic is not None else None

    @property
    def step(self) -> int | None:
        """``step`` of the recorded call event in the bundle, when known."""
        return self.diagnostic.step if self.diagnostic is not None else None


class ReplayMismatchError(ReplayError):
    """The entrypoint diverged from the recording, checked before the dependency body runs.

    Codes: ``kind_mismatch``, ``name_mismatch``, ``model_mismatch``, ``provider_mismatch``,
    ``input_diverged`` (with ``diagnostic.difference``: the JSON path of the first differing value, C7;
    ``diagnostic.differences``: every differing path, up to a limit, ``difference_count`` in all),
    ``invalid_input_fingerprint`` / ``invalid_output_fingerprint`` (a stored hash does not match its
    payload: the bundle is rejected; ``recommendation`` names ``stepfork validate --verify-integrity``),
    ``missing_result`` (the recorded call has no result), ``output_annotation_mismatch`` (the recorded output
    no longer fits the tool's return annotation; ``path`` names where), ``diverged_earlier``
    (verify_complete after a caught divergence).
    """

    code = "mismatch"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        diagnostic: Diagnostic | None = None,
        recommendation: str | None = None,
        path: str | None = None,
    ) -> None:
        super().__init__(message, code=code, diagnostic=diagnostic)
        self.recommendation = recommendation
        self.path = path

    def __str__(self) -> str:
        """The headline (:attr:`summary`), then, when a diagnostic is carried, its
        :meth:`~stepfork.replay.diagnostics.Diagnostic.explain` lines: every differing path with both
        values and their JSON types, both calls with redacted input previews, abbreviated fingerprints (the
        full ones stay on ``diagnostic``) and a hint when one applies. About 15 lines at most."""
        if self.diagnostic is None:
            return self.summary
        return f"{self.summary}\n{self.diagnostic.explain()}"


class ReplayExhaustedError(ReplayMismatchError):
    """A call arrived after every recorded call was consumed (``exhausted``), or ``verify_complete()``
    found recorded calls left unmatched (``incomplete``).

    Attributes:
        remaining: labels of the unconsumed recorded calls (``incomplete``), in recorded order.
    """

    code = "exhausted"

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        diagnostic: Diagnostic | None = None,
        remaining: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message, code=code, diagnostic=diagnostic)
        self.remaining = remaining


class ReplayPolicyError(ReplayError):
    """The mode or the per-call policy forbids the call; raised before the body runs and before the
    recorded response is consumed.

    Codes: ``forbidden_mode``, ``not_approved`` (manual mode: no ``approve`` callback, or it said no),
    ``forbidden_policy`` / ``manual_policy`` (the recorded event's replay_policy),
    ``live_tool_not_authorized`` (live mode, a tool outside ``allow_live_tools``), ``network_sealed`` (the
    network seal refused a connection: stepfork.replay.network), ``child_process_refused``
    (:class:`ChildProcessRefusedError`).
    """

    code = "policy"


class ChildProcessRefusedError(ReplayPolicyError, PermissionError):
    """A child process the network seal cannot reach was refused before it started (code
    ``child_process_refused``; docs/replay.md "The seal's rules"): a program that is not Python, or a Python
    started without the environment the seal travels in (``-I``, ``-E``, ``-S``, an ``env=`` that drops it).

    Also a ``PermissionError`` (``errno`` ``EACCES``), as the operating system refusing to run a program
    raises it, so an agent's ``except OSError`` handles it as it would there; the refusal is recorded as the
    replay's divergence all the same.

    Attributes:
        program: the program's name (``curl``; for a shell running one simple command, that command's).
    """

    code = "child_process_refused"

    def __init__(self, message: str, *, program: str) -> None:
        super().__init__(message, code="child_process_refused")
        self.errno = errno.EACCES
        self.program = program


class RecordedDependencyError(ReplayError):
    """A dependency that failed during recording, raised again at the same point of the replay (C8).

    Attributes:
        kind: ``"tool"`` or ``"llm"``.
        name: the tool name or the LLM label.
        error_type: the recorded exception type, qualified when the recorder stored it so
            (``mypkg.errors.RateLimited``).
        message: the recorded message, sanitized (redacted) again before it is carried.
        chain: the recorded cause/context chain, outermost first: a tuple of JSON objects as the recorder
            stored them under ``details["chain"]`` (each at least ``{"type", "message"}``), redacted.
        details: the recorded error details (redacted JSON) or None.

    ``str()`` is ``recorded {kind} failure for {name!r}: {error_type}: {message}`` (REFERENCE-API.md 2).
    With ``ReplaySession(raise_as=...)`` the instance raised may also be of the user's class for
    ``error_type`` (stepfork.replay.raise_as); its ``str()`` is then ``message`` alone, as the user's class
    would print it, and :func:`recorded_failure_text` gives the sentence.
    """

    code = "recorded_failure"

    def __init__(
        self,
        *,
        kind: str,
        name: str,
        error_type: str,
        message: str,
        chain: tuple[Any, ...] = (),
        details: Any = None,
        diagnostic: Diagnostic | None = None,
    ) -> None:
        super().__init__(recorded_failure_text(kind, name, error_type, message), diagnostic=diagnostic)
        self.kind = kind
        self.name = name
        self.error_type = error_type
        self.message = message
        self.chain = chain
        self.details = details

    @property
    def short_type(self) -> str:
        """The error type without its module (``RateLimited`` for ``mypkg.errors.RateLimited``)."""
        return short_type_name(self.error_type)


def recorded_failure_text(kind: str, name: str, error_type: str, message: str) -> str:
    """The sentence ``recorded {kind} failure for {name!r}: {error_type}: {message}`` (REFERENCE-API.md 2):
    ``str()`` of a RecordedDependencyError, kept for reports when ``raise_as`` makes ``str()`` the message."""
    return f"recorded {kind} failure for {name!r}: {error_type}: {message}"
