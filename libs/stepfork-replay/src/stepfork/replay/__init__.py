"""stepfork.replay: run a trusted entrypoint again with its dependency calls served from a bundle.

Spec: replay.txt and hybrid-replay.txt (docs/replay.md). Main names: :class:`ReplaySession` (frozen,
hybrid, live, forbidden, manual; ``raise_as`` raises recorded failures as the user's own exception
classes), the ReplayError family, :func:`run_regression_case` (exported pytest tests),
:func:`replay_entrypoint` (the CLI's replay report), :func:`resolve_entrypoint`. Trajectory
assertions live in :mod:`stepfork.replay.assertions` (re-exported as ``stepfork.assertions``).
"""

from __future__ import annotations

from stepfork.replay.diagnostics import (
    MISSING,
    Diagnostic,
    JsonDifference,
    first_difference,
    model_fingerprint,
)
from stepfork.replay.entrypoint import (
    EntrypointCallError,
    EntrypointError,
    call_entrypoint,
    resolve_entrypoint,
    run_in_session,
)
from stepfork.replay.errors import (
    RecordedDependencyError,
    ReplayError,
    ReplayExhaustedError,
    ReplayMismatchError,
    ReplayPolicyError,
)
from stepfork.replay.modes import MODES
from stepfork.replay.outcome import (
    BehaviorReport,
    ExecutionReport,
    MatchingReport,
    ReplayOutcome,
    exit_code_for_error,
    replay_entrypoint,
)
from stepfork.replay.plan import RecordedCall, extract_recorded_calls
from stepfork.replay.raise_as import RaiseAsTarget, RaiseAsWarning
from stepfork.replay.regression import run_regression_case
from stepfork.replay.results import ExecutedCall, MatchedCall, ReplayDecision, ReplaySummary
from stepfork.replay.session import ReplaySession, active_replay

__all__ = [
    "MISSING",
    "MODES",
    "BehaviorReport",
    "Diagnostic",
    "EntrypointCallError",
    "EntrypointError",
    "ExecutedCall",
    "ExecutionReport",
    "JsonDifference",
    "MatchedCall",
    "MatchingReport",
    "RaiseAsTarget",
    "RaiseAsWarning",
    "RecordedCall",
    "RecordedDependencyError",
    "ReplayDecision",
    "ReplayError",
    "ReplayExhaustedError",
    "ReplayMismatchError",
    "ReplayOutcome",
    "ReplayPolicyError",
    "ReplaySession",
    "ReplaySummary",
    "active_replay",
    "call_entrypoint",
    "exit_code_for_error",
    "extract_recorded_calls",
    "first_difference",
    "model_fingerprint",
    "replay_entrypoint",
    "resolve_entrypoint",
    "run_in_session",
    "run_regression_case",
]
