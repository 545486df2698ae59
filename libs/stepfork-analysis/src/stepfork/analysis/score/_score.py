"""``score_test``: score an exported test's expectation against a mutant battery (spec, "score"; issue 5).

The test file is read with :mod:`ast` only -- values with :func:`ast.literal_eval`, the bundle path from
the expression shapes ``stepfork export`` writes (analysis/export.py: ``TRACE_PATH = HERE / 'x.sftrace'``
with ``HERE = Path(__file__).resolve().parent``, plus ``Path(__file__).parent / 'x'`` and plain string
literals). Nothing is imported and no entrypoint runs.

The battery: the *claim-drawn* mutant is the recorded run's own output (the last completed ``run_end``,
the same output export embeds without ``--expect-output``); *code-drawn* mutants perturb each leaf of
the expectation by type (strings suffixed, booleans flipped, numbers shifted, nulls filled, list items
dropped, keys removed). The generated test's assertion is canonical equality with the expectation
(``behavior mismatch at '<path>'``) up to noise (stepfork.replay.noise: fresh ids renamed one-to-one),
so a mutant is *killed* when that comparison finds a real difference.
Verdict ``claim_pinned`` (exit 0) when every claim-drawn mutant is killed, else ``run_pinned`` (exit 1).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from stepfork.analysis._shared.render import ABSENT, html_table, pre
from stepfork.analysis.diff import first_difference, values_equal
from stepfork.analysis.score._test_reader import ScoreError, literal, module_constants, read_bundle_path

__all__ = ["Mutant", "ScoreError", "ScoreResult", "build_battery", "score_test"]

_SUFFIX = "-stepfork-mutant"


@dataclass(frozen=True)
class Mutant:
    """One row of the battery.

    Attributes:
        source: ``claim`` (the recorded run's output) or ``code`` (a perturbed expectation).
        label: ``the recorded run`` or ``<leaf path>: <mutation>`` (``carrier: with a suffix``).
        value: the mutant output (JSON).
        killed: True when the expectation rejects it.
        difference: the path of the first difference, None when accepted.
    """

    source: Literal["claim", "code"]
    label: str
    value: Any
    killed: bool
    difference: str | None

    def to_dict(self) -> dict[str, Any]:
        """Return ``{source, label, killed, first_difference}`` (values stay out: they may be large)."""
        return {
            "source": self.source,
            "label": self.label,
            "killed": self.killed,
            "first_difference": self.difference,
        }


@dataclass(frozen=True)
class ScoreResult:
    """The verdict on one expectation; ``str()`` is the spec's human output, ``to_dict()`` the ``--json``.

    Attributes:
        verdict: ``claim_pinned`` or ``run_pinned``.
        test, bundle: the files the battery was derived from.
        battery: claim rows first, then code rows sorted by label.
        live_pins: leaf paths whose expected value the run did not produce.
        reproduced: leaf paths whose expected value equals the recorded run's value there.
    """

    verdict: Literal["claim_pinned", "run_pinned"]
    test: str
    bundle: str
    battery: tuple[Mutant, ...]
    live_pins: tuple[str, ...]
    reproduced: tuple[str, ...]

    @property
    def exit_code(self) -> int:
        """0 for ``claim_pinned``, 1 for ``run_pinned`` (spec, "score", exit codes)."""
        return 0 if self.verdict == "claim_pinned" else 1

    @property
    def killed(self) -> int:
        """How many mutants the expectation rejects."""
        return sum(1 for m in self.battery if m.killed)

    def to_dict(self) -> dict[str, Any]:
        """Return ``{verdict, test, bundle, claim_drawn, code_drawn, killed, battery, pins}``."""
        return {
            "verdict": self.verdict,
            "test": self.test,
            "bundle": self.bundle,
            "claim_drawn": sum(1 for m in self.battery if m.source == "claim"),
            "code_drawn": sum(1 for m in self.battery if m.source == "code"),
            "killed": self.killed,
            "battery": [m.to_dict() for m in self.battery],
            "pins": {"live": list(self.live_pins), "reproduce": list(self.reproduced)},
        }

    def __str__(self) -> str:
        claims = [m for m in self.battery if m.source == "claim"]
        lines = [
            f"battery: {len(claims)} claim-drawn + {len(self.battery) - len(claims)} code-drawn mutant(s), "
            f"derived from {Path(self.test).name} and {Path(self.bundle).name}",
            "  (a mutant is a wrong output: the recorded run (claim-drawn) or the expectation perturbed",
            "  (code-drawn); the test should reject, or kill, every one of them)",
            "",
        ]
        for m in self.battery:
            outcome = (
                f"killed  (first difference at {m.difference})" if m.killed else "accepted  (no difference)"
            )
            lines.append(f"  {m.source:<6}{m.label:<37}{' ' if len(m.label) >= 37 else ''}{outcome}")
        lines.append("")
        if self.verdict == "claim_pinned":
            lines.append(
                f"claim-pinned: rejected {self.killed}/{len(self.battery)} mutants, "
                "including every claim-drawn mutant"
            )
            lines.append(
                "In plain words: the test fails for each wrong output tried, so it checks the behaviour you "
                "expect, not just a replay of the recording."
            )
        else:
            accepted = ", ".join(m.label for m in claims if not m.killed)
            lines.append(
                f"run-pinned: the expectation accepts the claim-drawn mutant(s) {accepted}, "
                "so it encodes the recorded run rather than the claim"
            )
            lines.append(
                "The generated test passes against the code that produced the recording. "
                "Treat the expectation as an unapproved oracle."
            )
            lines.append(
                "In plain words: the test accepts an output like the recorded one, so it would not catch the "
                "bug; give it the corrected output with --expect-output."
            )
        lines.append(
            "(in the pins line, live: fields whose expected value differs from the recorded run; "
            "reproduce: fields that repeat it)"
        )
        lines.append(self.pins_line)
        return "\n".join(lines)

    @property
    def pins_line(self) -> str:
        """``pins: N live (a, b); M leaf(s) reproduce the run (c, d)`` (spec, "score")."""
        live = ", ".join(self.live_pins) or "none"
        same = ", ".join(self.reproduced) or "none"
        return (
            f"pins: {len(self.live_pins)} live ({live}); "
            f"{len(self.reproduced)} leaf(s) reproduce the run ({same})"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        """IPython text rendering: the ``str()`` report."""
        printer.text(str(self))

    def _repr_html_(self) -> str:
        """Notebook rendering: the battery table and the pins line, the view of the scored run a click
        away (when its bundle can still be read)."""
        from stepfork.analysis.view import trace_html
        from stepfork.analysis.view.notebook import with_full_view
        from stepfork.trace.errors import TraceError

        rows = [
            [m.source, m.label, "killed" if m.killed else "accepted", m.difference or ""]
            for m in self.battery
        ]
        table = html_table(
            f"{self.verdict}: {Path(self.test).name}", ["source", "mutant", "outcome", "at"], rows
        ) + pre(self.pins_line)
        try:
            page: str | None = trace_html(self.bundle)
        except (TraceError, OSError):
            page = None
        return with_full_view(table, page)


# --- the battery --------------------------------------------------------------------------------------


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]" if path else f"$[{key}]"
    return f"{path}.{key}" if path else key


def _walk(
    value: Any, path: str = "", steps: tuple[Any, ...] = ()
) -> list[tuple[str, tuple[Any, ...], Any, bool]]:
    """Every node of ``value`` as ``(path, steps, node, is_leaf)``; paths as diff prints them (``a.b[1]``)."""
    out: list[tuple[str, tuple[Any, ...], Any, bool]] = []
    if isinstance(value, dict) and value:
        out.append((path, steps, value, False))
        for k in sorted(value):
            out.extend(_walk(value[k], _join(path, k), (*steps, k)))
    elif isinstance(value, list) and value:
        out.append((path, steps, value, False))
        for i, item in enumerate(value):
            out.extend(_walk(item, _join(path, i), (*steps, i)))
    else:
        out.append((path or "$", steps, value, True))
    return out


def _perturb(value: Any) -> tuple[str, Any]:
    if isinstance(value, bool):
        return "flipped", not value
    if isinstance(value, int):
        return "shifted", value + 1
    if isinstance(value, float):
        return "shifted", value + 1.0
    if isinstance(value, str):
        return "with a suffix", value + _SUFFIX
    if value is None:
        return "filled", _SUFFIX
    if isinstance(value, list):
        return "filled", [_SUFFIX]
    return "filled", {"stepfork_mutant": True}


def _replace(root: Any, steps: tuple[Any, ...], new: Any, *, delete: bool = False) -> Any:
    if not steps:
        return new
    root = copy.deepcopy(root)
    parent = root
    for step in steps[:-1]:
        parent = parent[step]
    if delete:
        del parent[steps[-1]]
    else:
        parent[steps[-1]] = new
    return root


def build_battery(
    expectation: Any, recorded: Any, origins: Any = None, *, ignore: Iterable[str] = ()
) -> list[Mutant]:
    """Return the battery for ``expectation`` (JSON) given the recorded run output ``recorded`` (JSON).

    One claim-drawn row (``recorded``), then code-drawn rows: each leaf perturbed by type, each list item
    dropped and each key removed, sorted by label. Every row is judged by :func:`first_difference` (as an
    exported test judges a reviewed expectation: exactly), but for the output paths in ``ignore``
    (IGNORE_OUTPUT); given the recording's ``origins`` (:class:`stepfork.replay.noise.Origins`), up to
    noise instead (a fresh id suffixed is only renamed, so that mutant survives).
    """
    rows: list[tuple[Literal["claim", "code"], str, Any]] = [("claim", "the recorded run", recorded)]
    code: list[tuple[Literal["claim", "code"], str, Any]] = []
    for path, steps, node, is_leaf in _walk(expectation):
        if is_leaf:
            mutation, new = _perturb(node)
            code.append(("code", f"{path}: {mutation}", _replace(expectation, steps, new)))
            continue
        keys: list[Any] = sorted(node) if isinstance(node, dict) else list(range(len(node)))
        for key in keys:
            what = "dropped" if isinstance(key, int) else "removed"
            code.append(
                (
                    "code",
                    f"{_join(path, key)}: {what}",
                    _replace(expectation, (*steps, key), None, delete=True),
                )
            )
    code.sort(key=lambda row: row[1])
    battery = []
    paths = tuple(ignore)
    for source, label, value in rows + code:
        diff = _first_difference(expectation, value, origins, paths)
        battery.append(Mutant(source, label, value, diff is not None, diff))
    return battery


def _first_difference(expectation: Any, value: Any, origins: Any, ignore: tuple[str, ...] = ()) -> str | None:
    if origins is None and not ignore:
        found = first_difference(expectation, value)
        return found[0] if found else None
    from stepfork.replay.diagnostics import display_path
    from stepfork.replay.noise.output import output_differences

    first = output_differences(
        expectation, value, origins, exact=origins is None, ignore=ignore, limit=1
    ).first
    return display_path(first.path) if first is not None else None


def _recorded_output(trace: Any) -> tuple[bool, Any]:
    for event in reversed(list(trace.events)):
        if (
            str(getattr(event.type, "value", event.type)) == "run_end"
            and str(getattr(event.run_status, "value", event.run_status)) == "completed"
        ):
            return True, event.output
    return False, None


def score_test(
    test: str | os.PathLike[str],
    *,
    expect_output: str | os.PathLike[str] | None = None,
    bundle: str | os.PathLike[str] | None = None,
) -> ScoreResult:
    """Score the expectation of the exported test ``test`` without importing or running it.

    Args:
        test: the pytest file ``stepfork export`` wrote.
        expect_output: a JSON file whose value is scored instead of the test's ``EXPECTATION``.
        bundle: the bundle to read the recorded run from instead of the test's ``TRACE_PATH``.

    Returns:
        a :class:`ScoreResult` (verdict, battery, pins).

    Raises:
        ScoreError: every "cannot answer" case of the spec (exit 2); see :attr:`ScoreError.code`.
    """
    from stepfork.analysis._shared.expectation import read_expect_output
    from stepfork.trace import Trace, TraceStorageError, redact_json

    test_path = Path(test)
    try:
        source = test_path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScoreError(
            f"cannot read test {test_path}: {exc}", code="unreadable_test", path=str(test_path)
        ) from None
    consts = module_constants(source, str(test_path))
    if expect_output is not None:
        try:
            expectation = redact_json(read_expect_output(expect_output)).value
        except ValueError as exc:
            raise ScoreError(str(exc), code="invalid_expectation", path=str(expect_output)) from None
    else:
        has = literal(consts, "HAS_EXPECTATION", str(test_path), default=ABSENT)
        expectation = literal(consts, "EXPECTATION", str(test_path), default=ABSENT)
        # EXPECTATION_SOURCE ("file" | "recorded" | "none") says where export took the expectation from;
        # "recorded" means the test asserts the recorded run: there is no claim to score.
        origin = literal(consts, "EXPECTATION_SOURCE", str(test_path), default=ABSENT)
        if (
            has is False
            or expectation is ABSENT
            or origin in ("recorded", "none")
            or (has is ABSENT and expectation is None)
        ):
            raise ScoreError(
                "no expectation to score: the test asserts the recorded run without an --expect-output, "
                "so there "
                "is no claim for a mutant to separate from it",
                code="no_expectation",
                path=str(test_path),
            )
    bundle_path = Path(bundle) if bundle is not None else read_bundle_path(consts, test_path)
    if not bundle_path.exists():
        hint = "" if bundle is not None else " Copy it beside the test, or pass --bundle."
        raise ScoreError(
            f"trace bundle not found: {bundle_path}.{hint}", code="bundle_not_found", path=str(bundle_path)
        )
    try:
        trace = Trace.load(bundle_path)
    except TraceStorageError as exc:
        raise ScoreError(
            f"cannot read the bundle {bundle_path}: {exc}", code="unreadable_bundle", path=str(bundle_path)
        ) from None
    found, recorded = _recorded_output(trace)
    if not found:
        raise ScoreError(
            f"no recorded run to derive a claim-drawn mutant from: {bundle_path} has no completed run output",
            code="no_recorded_run",
            path=str(bundle_path),
        )
    recorded = redact_json(recorded).value
    # the exported test compares a reviewed expectation exactly, but for IGNORE_OUTPUT (docs/replay.md)
    ignored = literal(consts, "IGNORE_OUTPUT", str(test_path), default=None) or ()
    battery = build_battery(expectation, recorded, ignore=ignored if isinstance(ignored, list) else ())
    live: list[str] = []
    same: list[str] = []
    for path, steps, leaf, is_leaf in _walk(expectation):
        if not is_leaf:
            continue
        try:
            at_run = _at(recorded, steps)
        except (KeyError, IndexError, TypeError):
            at_run = ABSENT
        (same if values_equal(leaf, at_run) else live).append(path)
    verdict: Literal["claim_pinned", "run_pinned"] = (
        "claim_pinned" if all(m.killed for m in battery if m.source == "claim") else "run_pinned"
    )
    return ScoreResult(verdict, str(test_path), str(bundle_path), tuple(battery), tuple(live), tuple(same))


def _at(value: Any, steps: tuple[Any, ...]) -> Any:
    for step in steps:
        if isinstance(step, int) and not isinstance(value, list):
            raise TypeError(step)
        if isinstance(step, str) and not isinstance(value, dict):
            raise TypeError(step)
        value = value[step]
    return value
