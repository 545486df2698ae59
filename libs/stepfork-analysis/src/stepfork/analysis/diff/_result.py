"""The result of ``diff_traces`` (spec/cli-reference.txt, "diff"): :class:`DiffResult` (the verdict, the
step counts, every aligned :class:`StepDiff`, which run each side is: :class:`TraceSummary`) and its three
renderings: ``str()`` (the spec's human output; docs/decisions.md, "diff's human output"), ``to_dict()``
(``--json``) and ``_repr_html_()`` (notebooks). The alignment and comparison that build it are
:mod:`._compare`, which re-exports these names.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from stepfork.analysis._shared.render import html_table, pre, show_value
from stepfork.analysis.diff._behavior import BehaviorStep, ChangeKind, FieldChange

__all__ = ["DiffResult", "StepDiff", "TraceSummary"]


class TraceSummary(BaseModel):
    """Which run a side of the diff is: bundle path (or None for an in-memory trace), agent, run id,
    manifest status and event count."""

    model_config = ConfigDict(frozen=True)

    path: str | None = None
    agent_name: str
    run_id: str
    status: str
    events: int

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a JSON-ready dict."""
        return {
            "path": self.path,
            "agent_name": self.agent_name,
            "run_id": self.run_id,
            "status": self.status,
            "events": self.events,
        }


class StepDiff(BaseModel):
    """One aligned step.

    Attributes:
        index: position in the aligned sequence (0-based).
        kind: ``added`` (only in the candidate), ``removed`` (only in the baseline), ``changed`` or
            ``unchanged``.
        step_type, label: the step's identity (see :class:`BehaviorStep`).
        fields: for a paired step, each compared field (``input``, ``output``, ``status``...) -> its kind.
        changes: every leaf difference, with paths prefixed by the field (``output.should_notify``).
        baseline, candidate: the steps themselves (None on the side where the step is absent).
    """

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    index: int
    kind: ChangeKind
    step_type: str
    label: str
    fields: dict[str, ChangeKind] = Field(default_factory=dict)
    changes: tuple[FieldChange, ...] = ()
    # The steps themselves: for to_dict and the renderers, left out of model_dump (they are not JSON).
    baseline: BehaviorStep | None = Field(default=None, exclude=True)
    candidate: BehaviorStep | None = Field(default=None, exclude=True)
    ignored: tuple[FieldChange, ...] = ()
    """Differences at ignored (volatile) paths: not in ``changes``, not part of ``kind``."""

    def to_dict(self) -> dict[str, Any]:
        """Return ``{index, kind, step_type, label, baseline_step, candidate_step, fields, changes, ...}``."""
        out: dict[str, Any] = {
            "index": self.index,
            "kind": self.kind,
            "step_type": self.step_type,
            "label": self.label,
            "baseline_step": self.baseline.step if self.baseline else None,
            "candidate_step": self.candidate.step if self.candidate else None,
            "fields": dict(self.fields),
            "changes": [c.to_dict() for c in self.changes],
            "ignored": [c.to_dict() for c in self.ignored],
        }
        if self.kind == "added" and self.candidate is not None:
            out["candidate"] = self.candidate.payload
        if self.kind == "removed" and self.baseline is not None:
            out["baseline"] = self.baseline.payload
        return out


_MARK = {"added": "+", "removed": "-", "changed": "~", "unchanged": " "}
PATH_LIMIT = 10
"""How many changed paths ``str()`` shows per step before it gives their count (``to_dict`` has all)."""


class DiffResult(BaseModel):
    """The behaviour diff of two runs; ``equivalent`` is True when no step is added, removed or changed.

    Render with ``str()`` (the spec's human output), ``_repr_html_()`` (notebooks) or ``to_dict()``
    (``--json``). ``exit_code`` is 0 when equivalent, else 1 (spec, "diff").
    """

    model_config = ConfigDict(frozen=True)

    equivalent: bool
    baseline: TraceSummary
    candidate: TraceSummary
    steps: tuple[StepDiff, ...] = ()
    added: int = 0
    removed: int = 0
    changed: int = 0
    unchanged: int = 0
    ignored: int = 0
    """How many differences were ignored as noise (noise rules, renamed ids, ``--ignore``)."""
    show_ignored: bool = False
    renamed: int = 0
    """How many ids the diff's one renaming maps to another (each baseline id to its candidate id)."""
    not_compared: int = 0
    """How many calls were not compared, both runs together, because when they came or whether they
    returned is timing: a background thread's extra rounds of a request both runs made, rounds and calls a
    run ended during (:mod:`stepfork.analysis.diff._timing_calls`; docs/diff.md, "Calls on their own
    clock")."""

    @property
    def exit_code(self) -> int:
        """0 behaviour equivalent, 1 meaningful behavioural difference (spec, "diff", exit codes)."""
        return 0 if self.equivalent else 1

    @property
    def changes(self) -> list[FieldChange]:
        """Every field change of every step, in step order."""
        return [c for s in self.steps for c in s.changes]

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form: ``{equivalent, result, baseline, candidate, changed, added, removed,
        unchanged, counts, steps}``; the four step counts also at the top level, where the earlier
        implementation's ``diff --json`` had them (issue 32)."""
        return {
            "equivalent": self.equivalent,
            "result": "equivalent" if self.equivalent else "behavior_changed",
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "changed": self.changed,
            "added": self.added,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "counts": {
                "total": len(self.steps),
                "changed": self.changed,
                "added": self.added,
                "removed": self.removed,
                "unchanged": self.unchanged,
                "ignored": self.ignored,
                "renamed": self.renamed,
                "not_compared": self.not_compared,
            },
            "steps": [s.to_dict() for s in self.steps],
        }

    def lines(self) -> list[str]:
        """The ``str()`` report as a list of lines (each line's data may itself hold a newline or other
        control characters: the CLI escapes each line, docs/cli.md)."""
        return self._lines()

    def _lines(self) -> list[str]:
        lines = [
            f"Baseline:   {self.baseline.path or self.baseline.run_id} ({self.baseline.agent_name}, "
            f"{self.baseline.status})",
            f"Candidate:  {self.candidate.path or self.candidate.run_id} ({self.candidate.agent_name}, "
            f"{self.candidate.status})",
            "",
        ]
        first = True
        for s in self.steps:
            if s.kind == "unchanged":
                if self.show_ignored and s.ignored:
                    lines.append(f"  {s.step_type} {s.label}{_where(s)}: unchanged")
                    lines.extend(_ignored_lines(s))
                continue
            where = _where(s)
            lines.append(f"{_MARK[s.kind]} {s.step_type} {s.label}{where}: {s.kind}")
            if s.kind in ("added", "removed"):
                step = s.candidate if s.kind == "added" else s.baseline
                for name, value in (step.payload if step else {}).items():
                    lines.append(f"    {name}: {show_value(value)}")
                continue
            unchanged = [name for name, kind in s.fields.items() if kind == "unchanged"]
            if unchanged:
                lines.append(f"  unchanged: {', '.join(unchanged)}")
            # one block per changed path, path first; the first change of the whole diff marked first
            for change in s.changes[:PATH_LIMIT]:
                mark = " (first)" if first else ""
                first = False
                lines.append(f"  {change.path}{mark}")
                at = change.at or (None, None)
                lines.append(f"    baseline:  {show_value(change.expected, around=at[0])}")
                lines.append(f"    candidate: {show_value(change.actual, around=at[1])}")
            if len(s.changes) > PATH_LIMIT:
                lines.append(f"  ... and {len(s.changes) - PATH_LIMIT} more changed paths in this step")
            if self.show_ignored:
                lines.extend(_ignored_lines(s))
        lines.append("")
        lines.append(
            f"Steps: {len(self.steps)} total ({self.changed} changed, {self.added} added, "
            f"{self.removed} removed, {self.unchanged} unchanged)"
        )
        if self.ignored:
            hint = "" if self.show_ignored else "; --show-ignored lists them, --strict counts them"
            renamed = f", {self.renamed} id(s) renamed" if self.renamed else ""
            lines.append(
                f"Ignored: {self.ignored} difference(s) as noise (provider-generated values, timing, "
                f"new SDK fields{renamed}){hint}"
            )
        if self.not_compared:
            lines.append(
                f"Not compared: {self.not_compared} call(s) on their own clock (a background thread's "
                "extra rounds, calls a run ended during); --strict compares them"
            )
        lines.append("")
        lines.append("Result: BEHAVIOR EQUIVALENT" if self.equivalent else "Result: BEHAVIOR CHANGED")
        return lines

    def __str__(self) -> str:
        return "\n".join(self._lines())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython text rendering: the ``str()`` report."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        """Notebook rendering: the counts and the first steps, the side-by-side view a click away."""
        from stepfork.analysis.view import diff_html
        from stepfork.analysis.view.notebook import FIRST_ROWS, with_full_view

        rows = []
        for s in self.steps[:FIRST_ROWS]:
            detail = "; ".join(str(c) for c in s.changes)
            if s.kind in ("added", "removed"):
                step = s.candidate if s.kind == "added" else s.baseline
                detail = show_value(step.payload if step else None)
            rows.append([s.kind, s.step_type, s.label, detail])
        result = "BEHAVIOR EQUIVALENT" if self.equivalent else "BEHAVIOR CHANGED"
        table = html_table(
            f"Result: {result} ({self.changed} changed, {self.added} added, {self.removed} removed, "
            f"{self.unchanged} unchanged)",
            ["kind", "type", "label", "changes"],
            rows,
        ) + pre(f"{self.baseline.path} -> {self.candidate.path}")
        more = len(self.steps) - FIRST_ROWS
        return with_full_view(table + (pre(f"... {more} more steps") if more > 0 else ""), diff_html(self))


def _ignored_lines(s: StepDiff) -> list[str]:
    return [
        f"  ignored: {c.path}: {show_value(c.expected)} -> {show_value(c.actual)} ({c.noise})"
        for c in s.ignored
    ]


def _where(s: StepDiff) -> str:
    if s.baseline is not None and s.candidate is not None:
        if s.baseline.step == s.candidate.step:
            return f" (step {s.baseline.step})"
        return f" (step {s.baseline.step} -> {s.candidate.step})"
    step = s.baseline or s.candidate
    return f" (step {step.step})" if step is not None else ""
