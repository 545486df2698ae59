"""The errors of the network seal, and the refusals a child process reports (docs/replay.md, "The network
is sealed"): ``network_sealed`` (:func:`sealed_error`) and ``child_process_refused``
(:func:`child_refused_error`), built with the message that names what was refused and how to let it
through; :func:`reported_error` rebuilds one from the line a child process wrote
(:mod:`stepfork.replay.network_fork`, :mod:`stepfork.replay.network_children`).
"""

from __future__ import annotations

from typing import Any

from stepfork.replay.errors import ChildProcessRefusedError, ReplayPolicyError


def sealed_error(
    where: str,
    mode: str = "frozen",
    *,
    child: bool | str = False,
    context: str | None = None,
    what: str = "the connection to",
) -> ReplayPolicyError:
    """The ``network_sealed`` error for a connection to ``where`` (``host:port``) refused in ``mode``
    (``child``: by a child process ``"forked"`` (True) or ``"started"`` during the replay; ``context``: what
    was running, as ``while importing the entrypoint's module 'agent'``; ``what``: the kind of traffic,
    ``the connection to`` by default, ``the reverse lookup of``...)."""
    has_port = where.count(":") == 1 or where.startswith("[")
    host = where.rsplit(":", 1)[0].strip("[]") if has_port else where
    every = f"; --allow-host {host} for every port" if has_port else ""
    how = "forked" if child is True else child
    who = f"a child process {how} during the replay: " if how else ""
    who += f"{context}: " if context else ""
    return ReplayPolicyError(
        f"network sealed during {mode} replay: {who}{what} {where} was refused before anything "
        "was sent. This call is not instrumented, so its answer is not in the recording: instrument its "
        "client (instrument_openai(client), instrument_anthropic(client), instrument_httpx(client), "
        "instrument_urllib3() for requests and boto3, instrument_aiohttp()) or the "
        "function making it (@trace_tool); or, when the replay really needs it live, let it through with "
        f"allow_hosts=[{where!r}] (--allow-host {where}{every}) or "
        "network='open' (--allow-network)",
        code="network_sealed",
    )


def child_refused_error(
    program: str,
    line: list[str] | None,
    reason: str,
    mode: str = "frozen",
    *,
    child: bool | str = False,
    context: str | None = None,
) -> ChildProcessRefusedError:
    """The ``child_process_refused`` error for the child process ``program`` (its command ``line``,
    redacted and shortened in the message; None when only the name is known) refused in ``mode`` for
    ``reason`` (``child``, ``context``: as :func:`sealed_error`)."""
    from stepfork.trace.command_redaction import redact_command

    shown = program
    if line:
        import shlex

        shown = shlex.join(redact_command(line))
        shown = shown if len(shown) <= 160 else shown[:157] + "..."
    how = "forked" if child is True else child
    who = f"a child process {how} during the replay: " if how else ""
    who += f"{context}: " if context else ""
    return ChildProcessRefusedError(
        f"child process refused during {mode} replay: {who}the command `{shown}` was refused before it "
        f"started: {reason}. Serve its result from the recording (@trace_tool around the function that "
        "runs it); or, when the replay really needs it, let it run unsealed with "
        f"allow_commands=[{program!r}] (--allow-command {program}) or network='open' (--allow-network)",
        program=program,
    )


def reported_error(report: Any, mode: str, child: str | bool) -> ReplayPolicyError:
    """The error a refusal a child process reported stands for (``report``: the JSON object it wrote,
    ``{"refused": "network" | "command" | "unseen", ...}``, or the bare ``host:port`` of older lines)."""
    if not isinstance(report, dict):
        return sealed_error(str(report), mode, child=child)
    kind = report.get("refused")
    if kind == "command":
        program, reason = str(report.get("program")), str(report.get("reason"))
        return child_refused_error(program, None, reason, mode, child=child)
    if kind == "unseen":
        how = "forked" if child is True else child
        return ReplayPolicyError(
            f"network sealed during {mode} replay: a child process {how} during the replay: "
            f"{report.get('where')} was refused: the seal cannot see where such a call goes",
            code="network_sealed",
        )
    what = str(report.get("what") or "the connection to")
    return sealed_error(str(report.get("where")), mode, child=child, what=what)
