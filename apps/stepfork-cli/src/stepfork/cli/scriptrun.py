"""Run a Python program under Stepfork with no Stepfork import in it (issue 11, zero-code recording).

``stepfork record -- python agent.py ARGS`` and ``stepfork replay BUNDLE -- python agent.py ARGS`` start
the interpreter the user typed as ``python -m stepfork.cli.scriptrun record|replay ... -- agent.py ARGS``
(or ``-- -m module ARGS``): this module enables the capture of every httpx/httpx2 client the program
creates (:mod:`stepfork.integrations.autocapture`), then runs the program as ``__main__`` with its own
``sys.argv`` under a recording session or a replay (:func:`stepfork.replay.outcome.replay_entrypoint`, the
program being the entrypoint). Nothing is written into the user's tree except the bundle they named.

Run status: exit status 0 (or ``sys.exit()``/``sys.exit(None)``) is success; any other exit status is a
:class:`ProgramExit` failure of the run, recorded like any exception the program leaves uncaught, so its
replay is judged by the usual rules (a reproduced failure is not a divergence).
"""

from __future__ import annotations

import contextlib
import os
import runpy
import sys
import threading
import traceback
from typing import Any

from stepfork.cli.program_test import run_script_regression_case  # where exported program tests import it

__all__ = ["ProgramExit", "main", "program_exit", "run_program", "run_script_regression_case"]


class ProgramExit(Exception):
    """The program exited with a non-zero status (``code``: int or the ``sys.exit`` message; ``status``:
    the process's exit status, 1 for a message). Raised as :func:`program_exit`'s subclass named
    ``exit status N``, so a replay reproduces the recorded failure only with the same status."""

    def __init__(self, code: Any) -> None:
        self.code = code
        self.status = code if isinstance(code, int) else 1
        super().__init__(f"exit status {self.status}" if isinstance(code, int) else str(code))


def program_exit(code: Any) -> ProgramExit:
    """A :class:`ProgramExit` for ``code`` whose class is named ``exit status N`` (no module), the failure
    type recorded and compared by replay (docs/cli.md, "Script mode": the status must be the same)."""
    status = code if isinstance(code, int) else 1
    name = f"exit status {status}"
    cls: type[ProgramExit] = type(name, (ProgramExit,), {"__module__": "", "__qualname__": name})
    return cls(code)


def run_program(target: list[str]) -> None:
    """Run ``SCRIPT ARGS`` or ``-m MODULE ARGS`` as ``__main__``.

    A child the program forked (``os.fork``) and that leaves the program (returns, ``sys.exit``, raises)
    exits here with its status, as it would have at the end of ``python SCRIPT``: it never goes on into
    the recording's end or the replay's report, which are the parent's.

    Raises:
        ProgramExit: the program called ``sys.exit`` with a non-zero status. Anything else it raises
            propagates unchanged.
    """
    from stepfork.replay.forked_child import child_ends_here

    try:
        with child_ends_here():  # a forked child ends inside, with its own status
            if target[0] == "-m":
                sys.argv = [target[1], *target[2:]]
                runpy.run_module(target[1], run_name="__main__", alter_sys=True)
            else:
                sys.argv = list(target)
                sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
                runpy.run_path(target[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise program_exit(exc.code) from None


def _status(exc: ProgramExit) -> int:
    if not isinstance(exc.code, int):
        print(exc.code, file=sys.stderr)
    return int(exc.status)


def _refuse(message: str) -> int:
    """Print ``message`` as one line on stderr, as the parent CLI's ``fail`` does; exit status 2."""
    from stepfork.cli.output import sanitize_text

    print(sanitize_text(message), file=sys.stderr)
    return 2


def _missing(target: list[str]) -> str | None:
    """Why ``target`` cannot be run (a missing script or module), or None."""
    if target[0] != "-m":
        return None if os.path.isfile(target[0]) else f"Cannot run {target[0]}: no such script"
    import importlib.util

    try:
        found = importlib.util.find_spec(target[1])
    except (ImportError, ValueError):
        found = None
    return None if found is not None else f"Cannot run -m {target[1]}: no such module"


def _record(
    output: str, agent: str, overwrite: bool, target: list[str], providers: dict[str, str] | None = None
) -> int:
    from contextlib import ExitStack

    from stepfork.integrations.autocapture import enable, note_program
    from stepfork.trace import record
    from stepfork.trace.errors import TraceError

    problem = _missing(target)
    if problem is not None:
        return _refuse(problem)
    enable(providers)
    _terminate_as_exit()
    try:
        with ExitStack() as stack:
            try:
                session = stack.enter_context(record(agent, output=output, overwrite=overwrite))
            except TraceError as exc:  # the bundle cannot be written: refused before the program runs
                return _refuse(f"Cannot record to {output}: {exc}")
            note_program(session, ["python", *target], providers)  # the capture: in program.json
            from stepfork.cli.agent_exit import os_exit_reported

            # os._exit ends the process at once: the bundle is finished first (docs/cli.md, "record")
            with os_exit_reported(lambda status: _finish_at_os_exit(session, output, status), None):
                started = set(threading.enumerate())
                try:
                    run_program(target)
                except KeyboardInterrupt:
                    raise
                except BaseException:  # a failed program's threads still run before it exits
                    _join_run_threads(started)
                    raise
                _join_run_threads(started)
    except ProgramExit as exc:
        return _status(exc)
    except KeyboardInterrupt:  # Ctrl-C: recorded as the run's failure; the shell's 128 + SIGINT
        traceback.print_exc()
        return 130
    except BaseException:  # the program's own failure: recorded by the session, shown as Python would
        traceback.print_exc()
        return 1
    return 0


def _join_run_threads(before: set[threading.Thread]) -> None:
    """Wait for the threads the program started (not in ``before``) that are still running and are not
    daemons, as the interpreter joins them before the program exits, so the run ends where a replay's ends:
    a sealed replay waits for the same threads (``stepfork.replay.network_threads.wait_for``, bounded by its
    ``WAIT_SECONDS``), and a request such a thread sends after the script's last line is part of the run
    in both (NEWCOMER6 F4: recorded without it, every replay was DIVERGED). Not after Ctrl-C."""
    from stepfork.replay.network_threads import wait_for

    wait_for(thread for thread in threading.enumerate() if thread not in before)


def _finish_at_os_exit(session: Any, output: str, status: int) -> str:
    """Finish the recording ``session`` (writing to ``output``) as the program's ``os._exit(status)`` ends
    the process: status 0 completes the run, any other fails it as ``exit status N`` (as ``sys.exit(N)``
    would); return the line that says so. Called inside a call the session records (``scope_open``: its
    result will never come) or when the write fails, the bundle is left ``running`` instead, as a killed
    run's (crash-safe: every event up to there), and the line says so."""
    if session.scope_open:
        return (
            f"The program called os._exit({status}) inside a recorded call, whose result never came: "
            f"{output} is left running, as a killed run's, with every event up to there."
        )
    failure = None if status == 0 else program_exit(status)
    try:
        session.__exit__(type(failure) if failure else None, failure, None)
    except Exception as exc:
        return (
            f"The program called os._exit({status}); the recording could not be finished ({exc}), so "
            f"{output} is left running with every event up to there."
        )
    state = "completed" if failure is None else f"failed, exit status {status}"
    return (
        f"The program called os._exit({status}); the run was recorded up to there and {output} finished "
        f"({state})."
    )


def _terminate_as_exit() -> None:
    """Make SIGTERM end the program as ``sys.exit(143)`` (128 + SIGTERM) would, so the recording ends as a
    failed run with its bundle written, instead of the process dying with the bundle still ``running``
    (a CI timeout, ``docker stop``, ``stepfork record`` passing its own SIGTERM on). A program that sets
    its own SIGTERM handler replaces this one."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    if hasattr(signal, "SIGTERM"):
        signal.signal(signal.SIGTERM, stop)


def _replay(bundle: str, options: dict[str, Any], target: list[str]) -> int:
    from pathlib import Path

    import typer

    from stepfork.cli.agent_exit import os_exit_reported
    from stepfork.cli.output import agent_output_to_stderr
    from stepfork.cli.replay_report import ask, emit_report_json, fail_for_error, os_exit_line, render_outcome
    from stepfork.integrations.autocapture import enable, recorded_providers
    from stepfork.replay.outcome import replay_entrypoint

    problem = _missing(target)
    if problem is not None:
        return _refuse(problem)
    enable(recorded_providers(bundle))  # the providers named as the recording named them (--provider)
    as_json = bool(options.get("json"))
    into = options.get("program_output") or None  # a program test reads the program's stdout from there
    try:
        with (
            os_exit_reported(os_exit_line, 2),  # the program's os._exit is no verdict (docs/cli.md)
            agent_output_to_stderr(as_json and into is None),  # with --json, stdout holds the report alone
            output_to_file(into),
        ):
            outcome = replay_entrypoint(
                bundle,
                lambda: run_program(target),
                mode=options["mode"],
                network=options["network"] or None,
                allow_hosts=options["allow_hosts"] or None,
                allow_commands=options.get("allow_commands") or None,
                allow_live_tools=options["allow_live_tools"] or None,
                approve=ask if options["mode"] == "manual" else None,
                ordering=options["ordering"],
                ignore=options["ignore"],
                ignore_output=options.get("ignore_output") or (),
            )
    except Exception as exc:  # a library error before the run (the program's own are in the outcome)
        try:
            fail_for_error(exc, Path(bundle))  # prints the one line, raises typer.Exit
        except typer.Exit as done:
            return int(done.exit_code)
    keep_sealed(outcome)
    sys.stdout.flush()
    if options.get("outcome_file"):  # a program test's trajectory expectation reads the calls there
        import json

        with open(options["outcome_file"], "w", encoding="utf-8") as handle:
            json.dump(outcome.to_dict(), handle)
    if as_json:
        emit_report_json(outcome)
        return int(outcome.exit_code)
    from stepfork.cli.output import sanitize_text
    from stepfork.trace.command_redaction import redact_command

    # a key typed as an argument is never printed: the rule program.json and export use
    shown = sanitize_text(" ".join(redact_command(["python", *target])))
    render_outcome(outcome, Path(bundle), shown, verbose=options["verbose"])
    return int(outcome.exit_code)


@contextlib.contextmanager
def output_to_file(path: str | None) -> Any:
    """While the block runs, what the program prints goes to the file at ``path`` (``sys.stdout`` and file
    descriptor 1, so a child process's output too), not to stdout; nothing changes when ``path`` is None.
    A program test (:mod:`stepfork.cli.program_test`) compares that output with its expectation."""
    if path is None:
        yield
        return
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    with open(path, "a", encoding="utf-8", errors="replace") as handle:
        saved = os.dup(1)
        os.dup2(handle.fileno(), 1)
        try:
            with contextlib.redirect_stdout(handle):
                yield
        finally:
            with contextlib.suppress(Exception):
                handle.flush()
            os.dup2(saved, 1)
            os.close(saved)


def keep_sealed(outcome: Any) -> None:
    """After a sealed replay, keep this process sealed until it exits (``seal_process``): a thread the
    program left running (a daemon's background fetch, the interpreter's join of non-daemon threads at
    exit) must not reach the network once the session that sealed it has ended. The verdict is already
    taken; a refusal then is no session's divergence. Only for a process that exists for the replay (this
    module's, and the ``stepfork`` console script's: ``stepfork.cli.app.OWN_PROCESS``)."""
    if getattr(outcome, "network", None) == "sealed":
        from stepfork.replay.network import seal_process

        seal_process()


def main(argv: list[str]) -> int:
    """``record OUT AGENT OVERWRITE [PROVIDERS_JSON] -- TARGET...`` or ``replay BUNDLE OPTIONS_JSON --
    TARGET...``
    (OPTIONS_JSON as built by :func:`stepfork.cli.commands.replay._replay_program`); returns the exit
    status."""
    split = argv.index("--")
    head, target = argv[:split], argv[split + 1 :]
    if head[0] == "record":
        import json

        providers = json.loads(head[4]) if len(head) > 4 else None
        return _record(head[1], head[2], head[3] == "1", target, providers)
    import json

    try:
        return _replay(head[1], json.loads(head[2]), target)
    except KeyboardInterrupt:  # Ctrl-C reaches this process itself (stepfork replay leaves it to us)
        sys.stderr.write("Interrupted.\n")
        return 130


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
