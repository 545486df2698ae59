"""``MinimizeResult``: what ``minimize_trace`` found, rendered three ways (STYLE.md "Result objects that
render themselves"): ``str()`` is the spec's report panel (spec/cli-reference.txt "minimize") plus the
``Clean Replay`` row, ``to_dict()`` the ``--json`` form, ``_repr_html_`` a notebook table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stepfork.analysis._shared.render import html_table
from stepfork.analysis.minimize._signature import Signature

__all__ = ["MinimizeResult"]


@dataclass(frozen=True)
class MinimizeResult:
    """What minimization found; ``str()`` is the spec's report panel, ``to_dict()`` the JSON form.

    Attributes:
        original, output: bundle paths; agent_name, entrypoint, mode: as given.
        original_events, minimized_events: event counts; replay_attempts: replays run (detection,
            search and verification; each ``--attempts`` repeat counts).
        signature: the failure (and how the original replay went); minimal: True when the result is
            1-minimal; kept_steps: the original ``step`` of each kept call; removed_calls: how many calls
            were removed; removed: each removed call as ``step S: KIND LABEL`` (original steps), in order.
        clean_replay: True when the search required a clean replay (``minimize_trace(clean_replay=True)``).
        replay: the signature of the final verification replay of the saved bundle (how it replays);
            None in a result built by hand, read as "replays as the original".
        network: every attempt's network policy (``sealed`` or ``open``); allow_hosts, allow_commands: what
            the seal let through (``--allow-host``, ``--allow-command``), so a re-run can ask the same.
    """

    original: str
    output: str
    agent_name: str
    entrypoint: str
    mode: str
    original_events: int
    minimized_events: int
    replay_attempts: int
    signature: Signature
    minimal: bool
    kept_steps: tuple[int, ...] = field(default=())
    removed_calls: int = 0
    clean_replay: bool = False
    replay: Signature | None = None
    removed: tuple[str, ...] = ()
    network: str = "sealed"
    allow_hosts: tuple[str, ...] = ()
    allow_commands: tuple[str, ...] = ()

    @property
    def reduction(self) -> float:
        """Share of events removed, in percent (0.0-100.0)."""
        return 0.0 if not self.original_events else 100.0 * (1 - self.minimized_events / self.original_events)

    @property
    def replays_cleanly(self) -> bool:
        """True when the saved bundle replays as the original does (no divergence but the original's, no
        call left unconsumed unless the original left some); always so with ``clean_replay``."""
        return self.replay is None or self.signature.replays_like(self.replay)

    @property
    def removed_calls_made(self) -> int:
        """Removed calls the agent still makes in the saved bundle's replay (each one a divergence)."""
        return 0 if self.replay is None else max(0, self.replay.divergences - self.signature.divergences)

    def _clean_text(self) -> str:
        """``Yes``, or ``No (why; what `stepfork replay` of the saved bundle reports)``."""
        replay = self.replay
        if replay is None or self.replays_cleanly:
            return "Yes"
        made, left, first = self.removed_calls_made, replay.pending, self.signature
        if made:
            why = f"{made} removed call{'s are' if made != 1 else ' is'} still made"
        elif (replay.divergence, replay.divergence_at) != (first.divergence, first.divergence_at):
            why = f"its replay diverges ({replay.divergence})"
        else:
            why = f"{left} recorded call{'s are' if left != 1 else ' is'} left unconsumed"
        return f"No ({why}; `stepfork replay` reports {replay.matching})"

    def rows(self) -> list[tuple[str, str]]:
        """The report panel's rows: the spec's, in its order, then ``Clean Replay`` (Yes, or No with why)."""
        return [
            ("Original Events", str(self.original_events)),
            ("Minimized Events", str(self.minimized_events)),
            ("Reduction", f"{self.reduction:.1f}%"),
            ("Replay Attempts", str(self.replay_attempts)),
            ("Failure Signature", str(self.signature)),
            ("Minimal", "Yes" if self.minimal else "No"),
            ("Clean Replay", self._clean_text()),
        ]

    def to_dict(self) -> dict[str, Any]:
        """JSON form: paths, counts, reduction, signature ``{kind, detail, divergence}``, minimal, kept
        steps, ``clean_replay``: ``{required, clean, matching, removed_calls_made, unconsumed}``
        (``matching`` is what ``stepfork replay`` of the saved bundle reports: COMPLETE, DIVERGED or
        INCOMPLETE), and ``network``: ``{policy, allowed_hosts, allowed_commands}`` of every attempt (the
        keys of ``stepfork replay --json``'s ``network``)."""
        return {
            "original": self.original,
            "output": self.output,
            "agent_name": self.agent_name,
            "entrypoint": self.entrypoint,
            "mode": self.mode,
            "original_events": self.original_events,
            "minimized_events": self.minimized_events,
            "reduction": round(self.reduction, 1),
            "replay_attempts": self.replay_attempts,
            "signature": {
                "kind": self.signature.kind,
                "detail": self.signature.detail,
                "divergence": self.signature.divergence,
            },
            "minimal": self.minimal,
            "kept_steps": list(self.kept_steps),
            "removed_calls": self.removed_calls,
            "removed": list(self.removed),
            "clean_replay": {
                "required": self.clean_replay,
                "clean": self.replays_cleanly,
                "matching": (self.replay or self.signature).matching,
                "removed_calls_made": self.removed_calls_made,
                "unconsumed": (self.replay or self.signature).pending,
            },
            "network": {
                "policy": self.network,
                "allowed_hosts": list(self.allow_hosts),
                "allowed_commands": list(self.allow_commands),
            },
        }

    def __str__(self) -> str:
        width = max(len(v) for _, v in self.rows())
        body = [f"│ {k:<19} {v:<{width}} │" for k, v in self.rows()]
        inner = len(body[0]) - 2
        title = "─ Minimization Report "
        return "\n".join(
            [
                f"╭{title}{'─' * (inner - len(title))}╮",
                *body,
                f"╰{'─' * inner}╯",
                "",
                *self._outcome_lines(),
            ]
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython text rendering: the ``str()`` report panel."""
        printer.text(str(self))

    def _outcome_lines(self) -> list[str]:
        """The calls removed (up to 20, then a count) and where the bundle went, or, when no call could
        be removed, that sentence instead of "saved" (issue 13)."""
        if not self.removed_calls:
            return [
                "Nothing could be removed: every recorded call is needed to reproduce the failure.",
                f"The bundle at {self.output} holds the same calls as the original.",
            ]
        shown = [f"  - {line}" for line in self.removed[:20]]
        if len(self.removed) > 20:
            shown.append(f"  ... and {len(self.removed) - 20} more")
        noun = "call" if self.removed_calls == 1 else "calls"
        return [
            f"Removed {self.removed_calls} {noun}:",
            *shown,
            "",
            f"✓ Minimized trace saved to: {self.output}",
        ]

    def _repr_html_(self) -> str:
        """Notebook rendering: the report table, the kept and removed calls a click away (when the
        original bundle can still be read)."""
        from stepfork.analysis.view import minimize_html
        from stepfork.analysis.view.notebook import with_full_view
        from stepfork.trace.errors import TraceError

        table = html_table(f"Minimization Report: {self.output}", ["", ""], [list(r) for r in self.rows()])
        try:
            page: str | None = minimize_html(self)
        except (TraceError, OSError):
            page = None
        return with_full_view(table, page)
