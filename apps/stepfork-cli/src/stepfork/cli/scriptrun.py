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

import os
import runpy
import sys
import traceback
from typing import Any


class ProgramExit(Exception):
    """The program exited with a non-zero status (``code``: int or the ``sys.exit`` message)."""

    def __init__(self, code: Any) -> None:
        super().__init__(f"exit status {code}")
        self.code = code


def run_program(target: list[str]) -> None:
    """Run ``SCRIPT ARGS`` or ``-m MODULE ARGS`` as ``__main__``.

    Raises:
        ProgramExit: the program called ``sys.exit`` with a non-zero status. Anything else it raises
            propagates unchanged.
    """
    try:
        if target[0] == "-m":
            sys.argv = [target[1], *target[2:]]
            runpy.run_module(target[1], run_name="__main__", alter_sys=True)
        else:
            sys.argv = list(target)
            sys.path.insert(0, os.path.dirname(os.path.abspath(target[0])))
            runpy.run_path(target[0], run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise ProgramExit(exc.code) from None


def _status(exc: ProgramExit) -> int:
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _record(output: str, agent: str, overwrite: bool, target: list[str]) -> int:
    from stepfork.integrations.autocapture import enable
    from stepfork.trace import record

    enable()
    try:
        with record(agent, output=output, overwrite=overwrite):
            run_program(target)
    except ProgramExit as exc:
        return _status(exc)
    except BaseException:  # the program's own failure: recorded by the session, shown as Python would
        traceback.print_exc()
        return 1
    return 0


def _replay(bundle: str, mode: str, network: str, allow_hosts: list[str], target: list[str]) -> int:
    from pathlib import Path

    from stepfork.cli.commands.replay import render_outcome
    from stepfork.integrations.autocapture import enable
    from stepfork.replay.outcome import replay_entrypoint

    enable()
    outcome = replay_entrypoint(
        bundle,
        lambda: run_program(target),
        mode=mode,
        network=network or None,
        allow_hosts=allow_hosts or None,
    )
    sys.stdout.flush()
    render_outcome(outcome, Path(bundle), " ".join(["python", *target]))
    return int(outcome.exit_code)


def main(argv: list[str]) -> int:
    """``record OUT AGENT OVERWRITE -- TARGET...`` or ``replay BUNDLE MODE NETWORK HOSTS -- TARGET...``
    (HOSTS comma-separated); returns the exit status."""
    split = argv.index("--")
    head, target = argv[:split], argv[split + 1 :]
    if head[0] == "record":
        return _record(head[1], head[2], head[3] == "1", target)
    hosts = [h for h in head[4].split(",") if h]
    return _replay(head[1], head[2], head[3], hosts, target)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
