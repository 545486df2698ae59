"""The report of a replay run (spec replay.txt, "CLI"): :class:`ReplayOutcome` and its three verdicts,
:class:`ExecutionReport`, :class:`MatchingReport` and :class:`BehaviorReport` (their statuses and exit codes:
:mod:`stepfork.replay.outcome`, which builds them), with its JSON form (``to_dict``, what ``--json`` prints)
and its notebook rendering.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stepfork.replay.diagnostics import Diagnostic, JsonDifference
from stepfork.replay.errors import ReplayError
from stepfork.replay.ignoring import IgnoredDifference
from stepfork.replay.requests import ServedRequest
from stepfork.replay.results import ExecutedCall
from stepfork.trace.redaction import redact_text


@dataclass(frozen=True, slots=True)
class ExecutionReport:
    """``status`` ``COMPLETED`` or ``RAISED``; for RAISED the qualified ``error_type`` and the redacted
    ``error_message`` of what the entrypoint raised."""

    status: str
    error_type: str | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class MatchingReport:
    """Dependency matching: ``status`` ``COMPLETE``/``DIVERGED``/``REJECTED``/``INCOMPLETE``; ``code`` and
    ``message`` of the replay error (None when complete); ``diagnostic``; ``remaining`` labels; ``matched``
    and ``total`` visible recorded calls; ``error`` the exception itself (not serialized)."""

    status: str
    matched: int
    total: int
    code: str | None = None
    message: str | None = None
    diagnostic: Diagnostic | None = None
    remaining: tuple[str, ...] = ()
    error: ReplayError | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class BehaviorReport:
    """Comparison with the recorded run: ``status`` (see :mod:`stepfork.replay.outcome`), ``path`` of the
    first difference (display form: ``answer``, ``items[0]``, ``$`` for the root), previews of ``expected``
    and ``actual`` there, ``recorded_failure`` (the manifest's failure type when the run was recorded as
    failed), a one-line ``message``, and for an output that differs ``differences`` (every differing
    path up to a limit, the first one first) and ``difference_count`` (how many in all). The output is
    compared up to noise (stepfork.replay.noise: fresh ids renamed one-to-one, timing fields and new
    SDK fields of framework messages); what was accepted as noise is ``ignored``."""

    status: str
    message: str
    path: str | None = None
    expected: str | None = None
    actual: str | None = None
    recorded_failure: str | None = None
    differences: tuple[JsonDifference, ...] = ()
    difference_count: int = 0
    ignored: tuple[JsonDifference, ...] = ()
    """Differences accepted as noise (fresh ids renamed, timing fields...: stepfork.replay.noise), up to
    a limit, each with its ``noise`` reason."""
    ignored_count: int = 0


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    """Everything a replay run established, computed once; the CLI renders it (``to_dict`` for --json).

    Attributes:
        mode: the replay mode; agent_name, run_id: from the bundle.
        execution, matching, behavior: the three reports.
        result: the redacted JSON form of the return value whenever the entrypoint completed, also when
            the replay diverged and the behaviour is NOT COMPARED (None when it raised or the value has no
            JSON form).
        result_error: why a completed entrypoint's return value has no JSON form (then ``result`` is
            None), else None.
        calls: the executed calls (redacted inputs), in order.
        exit_code: 0, 1 or 2 (:mod:`stepfork.replay.outcome`).
        raise_as_unmatched: the ``raise_as`` keys that apply to no failure this replay can serve (allowed,
            so one mapping serves many bundles; for one bundle often a typo), in the order given.
        raise_as_suggestion: ``--raise-as TYPE=MODULE:CLASS`` when a recorded failure escaped the
            entrypoint as Stepfork's own RecordedDependencyError (no ``raise_as`` class for its type) and
            the run did not reproduce the recorded outcome: the agent's ``except`` clause for its own
            exception type could not catch it. None otherwise.
    """

    mode: str
    agent_name: str
    run_id: str
    execution: ExecutionReport
    matching: MatchingReport
    behavior: BehaviorReport
    result: Any
    calls: tuple[ExecutedCall, ...]
    exit_code: int
    raise_as_unmatched: tuple[str, ...] = ()
    result_error: str | None = None
    raise_as_suggestion: str | None = None
    ignored: tuple[IgnoredDifference, ...] = ()
    """Input differences matching accepted at ``ignore`` paths (issue 12)."""
    network: str = "sealed"
    """The session's network policy: ``"sealed"`` or ``"open"`` (issue 29)."""
    allowed_hosts: tuple[str, ...] = ()
    """What the seal let through (``HOST`` or ``HOST:PORT``, normalized), in the order given."""
    allowed_commands: tuple[str, ...] = ()
    """The programs the seal let start unsealed (``allow_commands``), in the order given."""
    requests: tuple[ServedRequest, ...] = ()
    """The ``http`` calls (requests matched by their request, outside the agent's order: the agent's own
    and background threads') answered, in the order they came (issue 29); never in ``calls``."""
    recorded_requests: int = 0
    """How many ``http`` calls the recording holds."""
    seal_gaps: tuple[str, ...] = ()
    """What the network seal could not cover (``ReplaySession.seal_gaps``: ``child processes not sealed: 1
    started (curl)``); the report qualifies "sealed" with it."""

    def _repr_html_(self) -> str:
        """Notebook rendering: the verdicts, the first calls, the replay report a click away (issue 16);
        drawn by ``stepfork.analysis.view`` when installed, else the escaped text of ``_repr_pretty_``."""
        try:
            from stepfork.analysis.view.notebook import outcome_html
        except ImportError:
            import html

            return f"<pre>{html.escape(self._text())}</pre>"
        return outcome_html(self)

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython text rendering: one line per verdict."""
        printer.text(self._text())

    def _text(self) -> str:
        status = {0: "COMPLETED", 1: "DIVERGED"}.get(self.exit_code, "REJECTED")
        lines = [
            f"Replay of {redact_text(self.agent_name)} {self.run_id} ({self.mode}): {status}",
            f"Execution: {self.execution.status}",
            f"Dependency matching: {self.matching.status} ({self.matching.matched} of {self.matching.total})",
            f"Recorded behavior: {self.behavior.status}",
        ]
        if self.matching.message:
            lines.append(f"  {redact_text(self.matching.message)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict of every field (diagnostic as ``Diagnostic.to_dict``; the exception omitted)."""
        matching = self.matching
        return {
            "mode": self.mode,
            "agent_name": self.agent_name,
            "run_id": self.run_id,
            "execution": {
                "status": self.execution.status,
                "error_type": self.execution.error_type,
                "error_message": self.execution.error_message,
            },
            "matching": {
                "status": matching.status,
                "matched": matching.matched,
                "total": matching.total,
                "code": matching.code,
                "message": matching.message,
                "diagnostic": matching.diagnostic.to_dict() if matching.diagnostic is not None else None,
                "remaining": list(matching.remaining),
            },
            "behavior": {
                "status": self.behavior.status,
                "message": self.behavior.message,
                "path": self.behavior.path,
                "expected": self.behavior.expected,
                "actual": self.behavior.actual,
                "recorded_failure": self.behavior.recorded_failure,
                "differences": [item.to_dict() for item in self.behavior.differences],
                "difference_count": self.behavior.difference_count,
                "ignored": [item.to_dict() for item in self.behavior.ignored],
                "ignored_count": self.behavior.ignored_count,
            },
            "result": self.result,
            "result_error": self.result_error,
            "ignored": [item.to_dict() for item in self.ignored],
            "network": {
                "policy": self.network,
                "allowed_hosts": list(self.allowed_hosts),
                "allowed_commands": list(self.allowed_commands),
                "not_sealed": list(self.seal_gaps),
            },
            "requests": {
                "served": sum(1 for item in self.requests if item.action == "substituted"),
                "repeated": sum(1 for item in self.requests if item.action == "repeated"),
                "sent_live": sum(1 for item in self.requests if item.action == "executed"),
                "agent": sum(1 for item in self.requests if not item.background),
                "background": sum(1 for item in self.requests if item.background),
                "telemetry": sum(1 for item in self.requests if item.action in ("acknowledged", "refused")),
                "recorded": self.recorded_requests,
                "items": [item.to_dict() for item in self.requests],
            },
            "calls": [
                {
                    "index": call.index,
                    "step": call.step,
                    "kind": call.kind,
                    "label": call.label,
                    "action": call.action,
                    "match": call.match,
                    "status": call.status.value if call.status is not None else None,
                    "input": call.input,
                }
                for call in self.calls
            ],
            "exit_code": self.exit_code,
            "raise_as_unmatched": list(self.raise_as_unmatched),
            "raise_as_suggestion": self.raise_as_suggestion,
        }
