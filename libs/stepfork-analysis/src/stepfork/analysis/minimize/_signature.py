"""The failure signature of one ``minimize`` replay (analysis/minimize.py, step 1): what failed, and how the
replay itself went (docs/minimize.md "What counts as the same failure").

A signature is computed in the process that ran the replay (a zygote child or a worker subprocess) and
crosses a pipe as JSON (:meth:`Signature.to_json`, :meth:`Signature.from_json`), so both paths give equal
signatures for the same candidate.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FAILURE_KINDS", "SEAL_CODES", "Signature", "no_failure_reason", "replay_signature"]

FAILURE_KINDS = frozenset({"exception", "output_mismatch"})
"""Signature kinds that are a failure of the agent, and so can be minimized."""

_NAMES = {
    "exception": "Exception",
    "output_mismatch": "Output Mismatch",
    "replay_error": "Replay Error",
}


@dataclass(frozen=True)
class Signature:
    """How one replay ended: the failure (``kind``, ``detail``) and how the replay went (the rest).

    ``minimize`` compares the failure (:meth:`same_failure`); with ``clean_replay`` also the replay
    (:meth:`replays_like`). ``==`` compares ``kind``, ``detail``, ``divergence`` and ``divergence_at``
    (not ``divergences``, ``pending``, ``complete`` or ``reached``).

    Attributes:
        kind: ``exception`` (the entrypoint raised), ``output_mismatch`` (its output differs from the
            expectation), ``none`` (neither), ``replay_error`` (the entrypoint raised a Stepfork replay
            error: the replay failed, not the agent), ``timeout``, ``crash`` (the attempt's process died),
            ``setup_error`` (the candidate or the entrypoint could not be loaded).
        detail: the exception's qualified type (``recorded T`` for a recorded failure raised again), the
            first differing path, the replay error's code, the crash's last stderr line, or None.
        divergence: code of the first replay error the session recorded (ReplaySession ``divergence``: a
            ReplayError other than RecordedDependencyError, kept even when the agent caught it), or None.
        divergence_at: which divergence: the code, the id of the recorded call event it was checked
            against (``end`` past the last one), the live call's label and input fingerprint; or None.
        divergences: how many distinct divergences the replay raised (the first is ``divergence``); a
            removed call the agent still makes is one each (``ReplaySession.divergence_count``).
        pending: recorded calls the replay left unconsumed.
        complete: True when the replay never diverged and consumed every recorded call it expects
            (``verify_complete``).
        reached: ids of the recorded call events the replay consumed, in order.
        message: for ``replay_error``, the replay error's own message (``network_sealed`` names the host
            and ``--allow-host HOST`` / ``--allow-network``), shown when minimize stops on it; else None.
    """

    kind: str
    detail: str | None = None
    divergence: str | None = None
    divergence_at: str | None = field(default=None, repr=False)
    divergences: int = field(default=0, compare=False)
    pending: int = field(default=0, compare=False)
    complete: bool = field(default=True, compare=False)
    reached: tuple[str, ...] = field(default=(), compare=False, repr=False)
    message: str | None = field(default=None, compare=False, repr=False)

    def __str__(self) -> str:
        name = _NAMES.get(self.kind, self.kind.replace("_", " ").title())
        text = f"{name} ({self.detail})" if self.detail and self.kind != "output_mismatch" else name
        return f"{text}, diverged ({self.divergence})" if self.divergence else text

    @property
    def is_failure(self) -> bool:
        """True when this is a failure of the agent (an exception it raised, or an output mismatch)."""
        return self.kind in FAILURE_KINDS

    @property
    def matching(self) -> str:
        """What ``stepfork replay`` reports as dependency matching for this replay: ``DIVERGED`` (a
        divergence, even one the agent caught), ``INCOMPLETE`` (calls left unconsumed) or ``COMPLETE``."""
        if self.divergence is not None:
            return "DIVERGED"
        return "INCOMPLETE" if self.pending else "COMPLETE"

    def same_failure(self, other: Signature) -> bool:
        """True when ``other`` is a failure of the agent with this kind and detail (the spec's "same
        failure"): the same exception type, or an output mismatch at the same first path."""
        return other.is_failure and (other.kind, other.detail) == (self.kind, self.detail)

    def replays_like(self, other: Signature) -> bool:
        """True when the replay ``other`` went as this one did: the same first divergence (or none), as
        many divergences, and no call left unconsumed unless this replay left some too."""
        same_divergence = (other.divergence, other.divergence_at) == (self.divergence, self.divergence_at)
        return (
            same_divergence
            and other.divergences == self.divergences
            and (other.pending == 0 or self.pending > 0)
        )

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON (``reached`` as a list), for the pipe between an attempt and the minimizer."""
        return {
            "kind": self.kind,
            "detail": self.detail,
            "divergence": self.divergence,
            "divergence_at": self.divergence_at,
            "divergences": self.divergences,
            "pending": self.pending,
            "complete": self.complete,
            "reached": list(self.reached),
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: Any) -> Signature:
        """The signature :meth:`to_json` wrote (other keys, such as a job id, are ignored).

        Raises:
            ValueError: ``data`` is not an object with a string ``kind`` and fields of the right types.
        """
        if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
            raise ValueError("a signature is an object with a string 'kind'")
        texts = [data.get(key) for key in ("detail", "divergence", "divergence_at")]
        reached = data.get("reached", [])
        counts = [data.get("divergences", 0), data.get("pending", 0)]
        if (
            not all(t is None or isinstance(t, str) for t in texts)
            or not isinstance(reached, list)
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts)
        ):
            raise ValueError("malformed signature fields")
        return cls(
            data["kind"],
            texts[0],
            texts[1],
            texts[2],
            divergences=counts[0],
            pending=counts[1],
            complete=bool(data.get("complete", True)),
            reached=tuple(str(r) for r in reached),
            message=data["message"] if isinstance(data.get("message"), str) else None,
        )


def _qualified(exc: BaseException) -> str:
    from stepfork.replay import RecordedDependencyError

    if isinstance(exc, RecordedDependencyError):  # the recorded failure, not Stepfork's carrier class
        return f"recorded {exc.error_type}"
    cls = type(exc)
    if cls.__module__ in ("builtins", "__main__"):
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def _diff_path(path: str) -> str:
    """A JSONPath (``$.a[0]``) in the diff's form, as signatures always named it (``a[0]``; ``$`` root)."""
    from stepfork.replay.diagnostics import display_path

    return display_path(path)


def _divergence_at(error: Any, ids_by_step: dict[int, str]) -> str:
    """Identify a divergence across candidates: candidates renumber steps but keep event ids."""
    diagnostic = getattr(error, "diagnostic", None)
    step = getattr(diagnostic, "step", None)
    parts = [
        str(getattr(error, "code", "replay_error")),
        ids_by_step.get(step, "?") if step is not None else "end",
        str(getattr(diagnostic, "actual_label", None)),
        str(getattr(diagnostic, "actual_input_fingerprint", None)),
    ]
    return " ".join(parts)


def replay_signature(
    bundle: str | os.PathLike[str],
    entrypoint: str,
    *,
    mode: str = "frozen",
    import_root: str | None = None,
    expected: Any = None,
    has_expected: bool = False,
    ordering: str = "auto",
    network: str | None = None,
    allow_hosts: list[str] | None = None,
    allow_commands: list[str] | None = None,
) -> Signature:
    """Replay ``bundle`` through ``entrypoint`` (``MODULE:FUNCTION``) in this process; return its signature.

    Uses the public replay API (``ReplaySession``, ``resolve_entrypoint``, ``run_in_session``) rather than
    ``replay_entrypoint``, because an output must be compared with ``expected`` (JSON, used when
    ``has_expected``). Kind, in order: ``replay_error`` when the entrypoint raised a ReplayError other
    than RecordedDependencyError; ``exception``; ``output_mismatch``; ``none``. How the replay went (its
    first divergence, docs/replay.md, the number of divergences, the calls left unconsumed) is recorded
    beside the kind whatever it is. ``network``/``allow_hosts``/``allow_commands``: the session's network
    policy (``ReplaySession``; None: the mode's default).

    Raises:
        TraceError, OSError: the bundle cannot be read; EntrypointError: the entrypoint cannot be resolved;
        ValueError: an invalid mode. KeyboardInterrupt propagates.
    """
    from stepfork.replay import (
        RecordedDependencyError,
        ReplayError,
        ReplaySession,
        resolve_entrypoint,
        run_in_session,
    )
    from stepfork.replay.entrypoint import recorded_run_input
    from stepfork.replay.noise import Origins
    from stepfork.replay.noise.output import output_differences
    from stepfork.trace import Trace, redact_json, to_jsonable

    trace = Trace.load(bundle)
    ids_by_step = {event.step: event.id for event in trace.events}
    session = ReplaySession(
        trace,
        mode,
        ordering=ordering,
        network=network,
        allow_hosts=allow_hosts,
        allow_commands=allow_commands,
    )
    function = resolve_entrypoint(  # the import sealed as the session will be
        entrypoint,
        import_root=import_root,
        network=session.network,
        allow_hosts=allow_hosts,
        mode=mode,
        allow_commands=session.allow_commands,
    )
    result, raised = run_in_session(session, function, recorded_run_input(trace))
    try:
        session.verify_complete()
        complete = True
    except ReplayError:
        complete = False
    error = session.divergence
    state: dict[str, Any] = {
        "divergence": getattr(error, "code", "replay_error") if error is not None else None,
        "divergence_at": _divergence_at(error, ids_by_step) if error is not None else None,
        "divergences": session.divergence_count,
        "pending": session.pending,
        "complete": complete,
        "reached": tuple(ids_by_step[c.step] for c in session.executed_calls if c.step in ids_by_step),
    }
    if isinstance(raised, ReplayError) and not isinstance(raised, RecordedDependencyError):
        return Signature("replay_error", raised.code, message=str(raised), **state)
    if raised is not None:
        return Signature("exception", _qualified(raised), **state)
    if has_expected:
        try:
            actual = redact_json(to_jsonable(result)).value
        except (TypeError, ValueError):
            return Signature("output_mismatch", "$", **state)
        # up to noise, as replay's report compares (stepfork.replay.noise): the same failure either way
        live, scope = session.live_origins(), session.output_scope()
        found = output_differences(expected, actual, Origins(trace), live=live, scope=scope).first
        if found is not None:
            return Signature("output_mismatch", _diff_path(found.path), **state)
    return Signature("none", **state)


SEAL_CODES = ("network_sealed", "child_process_refused")
"""The refusals of the replay's seal: an original replay that met one shows the seal's doing, not the
agent's failure (docs/minimize.md)."""


def no_failure_reason(signature: Signature, timeout: float) -> str:
    """Why the original replay ``signature`` (``timeout``: seconds per attempt) shows no failure of the
    agent to minimize, one line, the spec's sentence first ("trace replay completed successfully; no
    failure to minimize"); a refusal of the seal names its host or command and the option that lets it
    through."""
    if signature.kind == "none" and signature.divergence is None:
        reason = "trace replay completed successfully; no failure to minimize"
    elif signature.kind == "none":
        reason = (
            f"the replay diverged from the recording ({signature.divergence}); a replay divergence "
            "is not a failure to minimize (stepfork replay shows where)"
        )
    elif signature.kind == "replay_error" and signature.detail in SEAL_CODES and signature.message:
        # the host or the command and the fix, as replay and fork say them (stepfork.replay.network)
        reason = (
            f"the replay raised a Stepfork replay error ({signature.detail}), not a failure of the agent: "
            f"{signature.message}"
        )
    elif signature.divergence == "network_sealed":
        # a refusal the agent caught (at its module's import, say): what fails then is the seal's doing
        reason = (
            "the replay's network seal refused a connection the recording does not hold (network_sealed), "
            "so the failure seen is not the agent's own (stepfork replay names the host; --allow-host HOST "
            "or --allow-network let it through)"
        )
    elif signature.divergence == "child_process_refused":
        reason = (
            "the replay's seal refused a child process the recording does not hold (child_process_refused), "
            "so the failure seen is not the agent's own (stepfork replay names the command; --allow-command "
            "NAME or --allow-network let it run)"
        )
    elif signature.kind == "replay_error":
        reason = (
            f"the replay raised a Stepfork replay error ({signature.detail}), not a failure of the agent "
            "(stepfork replay shows where)"
        )
    elif signature.kind == "timeout":
        reason = f"the replay timed out after {timeout}s"
    elif signature.kind == "crash":
        reason = f"the replay process failed: {signature.detail}"
    else:
        reason = f"the replay could not start ({signature.kind}: {signature.detail})"
    return reason
