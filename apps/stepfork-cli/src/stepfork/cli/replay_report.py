"""What a replay shows on the terminal: the report (text or ``--json``), the one line of an error raised
before the replay runs, the line of an agent's ``os._exit``, and manual mode's approval prompt (spec
"replay").

One module for both forms of ``stepfork replay``: the ``--entrypoint`` command
(:mod:`stepfork.cli.commands.replay`) and a program replayed in its own interpreter
(:mod:`stepfork.cli.scriptrun`), so that neither imports the other.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import typer

from stepfork.replay.network_notes import network_line  # the Network sentence of every report


def os_exit_line(status: int) -> str:
    """The line of a replay whose agent called ``os._exit(status)``: no verdict, exit 2."""
    return (
        f"The agent called os._exit({status}) during the replay, which ended the process before any "
        "verdict: the replay could not execute (exit 2)."
    )


def fail_for_error(exc: Exception, path: Path) -> NoReturn:
    """Print the one line (or the spec's two lines) for an error raised before a replay runs and exit 2;
    the rule of both forms (``--entrypoint`` and ``-- python SCRIPT``). Anything else is re-raised."""
    from stepfork.cli.output import fail, sanitize_text, shown
    from stepfork.replay.entrypoint import EntrypointCallError, EntrypointError
    from stepfork.replay.raise_as import RaiseAsClassError
    from stepfork.trace.errors import TraceError, TraceIntegrityError

    if isinstance(exc, EntrypointCallError):  # resolved, but the recorded run input cannot call it
        fail(sanitize_text(str(exc)), 2, error="entrypoint_uncallable")
    if isinstance(exc, RaiseAsClassError):
        detail = entrypoint_detail(exc, "class")
        fail(f"Unable to resolve --raise-as class for {exc.key}.\n{detail}", 2, error="raise_as_unresolvable")
    if isinstance(exc, EntrypointError):
        fail(f"Unable to resolve entrypoint.\n{entrypoint_detail(exc)}", 2, error="entrypoint_unresolvable")
    if isinstance(exc, TraceIntegrityError):  # the codes of inspect, diff, fork and minimize
        fail(sanitize_text(str(exc)), 2, error="integrity_mismatch")
    if isinstance(exc, TraceError):
        why = sanitize_text(str(exc), keep=(path, shown(path)))
        fail(f"Unreadable trace {shown(path)}: {why}", 2, error="unreadable_trace")
    if isinstance(exc, ValueError):
        fail(sanitize_text(str(exc)), 2)
    raise exc


def emit_report_json(outcome: Any) -> None:
    """Print ``outcome.to_dict()`` (the replay report) on stdout as one JSON document, redacted and with
    terminal controls escaped, as the other commands' ``--json``."""
    import json

    from stepfork.cli.output import escape_json_controls, sanitize

    text = json.dumps(sanitize(outcome.to_dict()), indent=2, ensure_ascii=False)
    sys.stdout.write(escape_json_controls(text) + "\n")


def render_outcome(outcome: Any, path: Path, entrypoint: str, *, verbose: bool = False) -> None:
    """Print the replay report of ``outcome`` (the spec's "replay" output) for ``entrypoint``; ``verbose``
    as ``--verbose``."""
    commands = getattr(outcome, "allowed_commands", ())
    network = network_line(outcome.network, outcome.allowed_hosts, outcome.seal_gaps, commands)
    render(outcome, header_lines(path, entrypoint, outcome.mode, None, network), verbose=verbose)


def header_lines(
    path: Path,
    entrypoint: str,
    mode: str,
    classes: dict[str, str] | None,
    network: str | None = None,
    agent: str | None = None,
) -> list[str]:
    """The report's header lines in the spec's order ("replay" output: Trace, Agent, Entrypoint, Mode):
    ``Stepfork Replay``, then Trace, Agent when ``agent`` is given (else :func:`render` adds it from the
    outcome), Entrypoint, Mode, the ``network`` line when given and ``Raise as`` when ``classes`` maps
    any; values sanitized for the terminal."""
    from stepfork.cli.options import describe_raise_as
    from stepfork.cli.output import sanitize_text, shown

    lines = [
        "Stepfork Replay",
        "",
        f"{'Trace':<14}{shown(path)}",
        *([f"{'Agent':<14}{sanitize_text(agent)}"] if agent is not None else []),
        f"{'Entrypoint':<14}{entrypoint}",
        f"{'Mode':<14}{mode}",
    ]
    if network is not None:
        lines.append(f"{'Network':<14}{sanitize_text(network)}")
    if classes:
        lines.append(f"{'Raise as':<14}{describe_raise_as(classes)}")
    return lines


def entrypoint_detail(exc: Any, what: str = "entrypoint") -> str:
    """The spec's detail line for each EntrypointError code (spec "replay", Common errors); with
    ``what="class"``, the same lines for a ``--raise-as`` class (a RaiseAsClassError, whose ``detail`` is
    the resolver's message without the ``raise_as['TYPE']:`` prefix)."""
    form = "MODULE:CLASS" if what == "class" else "MODULE:FUNCTION"
    if exc.code == "bad_form":
        return f"invalid {what} {exc.spec!r}; expected the form {form}"
    if exc.code == "not_callable":
        return f"{what} {exc.spec!r} is not callable"
    return str(getattr(exc, "detail", exc))


def ask(call: Any) -> bool:
    """Manual-mode approval: show the call (redacted input) and ask on the terminal."""
    from stepfork.cli.output import compact, sanitize_text

    label = (
        call.name
        if call.kind == "tool"
        else (f"{call.provider}/{call.model}" if call.provider else call.model)
    )
    label = sanitize_text(str(label))  # a name from the agent: control characters escaped, as in reports
    shown = compact(call.input)
    if len(shown) > 200:
        shown = shown[:199] + "…"
    from stepfork.cli.prompt import confirm

    try:
        return confirm(f"Approve {call.kind} {label} with input {shown}?")
    except typer.Abort as exc:
        # click (confirm's fallback off the main thread or POSIX) turns Ctrl-C at a prompt into Abort
        # ("Aborted!", exit 1): give it back its meaning, so the CLI prints "Interrupted." and exits 130
        # as for a Ctrl-C anywhere else
        if isinstance(exc.__context__, KeyboardInterrupt):
            raise KeyboardInterrupt from None
        raise


def render(outcome: Any, header: list[str], *, verbose: bool) -> None:
    """Print the report: ``header`` (empty when it was printed before the run; its Agent line added after
    Trace from the outcome when it has none), the calls, the three verdicts; verdict words coloured on a
    terminal (stepfork.cli.colour)."""
    from stepfork.cli.colour import echo
    from stepfork.cli.output import compact, sanitize_text
    from stepfork.replay.diagnostics import difference_lines, display_path

    gaps = getattr(outcome, "seal_gaps", ())
    if gaps:  # the header, printed before the run, said "sealed": say what the seal did not cover
        commands = getattr(outcome, "allowed_commands", ())
        network = network_line(outcome.network, outcome.allowed_hosts, gaps, commands)
        line = f"{'Network':<14}{sanitize_text(network)}"
        header = [line if item.startswith("Network ") else item for item in header] or [line]
    header = list(header)
    if header and not any(item.startswith("Agent ") for item in header):  # after Trace (spec's order)
        trace_line = next((i for i, item in enumerate(header) if item.startswith("Trace ")), len(header) - 1)
        header.insert(trace_line + 1, f"{'Agent':<14}{sanitize_text(outcome.agent_name)}")
    lines = [*header, "", "Dependency Calls"]
    requests = _request_lines(outcome, verbose=verbose)
    if not outcome.calls and not requests:
        lines.append("  (none reached)")
    for call in outcome.calls:
        extra = ", recorded error" if call.status is not None and str(call.status) == "error" else ""
        if getattr(call, "match", "full") == "partial":  # imported call holding part of its request
            extra += ", matched on partial input"
        lines.append(f"  {call.index + 1}. {call.kind} {sanitize_text(call.label)} ({call.action}{extra})")
    lines.extend(requests)
    matching = outcome.matching
    lines.append(f"Dependency matching: {matching.status}")
    if matching.message:
        lines.append(f"  {sanitize_text(matching.message)}")
    if matching.diagnostic is not None and matching.status in ("DIVERGED", "INCOMPLETE"):
        # the same detail lines as str() of the ReplayMismatchError in pytest (every differing path,
        # both calls, fingerprints, a hint)
        details = matching.diagnostic.explain(verbose=verbose).splitlines()
        lines.extend("  " + sanitize_text(line) for line in details)
    for item in outcome.ignored:  # issue 12: an ignored difference is reported, never silent
        lines.append(
            f"  ignored: call #{item.index + 1} {sanitize_text(item.label)} (step {item.step}) "
            f"differs at {sanitize_text(item.path)} ({item.reason})"
        )
    lines.append("")
    execution = outcome.execution
    if execution.status == "RAISED":
        lines.append(f"Execution: RAISED {execution.error_type}: {execution.error_message}")
    else:
        lines.append(f"Execution: {execution.status}")
    behavior = outcome.behavior
    lines.append(f"Recorded behavior: {behavior.status}")
    if behavior.status not in ("MATCHED", "REPRODUCED FAILURE"):
        lines.append(f"  {sanitize_text(behavior.message)}")
    if behavior.difference_count > 1:
        block = difference_lines(behavior.differences, behavior.difference_count, display=True)
        lines.extend("  " + sanitize_text(line) for line in block)
    if behavior.ignored_count:  # issue 28: what the comparison accepted as noise is said, never silent
        shown = ", ".join(f"{display_path(d.path)} ({d.noise})" for d in behavior.ignored[:3])
        more = f", and {behavior.ignored_count - 3} more" if behavior.ignored_count > 3 else ""
        lines.append(f"  ignored as noise: {sanitize_text(shown)}{more}")
    if outcome.raise_as_suggestion:
        lines.append(
            "  hint: the replayed failure is raised as Stepfork's RecordedDependencyError, which the "
            f"agent's except clauses do not catch; map it to the agent's class: {outcome.raise_as_suggestion}"
        )
    lines.append(f"Status: {_status(outcome)}")
    if execution.status == "COMPLETED":
        # shown whenever the entrypoint completed, also when the replay diverged (NOT COMPARED)
        if outcome.result_error is None:
            lines.append(f"Final result: {compact(outcome.result)}")
        elif behavior.status != "UNVERIFIABLE":  # UNVERIFIABLE's own line already says why
            why = sanitize_text(outcome.result_error)
            lines.append(f"Final result: not shown, it has no JSON form: {why}")
    echo("\n".join(lines))


def _request_lines(outcome: Any, *, verbose: bool) -> list[str]:
    """The ``http`` calls (issue 29), listed under ``Dependency Calls`` after the calls in the agent's order:
    ``  HTTP requests: 3 served (of 3 recorded): 2 by the agent, 1 by a background thread``, which context
    made each being the recorder's rule (docs/replay.md, "Requests outside the agent's order"); with
    ``--verbose`` one line each; nothing when the recording holds none and none came."""
    from stepfork.cli.output import sanitize_text

    requests = getattr(outcome, "requests", ())
    recorded = getattr(outcome, "recorded_requests", 0)
    if not requests and not recorded:
        return []
    served = [item for item in requests if item.action == "substituted"]
    repeated = sum(1 for item in requests if item.action == "repeated")
    live = sum(1 for item in requests if item.action == "executed")
    text = f"  HTTP requests: {len(served)} served (of {recorded} recorded)"
    parts = []
    mine = sum(1 for item in served if not item.background)
    if mine:
        parts.append(f"{mine} by the agent")
    if len(served) - mine:
        others = len(served) - mine
        parts.append(f"{others} by {'a background thread' if others == 1 else 'background threads'}")
    if repeated:  # a background poller's extra rounds, answered with the last recorded response
        parts.append(f"{repeated} {'repeat' if repeated == 1 else 'repeats'}")
    if live:
        parts.append(f"{live} sent live")
    if parts:
        text += ": " + ", ".join(parts)
    lines = [text]
    answered = sum(1 for item in requests if item.action == "acknowledged")
    refused = sum(1 for item in requests if item.action == "refused")
    if answered or refused:  # issue 30: telemetry is never sent and never a divergence
        shown = [f"{answered} answered 204 No Content"] if answered else []
        shown += [f"{refused} connection{'s' if refused != 1 else ''} refused"] if refused else []
        exports = "export" if answered + refused == 1 else "exports"
        lines.append(f"  Telemetry: {answered + refused} {exports} not sent ({', '.join(shown)})")
    if verbose:
        for item in requests:
            where = {"acknowledged": "not sent", "refused": "refused", "repeated": "repeat"}.get(item.action)
            where = f"repeat of step {item.step}" if item.action == "repeated" else where
            where = where or (f"step {item.step}" if item.step is not None else "sent live")
            who = "background thread" if item.background else "the agent"
            lines.append(f"    - {sanitize_text(item.label)} ({where}, {who})")
    return lines


def _status(outcome: Any) -> str:
    if outcome.exit_code == 0:
        return "REPRODUCED FAILURE" if outcome.behavior.status == "REPRODUCED FAILURE" else "COMPLETED"
    return "DIVERGED" if outcome.exit_code == 1 else "REJECTED"
