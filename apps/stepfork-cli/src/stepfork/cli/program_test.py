"""The body of a program's regression test: ``stepfork export BUNDLE -- python agent.py ARGS`` (issue 11;
expectations since issue 29).

:func:`run_script_regression_case` replays the program as ``stepfork replay BUNDLE -- python agent.py ARGS``
does (``python -m stepfork.cli.scriptrun replay``, with the test's own interpreter) and passes when that
replay passes and, when given, the program's output equals the reviewed expectation and its calls keep the
reviewed trajectory. A program returns no value: its *output* is what it writes to standard output, read as
one JSON value when it parses as JSON, else as its text (without the final newline), redacted as every
output Stepfork compares (:func:`program_output`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["program_output", "run_script_regression_case"]


def program_output(text: str) -> Any:
    """The output of a program that printed ``text``: its JSON value when the whole text (surrounding
    whitespace left out) is one JSON value, else the text without its final newline; redacted."""
    from stepfork.trace.canonical import loads_json
    from stepfork.trace.errors import TraceError
    from stepfork.trace.redaction import redact_json

    try:
        value: Any = loads_json(text.strip())
    except (TraceError, ValueError):  # not JSON (invalid_json): the text itself
        value = text.removesuffix("\n")
    return redact_json(value).value


class _Replayed:
    """The calls of a passed replay, as the trajectory assertions read a session (``executed_calls``)."""

    divergence = None  # the replay passed: it did not diverge and consumed every call

    def __init__(self, calls: Sequence[Mapping[str, Any]]) -> None:
        from types import SimpleNamespace

        self.executed_calls = [SimpleNamespace(**call) for call in calls]

    def verify_complete(self) -> None:
        """Nothing: the replay exited 0, so every recorded call was consumed."""


def run_script_regression_case(
    *,
    trace_path: str | os.PathLike[str],
    command: list[str],
    cwd: str | os.PathLike[str] | None = None,
    mode: str = "frozen",
    allow_live_tools: list[str] | None = None,
    network: str | None = None,
    allow_hosts: list[str] | None = None,
    allow_commands: list[str] | None = None,
    ordering: str = "auto",
    ignore: dict[str, list[str]] | None = None,
    expectation: Any = None,
    has_expectation: bool = False,
    trajectory_expectation: Mapping[str, Any] | None = None,
    ignore_output: list[str] | None = None,
) -> Any:
    """Replay the program in ``command`` against ``trace_path`` and check it like a reviewed regression test.

    Args:
        trace_path: the bundle; replaced by the one ``stepfork run TEST --bundle PATH`` names
            (:data:`stepfork.replay.regression.BUNDLE_ENV`).
        command: ``["python", SCRIPT, ARGS...]`` or ``["python", "-m", MODULE, ARGS...]`` as typed; the
            program runs with this interpreter (``sys.executable``: the one running the test, where
            Stepfork is installed), whatever the first item names.
        cwd: the directory the program runs in (the export's working directory); None: the current one.
        mode, allow_live_tools, network, allow_hosts, allow_commands, ordering, ignore: as ``stepfork
            replay``'s options (``network="open"`` is ``--allow-network``).
        expectation, has_expectation: the reviewed output (JSON), compared exactly (it is the user's) with
            :func:`program_output` of what the program printed when ``has_expectation`` is True.
        ignore_output: JSON paths of that output not compared (``$.generated_at``; ``export --ignore``).
        trajectory_expectation: a reviewed trajectory shape (``stepfork.replay.assertions``), checked
            against the calls the replay served.

    Returns:
        the program's output (:func:`program_output`).

    Raises:
        AssertionError: the replay did not pass (divergence, unexpected failure; the message holds the
            replay's exit status and report), the output differs (``behavior mismatch at '<path>': ...``,
            as an entrypoint test says it) or the trajectory is broken; ``stepfork: program could not run:
            ...`` when the replay exited 2 (a missing script, ``os._exit``, a rejected bundle), which
            ``stepfork run`` reports as could_not_execute.
        ValueError: a bad trajectory expectation shape (before anything runs).
    """
    import json
    import subprocess
    import tempfile

    from stepfork.cli.commands.record import python_target
    from stepfork.replay.assertions import assert_trajectory, validate_trajectory_expectation
    from stepfork.replay.regression import PROGRAM_NOT_RUN, bundle_source

    trace_path = str(bundle_source(trace_path))  # `stepfork run TEST --bundle PATH` names another bundle
    if trajectory_expectation is not None:
        validate_trajectory_expectation(trajectory_expectation)
    found = python_target(list(command))
    if found is None:
        raise AssertionError(f"COMMAND is not a Python program (python SCRIPT ARGS...): {command!r}")
    shown = " ".join(command)
    with tempfile.TemporaryDirectory(prefix="stepfork-program-") as scratch:
        printed_file, outcome_file = Path(scratch) / "stdout.txt", Path(scratch) / "outcome.json"
        options = {
            "mode": mode,
            "network": network or "",
            "allow_hosts": list(allow_hosts or []),
            "allow_commands": list(allow_commands or []),
            "allow_live_tools": list(allow_live_tools or []),
            "ordering": ordering,
            "ignore": ignore or {},
            "verbose": False,
            "program_output": str(printed_file),
            "outcome_file": str(outcome_file),
        }
        args = [sys.executable, "-m", "stepfork.cli.scriptrun", "replay", str(trace_path)]
        args += [json.dumps(options), "--", *found[1]]
        done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
        printed = printed_file.read_text(encoding="utf-8", errors="replace") if printed_file.exists() else ""
        calls = json.loads(outcome_file.read_text(encoding="utf-8"))["calls"] if outcome_file.exists() else []
    sys.stdout.write(printed + done.stdout)  # pytest shows them with the failure
    sys.stderr.write(done.stderr)
    if done.returncode == 2:
        last = (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or ["exit 2"])[-1]
        raise AssertionError(f"{PROGRAM_NOT_RUN}the replay of `{shown}` exited 2: {last}")
    if done.returncode != 0:
        raise AssertionError(
            f"Stepfork replay of `{shown}` failed (exit {done.returncode}):\n{done.stdout}{done.stderr}"
        )
    if trajectory_expectation is not None:
        assert_trajectory(_Replayed(calls), trajectory_expectation)
    actual = program_output(printed)
    if has_expectation:
        from stepfork.replay.regression import assert_expected_output
        from stepfork.trace import load_trace

        # the user's expectation: exactly, but for the paths the user ignored (docs/replay.md)
        trace = load_trace(Path(trace_path))
        assert_expected_output(expectation, actual, trace, exact=True, ignore=ignore_output or ())
    return actual
