"""What a sealed session notes about its seal beside its divergence (docs/replay.md, "The seal's rules"):
the child processes ``allow_commands`` let run unsealed, the threads it started that were still running
when it stopped waiting for them, and the refusals that came after it ended.

:class:`SealNotes` is mixed into every handler the seal records on (``ReplaySession``, the pytest marker's
``ForbiddingHandler``): :mod:`stepfork.replay.network` and its helpers call ``note_unsealed_child``,
``note_unwaited_threads`` and ``note_late_refusal`` on the session they find, and the report reads
:attr:`SealNotes.seal_gaps`. :func:`network_line` is the one sentence every report (replay, minimize, fork,
check) gives of a seal: its policy, what it let through and those notes.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterable
from typing import Any

from stepfork.replay.errors import ReplayPolicyError


class SealNotes:
    """The notes of one sealed session (module docstring). Thread-safe: a note may come from any thread.

    Attributes:
        late_refusals: the refusals raised in a thread the session started after the session ended, in
            order (each also warned as a ``NetworkSealWarning``): they came after the verdict.
    """

    def __init__(self) -> None:
        self._notes_lock = threading.Lock()
        self._unsealed_children: list[str] = []
        self._unwaited_threads: list[str] = []
        self.late_refusals: list[ReplayPolicyError] = []

    def note_unsealed_child(self, program: str) -> None:
        """Note that the replay started a child process the seal does not reach, which ``allow_commands``
        let run (``program``: its name, as ``curl``; stepfork.replay.network_children): the report says so
        (:attr:`seal_gaps`)."""
        with self._notes_lock:
            self._unsealed_children.append(program)

    def note_unwaited_threads(self, names: list[str]) -> None:
        """Note the threads the replay started that were still running when it stopped waiting for them
        (stepfork.replay.network_threads): sealed, but what they do next is not in the verdict."""
        with self._notes_lock:
            self._unwaited_threads.extend(names)

    def note_late_refusal(self, error: ReplayPolicyError) -> None:
        """Note a refusal raised in a thread the session started, after the session ended (the verdict
        was already given): kept in :attr:`late_refusals` and warned (``NetworkSealWarning``)."""
        from stepfork.replay.network_children import NetworkSealWarning

        with self._notes_lock:
            self.late_refusals.append(error)
        warnings.warn(NetworkSealWarning(late_refusal_text(error)), stacklevel=2)

    @property
    def seal_gaps(self) -> tuple[str, ...]:
        """What the network seal did not cover during this replay, one sentence each, for the report
        (empty: nothing; docs/replay.md "The seal's rules"): ``child processes not sealed: 2 started
        (curl, sh)``, ``threads still running after the replay (sealed, not waited for): 1 (flusher)``."""
        with self._notes_lock:
            programs = list(self._unsealed_children)
            threads = list(self._unwaited_threads)
        gaps: list[str] = []
        if programs:
            names = ", ".join(dict.fromkeys(programs))
            gaps.append(f"child processes not sealed: {len(programs)} started ({names})")
        if threads:
            names = ", ".join(dict.fromkeys(threads))
            gaps.append(
                f"threads still running after the replay (sealed, not waited for): {len(threads)} ({names})"
            )
        return tuple(gaps)


def late_refusal_text(error: ReplayPolicyError) -> str:
    """The one-line warning of a refusal after the replay ended: what was refused, and that it was not the
    run's. Without the error's advice (instrument the client, ``--allow-host``): it is about the run's own
    calls, while what meets the seal after the run is a library's exit-time work, as the OpenAI Agents
    SDK's trace exporter flushing at exit (NEWCOMER3 finding 10)."""
    text = str(error)
    refused = text.split(" was refused", 1)[0] + " was refused" if " was refused" in text else text
    return (
        f"after the replay ended, a thread it started was refused (not in its verdict): {refused}; nothing "
        "was sent (a library's exit-time work, as a trace exporter's flush, meets the seal after the run)"
    )


def network_line(
    policy: str, allowed: Iterable[str] = (), gaps: Iterable[str] = (), commands: Iterable[str] = ()
) -> str:
    """The report's ``Network`` value for a replay whose network ``policy`` (``"sealed"`` or ``"open"``)
    let ``allowed`` hosts (``allow_hosts``, normalized) through and ``commands`` (``allow_commands``) start,
    with the :attr:`SealNotes.seal_gaps` sentences ``gaps``: ``sealed``, ``sealed (allowed: 127.0.0.1:8000,
    db.internal)``, ``sealed (allowed commands: curl; child processes not sealed: 1 started (curl))`` or
    ``open (not sealed: ...)`` (docs/replay.md "The network is sealed during frozen replay")."""
    if policy != "sealed":
        return "open (not sealed: uninstrumented connections reach the network)"
    hosts, programs = list(allowed), list(commands)
    notes = ([f"allowed: {', '.join(hosts)}"] if hosts else []) + (
        [f"allowed commands: {', '.join(programs)}"] if programs else []
    )
    notes += list(gaps)
    return f"sealed ({'; '.join(notes)})" if notes else "sealed"


def end_of_run(session: Any, handle: Any, exc_type: type[BaseException] | None) -> None:
    """Wait for the threads the sealed ``session`` started (``handle``: its seal), before it ends
    (stepfork.replay.network_threads.wait_for); the names of those still running go on its notes. Not
    after a ``KeyboardInterrupt`` or another ``BaseException`` that is not an ``Exception``: the user asked
    to stop."""
    if handle is None or not handle.threads or (exc_type is not None and not issubclass(exc_type, Exception)):
        return
    from stepfork.replay import network_threads

    still = network_threads.wait_for(handle.threads)
    if still:
        session.note_unwaited_threads(still)
