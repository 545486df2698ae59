"""``stepfork record [-o OUT.sftrace] [--agent NAME] [--overwrite] [--provider HOST=NAME]... -- python
agent.py ARGS...`` (issues 11, 30).

Runs the Python program with Stepfork's capture installed in every HTTP client it creates (httpx/httpx2,
urllib3 and so requests and boto3, aiohttp) and writes one bundle (:mod:`stepfork.cli.scriptrun`);
``@trace_tool`` functions in it are recorded too. ``--provider HOST=NAME`` names the provider of requests to
a host no table knows (the bundle's ``program.json`` keeps it, so its replays name it the same). The
program's stdout/stderr pass through and its exit status is the command's (and the run's status). Exit 2
(one line, nothing run or written): not a Python command, a missing script or module, an output that is
not a ``.sftrace`` path, exists without ``--overwrite`` or is a directory that is not a bundle, a
``--provider`` that is not ``HOST=NAME``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Annotated

import typer


def python_target(command: list[str]) -> tuple[str, list[str]] | None:
    """``(interpreter, [SCRIPT, ARGS...] or ["-m", MODULE, ARGS...])`` of ``python SCRIPT ARGS`` or
    ``python -m MODULE ARGS``; None for anything else."""
    if len(command) < 2 or not Path(command[0]).name.startswith("python"):
        return None
    if command[1] == "-m":
        return (command[0], command[1:]) if len(command) > 2 else None
    return None if command[1].startswith("-") else (command[0], command[1:])


def check_script(target: list[str]) -> None:
    """Refuse (one line, exit 2) a ``SCRIPT`` that is not a file, before anything starts; a ``-m MODULE``
    is looked up by the child (:mod:`stepfork.cli.scriptrun`), in the interpreter that runs it."""
    from stepfork.cli.output import fail, sanitize_text

    if target[0] != "-m" and not Path(target[0]).is_file():
        fail(f"Cannot run {sanitize_text(target[0])}: no such script", 2)


def check_output(out: Path, *, overwrite: bool) -> None:
    """Refuse (one line, exit 2) a bundle path ``record(...)`` would refuse, before the program starts:
    the trace package's own rule (a ``.sftrace`` name, not a file, an existing bundle only with
    ``--overwrite``, never a directory that is not a bundle)."""
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.trace._files import check_target  # the rule record()/BundleWriter apply
    from stepfork.trace.errors import TraceStorageError

    try:
        check_target(out, overwrite=overwrite)
    except TraceStorageError as exc:
        if exc.code == "already_exists":
            fail(f"{sanitize_text(str(out))} exists; pass --overwrite to replace it", 2)
        fail(f"Cannot record to {sanitize_text(str(out))}: {sanitize_text(str(exc))}", 2)


def run_child(interpreter: str, head: list[str], target: list[str]) -> int:
    """Run ``interpreter -m stepfork.cli.scriptrun HEAD -- TARGET`` with this terminal; its exit status.

    While the program runs, this process stands aside as a shell does for its foreground job: Ctrl-C
    (SIGINT, sent to the whole foreground group) is left to the program, whose recording or replay ends
    as under ``python SCRIPT`` however long writing the bundle takes; SIGTERM and SIGHUP sent to this
    process (``kill PID``, a CI timeout) are passed on to the program, never leaving it running alone.
    A program ended by signal N gives 128 + N, the shell's status.
    """
    import signal
    import threading

    args = [interpreter, "-m", "stepfork.cli.scriptrun", *head, "--", *target]
    process = subprocess.Popen(args, env=os.environ.copy())

    def forward(signum: int, frame: object) -> None:
        if process.returncode is None:
            process.send_signal(signum)

    previous: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():  # signal handlers: main thread only
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
        for name in ("SIGTERM", "SIGHUP"):
            number = getattr(signal, name, None)
            if number is not None:
                previous[number] = signal.signal(number, forward)
    try:
        code = process.wait()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)  # type: ignore[arg-type]
    return 128 - code if code < 0 else code


def record(
    command: Annotated[
        list[str], typer.Argument(help="The program: python SCRIPT ARGS... or python -m MODULE.")
    ],
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Bundle to write (default: <script>.sftrace).")
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Agent name in the manifest (default: the script).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing bundle.")] = False,
    provider: Annotated[
        list[str] | None,
        typer.Option(
            "--provider",
            metavar="HOST=NAME",
            help="The provider of requests to HOST or HOST:PORT (a local server, a gateway). Repeatable.",
        ),
    ] = None,
) -> None:
    """Record a Python program's LLM calls (any HTTP client) with no Stepfork import in it."""
    from stepfork.cli.output import fail, sanitize_text
    from stepfork.integrations._http_naming import parse_provider

    providers: dict[str, str] = {}
    for entry in provider or ():
        try:
            host, name = parse_provider(entry)
        except ValueError as exc:
            fail(sanitize_text(str(exc)), 2)
        providers[host] = name

    found = python_target(command)
    if found is None:
        fail(
            "stepfork record runs a Python program: stepfork record -- python SCRIPT ARGS... (or -m MODULE)",
            2,
        )
    interpreter, target = found
    name = target[1] if target[0] == "-m" else Path(target[0]).stem
    out = output if output is not None else Path(f"{name.rsplit('.', 1)[-1]}.sftrace")
    check_output(out, overwrite=overwrite)
    check_script(target)
    head = ["record", str(out), agent or name, "1" if overwrite else "0"]
    if providers:
        import json

        head.append(json.dumps(providers))
    code = run_child(interpreter, head, target)
    raise typer.Exit(code)


def register(app: typer.Typer) -> None:
    """Add the ``record`` command to ``app``."""
    app.command("record")(record)
