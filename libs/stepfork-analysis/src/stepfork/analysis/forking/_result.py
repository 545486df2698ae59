"""``ForkResult``: a forked run, where it was written and how it went, rendered three ways (STYLE.md
"Result objects that render themselves"): ``str()`` the summary, ``to_dict()`` the ``--json`` form,
``_repr_html_`` a notebook table.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stepfork.analysis._shared.render import html_table, show_value

__all__ = ["ForkResult"]


@dataclass(frozen=True)
class ForkResult:
    """A forked run: where it was written and how it went.

    Attributes:
        parent, output: bundle paths; fork_step: N; frozen_calls: calls served from the recording;
        live_calls: calls run live; overrides: the overridden steps; status: ``completed`` or ``failed``;
        error: ``type: message`` when the entrypoint raised (redacted); result: the redacted output.
        network: the seal of the frozen part (``sealed`` or ``open``); allow_hosts, allow_commands: what it
            let through (``fork(allow_hosts=, allow_commands=)``, normalized).
    """

    parent: str
    output: str
    fork_step: int
    frozen_calls: int
    live_calls: int
    overrides: tuple[int, ...]
    status: str
    error: str | None = None
    result: Any = field(default=None)
    network: str = "sealed"
    allow_hosts: tuple[str, ...] = ()
    allow_commands: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """0 when the forked run completed, 1 when the entrypoint raised (the run is still recorded)."""
        return 0 if self.status == "completed" else 1

    def to_dict(self) -> dict[str, Any]:
        """The JSON form of every field."""
        return {
            "parent": self.parent,
            "output": self.output,
            "fork_step": self.fork_step,
            "frozen_calls": self.frozen_calls,
            "live_calls": self.live_calls,
            "overrides": list(self.overrides),
            "status": self.status,
            "error": self.error,
            "result": self.result,
            "network": {
                "policy": self.network,
                "allowed_hosts": list(self.allow_hosts),
                "allowed_commands": list(self.allow_commands),
            },
        }

    def rows(self) -> list[tuple[str, str]]:
        """The summary rows shown by ``str()`` and ``_repr_html_()``."""
        rows = [
            ("Parent", self.parent),
            ("Fork step", str(self.fork_step)),
            ("Frozen calls", str(self.frozen_calls)),
            ("Live calls", str(self.live_calls)),
            ("Overrides", ", ".join(map(str, self.overrides)) or "none"),
            ("Status", self.status.upper()),
        ]
        if self.allow_hosts or self.allow_commands:  # what the frozen part's seal let through
            from stepfork.replay.network_notes import network_line

            rows.append(("Network", network_line(self.network, self.allow_hosts, (), self.allow_commands)))
        rows.append(("Error", self.error) if self.error else ("Result", show_value(self.result)))
        rows.append(("Output", self.output))
        return rows

    def __str__(self) -> str:
        lines = ["Stepfork Fork", ""] + [f"{k + ':':<14}{v}" for k, v in self.rows()]
        return "\n".join([*lines, "", f"Compare: stepfork diff {self.parent} {self.output}"])

    def _repr_html_(self) -> str:
        return html_table(
            f"Fork of {self.parent} at step {self.fork_step}", ["", ""], [list(r) for r in self.rows()]
        )
