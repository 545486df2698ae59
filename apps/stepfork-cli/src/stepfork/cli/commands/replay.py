"""``stepfork replay PATH --entrypoint M:F [--mode] [--allow-live-tool]... [--raise-as]... [--verbose]``
(spec "replay").

The library (:func:`stepfork.replay.outcome.replay_entrypoint`) runs the replay and computes the report;
this module renders it. Exit 0 no divergence (or a reproduced recorded failure), 1 divergence, 2 invalid
mode, unreadable trace, unresolvable entrypoint or ``--raise-as`` class (one that is not an ``Exception``
subclass included), 130 Ctrl-C (``Interrupted.``, printed by :mod:`stepfork.cli.app`). In ``manual`` mode
each call is put to the user on the terminal; with a standard input that is not a terminal the command
refuses before anything runs. ``--raise-as`` classes are imported like the entrypoint (named by the user,
never by the bundle); the report judges what the entrypoint then does by the usual rules
(docs/decisions.md).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from stepfork.cli.guide import MODES
from stepfork.cli.htmlout import HTML_HELP
from stepfork.cli.options import (
    ALLOW_HOST_HELP,
    ALLOW_NETWORK_HELP,
    RAISE_AS_HELP,
    ignore_option,
    ordering_option,
)

CLI_MODES = MODES["replay"]


def replay(
    path: Annotated[Path, typer.Argument(help="Path to a .sftrace directory bundle.")],
    command: Annotated[
        list[str] | None,
        typer.Argument(
            help="After --: the Python program to replay (python SCRIPT ARGS...), instead of --entrypoint."
        ),
    ] = None,
    entrypoint: Annotated[
        str | None,
        typer.Option(
            "--entrypoint", "-e", help="Trusted local MODULE:FUNCTION to execute under replay. Required."
        ),
    ] = None,
    mode: Annotated[str, typer.Option("--mode", "-m", help="Replay mode (any letter case).")] = "frozen",
    allow_live_tool: Annotated[
        list[str] | None,
        typer.Option("--allow-live-tool", help="Authorize a named tool to execute in live mode. Repeatable."),
    ] = None,
    raise_as: Annotated[
        list[str] | None,
        typer.Option("--raise-as", metavar="TYPE=MODULE:CLASS", help=RAISE_AS_HELP),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Show full diagnostic fingerprints instead of abbreviated ones.")
    ] = False,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help=HTML_HELP)] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace the --html file if it exists.")
    ] = False,
    allow_network: Annotated[bool, typer.Option("--allow-network", help=ALLOW_NETWORK_HELP)] = False,
    allow_host: Annotated[
        list[str] | None, typer.Option("--allow-host", metavar="HOST[:PORT]", help=ALLOW_HOST_HELP)
    ] = None,
    ordering: Annotated[str, ordering_option()] = "auto",
    ignore: Annotated[list[str] | None, ignore_option()] = None,
    as_json: Annotated[
        bool,
        typer.Option(
            "--json",
            help="Print the replay report as JSON (ReplayOutcome.to_dict()); what the agent prints goes to "
            "stderr.",
        ),
    ] = False,
) -> None:
    """Execute a trusted entrypoint with dependencies replayed from a trace."""
    from stepfork.cli import htmlout
    from stepfork.cli.guide import parse_mode
    from stepfork.cli.options import parse_allow_hosts, parse_ignore, parse_ordering, parse_raise_as
    from stepfork.cli.output import fail

    mode = parse_mode(mode, "replay")
    allow_host = parse_allow_hosts(allow_host)
    if command and entrypoint:
        fail("give either --entrypoint MODULE:FUNCTION or -- python SCRIPT ARGS, not both", 2)
    if command:
        refused = [name for name, given in (("--html", html), ("--raise-as", raise_as)) if given]
        if refused:
            fail(f"{refused[0]} is not supported with `-- python SCRIPT`; use --entrypoint", 2)
        options = {
            "mode": mode,
            "network": "open" if allow_network else "",
            "allow_hosts": allow_host or [],
            "allow_live_tools": allow_live_tool or [],
            "ordering": parse_ordering(ordering),
            "ignore": parse_ignore(ignore),
            "verbose": verbose,
            "json": as_json,
        }
        _replay_program(path, command, options)
    if not entrypoint:
        fail(
            "Unable to resolve entrypoint.\nmissing --entrypoint MODULE:FUNCTION or -- python SCRIPT ARGS",
            2,
        )
    classes = parse_raise_as(raise_as)
    htmlout.check_target(html, overwrite=overwrite)
    ordering = parse_ordering(ordering)
    ignored_paths = parse_ignore(ignore)
    approve = None
    if mode == "manual":
        if not sys.stdin.isatty():
            fail("Manual replay mode asks for approval on a terminal; standard input is not a terminal.", 2)
        approve = _ask

    from stepfork.cli.agent_exit import os_exit_reported
    from stepfork.cli.output import agent_output_to_stderr
    from stepfork.replay.outcome import replay_entrypoint

    # On a terminal the header shows before the entrypoint runs, and a spinner while it runs (stderr);
    # piped, the report prints in one piece at the end (and nothing on stdout when the command refuses).
    header = _header(path, entrypoint, mode, classes, _network_text(mode, allow_network, allow_host))
    interactive = sys.stdout.isatty() and not as_json
    if interactive:
        typer.echo("\n".join(header))
    try:
        with (
            _raise_as_warnings_as_lines(),
            _spinner(enabled=mode != "manual"),
            os_exit_reported(_os_exit_line, 2),
            agent_output_to_stderr(as_json),  # the agent's prints never into the JSON document
        ):
            outcome = replay_entrypoint(
                path,
                entrypoint,
                mode=mode,
                allow_live_tools=allow_live_tool or None,
                approve=approve,
                raise_as=classes,
                network="open" if allow_network else None,
                allow_hosts=allow_host or None,
                ordering=ordering,
                ignore=ignored_paths,
            )
    except Exception as exc:
        fail_for_error(exc, path)
    from stepfork.cli import app
    from stepfork.cli.scriptrun import keep_sealed

    if app.OWN_PROCESS:  # threads the agent left running stay sealed until this process exits
        keep_sealed(outcome)
    for key in outcome.raise_as_unmatched:
        typer.echo(f"Warning: --raise-as {key} matches no recorded failure in this replay.", err=True)
    if as_json:
        emit_report_json(outcome)
    else:
        _render(outcome, [] if interactive else header, verbose=verbose)
    if html is not None:
        from stepfork.analysis.view import write_replay_view

        htmlout.write(html, lambda: write_replay_view(outcome, path, html, overwrite=overwrite))
    raise typer.Exit(outcome.exit_code)


def _os_exit_line(status: int) -> str:
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
        detail = _entrypoint_detail(exc, "class")
        fail(f"Unable to resolve --raise-as class for {exc.key}.\n{detail}", 2, error="raise_as_unresolvable")
    if isinstance(exc, EntrypointError):
        fail(f"Unable to resolve entrypoint.\n{_entrypoint_detail(exc)}", 2, error="entrypoint_unresolvable")
    if isinstance(exc, TraceIntegrityError):  # the codes of inspect, diff, fork and minimize
        fail(sanitize_text(str(exc)), 2, error="integrity_mismatch")
    if isinstance(exc, TraceError):
        why = sanitize_text(str(exc), keep=(path, shown(path)))
        fail(f"Unreadable trace {shown(path)}: {why}", 2, error="unreadable_trace")
    if isinstance(exc, ValueError):
        fail(sanitize_text(str(exc)), 2)
    raise exc


def _replay_program(path: Path, command: list[str], options: dict[str, Any]) -> NoReturn:
    """``stepfork replay BUNDLE -- python agent.py ARGS``: the program runs in its interpreter under the
    replay (:mod:`stepfork.cli.scriptrun`, given ``options`` as JSON), which prints the report; exits
    with its status. The bundle (integrity first, as every replay), the script and manual mode's
    terminal are checked here, before the program starts."""
    import json

    from stepfork.cli.commands.record import check_script, python_target, run_child
    from stepfork.cli.output import fail
    from stepfork.trace import load_verified_trace

    found = python_target(command)
    if found is None:
        from stepfork.cli.guide import not_python_problem

        fail(
            "stepfork replay BUNDLE -- python SCRIPT ARGS... replays a Python program: "
            f"{not_python_problem(command)}",
            2,
        )
    interpreter, target = found
    if options["mode"] == "manual" and not sys.stdin.isatty():
        fail("Manual replay mode asks for approval on a terminal; standard input is not a terminal.", 2)
    try:
        load_verified_trace(path)
    except Exception as exc:
        fail_for_error(exc, path)
    check_script(target)
    raise typer.Exit(run_child(interpreter, ["replay", str(path), json.dumps(options)], target))


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
    network = _network_line(outcome.network, outcome.allowed_hosts)
    _render(outcome, _header(path, entrypoint, outcome.mode, None, network), verbose=verbose)


def _network_text(mode: str, allow_network: bool, allow_hosts: list[str]) -> str:
    """The header's Network line before the run: the policy the session will take (the mode's default
    unless ``--allow-network``) and the hosts it lets through (already normalized)."""
    from stepfork.replay.network import network_for

    return _network_line(network_for(mode, "open" if allow_network else None), allow_hosts)


def _network_line(policy: str, allowed: Any) -> str:
    """``sealed``, ``sealed (allowed: 127.0.0.1:8000, db.internal)`` or ``open (not sealed: ...)``."""
    if policy != "sealed":
        return "open (not sealed: uninstrumented connections reach the network)"
    return f"sealed (allowed: {', '.join(allowed)})" if allowed else "sealed"


def _header(
    path: Path, entrypoint: str, mode: str, classes: dict[str, str] | None, network: str | None = None
) -> list[str]:
    from stepfork.cli.options import describe_raise_as
    from stepfork.cli.output import sanitize_text, shown

    lines = [
        "Stepfork Replay",
        "",
        f"{'Trace':<14}{shown(path)}",
        f"{'Entrypoint':<14}{entrypoint}",
        f"{'Mode':<14}{mode}",
    ]
    if network is not None:
        lines.append(f"{'Network':<14}{sanitize_text(network)}")
    if classes:
        lines.append(f"{'Raise as':<14}{describe_raise_as(classes)}")
    return lines


@contextmanager
def _spinner(*, enabled: bool) -> Iterator[None]:
    """A rich spinner on stderr while the entrypoint runs, when stderr is a terminal (never in manual
    mode, whose prompts share the terminal)."""
    if not enabled or not sys.stderr.isatty():
        yield
        return
    from rich.console import Console

    with Console(stderr=True).status("Replaying..."):
        yield


def _entrypoint_detail(exc: Any, what: str = "entrypoint") -> str:
    """The spec's detail line for each EntrypointError code (spec "replay", Common errors); with
    ``what="class"``, the same lines for a ``--raise-as`` class (a RaiseAsClassError, whose ``detail`` is
    the resolver's message without the ``raise_as['TYPE']:`` prefix)."""
    form = "MODULE:CLASS" if what == "class" else "MODULE:FUNCTION"
    if exc.code == "bad_form":
        return f"invalid {what} {exc.spec!r}; expected the form {form}"
    if exc.code == "not_callable":
        return f"{what} {exc.spec!r} is not callable"
    return str(getattr(exc, "detail", exc))


@contextmanager
def _raise_as_warnings_as_lines() -> Iterator[None]:
    """Print each RaiseAsWarning (a ``--raise-as`` class that could not be applied as asked) as one
    ``Warning:`` line on stderr instead of Python's two-line warning; other warnings are untouched."""
    import warnings

    from stepfork.cli.output import sanitize_text
    from stepfork.replay.raise_as import RaiseAsWarning

    shown = warnings.showwarning

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, RaiseAsWarning):
            typer.echo(f"Warning: {sanitize_text(str(message))}", err=True)
        else:
            shown(message, category, *args, **kwargs)

    with warnings.catch_warnings():
        warnings.simplefilter("always", RaiseAsWarning)
        warnings.showwarning = show
        yield


def _ask(call: Any) -> bool:
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


def _render(outcome: Any, header: list[str], *, verbose: bool) -> None:
    """Print the report: ``header`` (empty when it was printed before the run), the agent, the calls,
    the three verdicts; verdict words coloured on a terminal (stepfork.cli.colour)."""
    from stepfork.cli.colour import echo
    from stepfork.cli.output import compact, sanitize_text
    from stepfork.replay.diagnostics import difference_lines, display_path

    lines = [*header, f"{'Agent':<14}{sanitize_text(outcome.agent_name)}", "", "Dependency Calls"]
    if not outcome.calls:
        lines.append("  (none reached)")
    for call in outcome.calls:
        extra = ", recorded error" if call.status is not None and str(call.status) == "error" else ""
        if getattr(call, "match", "full") == "partial":  # imported call holding part of its request
            extra += ", matched on partial input"
        lines.append(f"  {call.index + 1}. {call.kind} {sanitize_text(call.label)} ({call.action}{extra})")
    lines.extend(_request_lines(outcome, verbose=verbose))
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
            f"differs at {sanitize_text(item.path)} (--ignore)"
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
    """The ``http`` calls answered (issue 29), counted apart from the agent's calls: ``Background
    requests: 2 served (of 3 recorded)``, with ``--verbose`` one line each; nothing when there were none."""
    from stepfork.cli.output import sanitize_text

    requests = getattr(outcome, "requests", ())
    recorded = getattr(outcome, "recorded_requests", 0)
    if not requests and not recorded:
        return []
    served = sum(1 for item in requests if item.action == "substituted")
    live = sum(1 for item in requests if item.action == "executed")
    word = "request" if served == 1 else "requests"
    text = f"Background requests: {served} {word} served (of {recorded} recorded)"
    if live:
        text += f", {live} sent live"
    lines = [text]
    answered = sum(1 for item in requests if item.action == "acknowledged")
    refused = sum(1 for item in requests if item.action == "refused")
    if answered or refused:  # issue 30: telemetry is never sent and never a divergence
        parts = [f"{answered} answered 204 No Content"] if answered else []
        parts += [f"{refused} connection{'s' if refused != 1 else ''} refused"] if refused else []
        exports = "export" if answered + refused == 1 else "exports"
        lines.append(f"Telemetry: {answered + refused} {exports} not sent ({', '.join(parts)})")
    if verbose:
        for item in requests:
            where = {"acknowledged": "not sent", "refused": "refused"}.get(item.action)
            where = where or (f"step {item.step}" if item.step is not None else "sent live")
            thread = ", background thread" if item.background else ""
            lines.append(f"  - {sanitize_text(item.label)} ({where}{thread})")
    return lines


def _status(outcome: Any) -> str:
    if outcome.exit_code == 0:
        return "REPRODUCED FAILURE" if outcome.behavior.status == "REPRODUCED FAILURE" else "COMPLETED"
    return "DIVERGED" if outcome.exit_code == 1 else "REJECTED"


def register(app: typer.Typer) -> None:
    """Add the ``replay`` command to ``app``."""
    app.command("replay")(replay)
