"""The network seal outlives its session for the threads the replay started (issue 29; docs/replay.md,
"The seal's rules").

An agent that hands a side effect to a thread and returns (a fire-and-forget notification, a flush a
moment later) sends after its entrypoint returned. The session's seal, lifted when the session ends, let
that send go live under the Python API and exported tests, while ``stepfork replay`` stayed sealed until
its process exited. So:

- **A thread the replay starts is sealed for its whole life.** While sealed hooks are installed,
  ``threading.Thread.start`` notes each thread started from the session's context, or from a thread the
  session started (:func:`start_hook`), on the session's seal (``Seal.threads``). When the session ends its
  seal stays in force for those threads alone (``Seal.ended``) until the last of them ends; every other
  thread of the process is free again. A thread a library started before the replay, or starts from its
  own background thread, is not the replay's: sealed while the session runs, free after.
- **The run is waited for.** When a sealed session ends (:func:`wait_for`), it first joins the threads it
  started that are still running and are not daemons, as the interpreter joins them before a program
  exits: a send there happens while the session runs, so its refusal is the session's divergence and the
  verdict counts it (DIVERGED, ``network_sealed``), under ``stepfork replay``, the Python API and exported
  tests alike. The workers of ``concurrent.futures`` pools are not waited for (an idle worker waits for
  work until its pool shuts down, which the interpreter does at exit): the work handed to them is sealed,
  not waited for. The wait is bounded (:data:`WAIT_SECONDS`): a thread still running then is named on the
  report (``ReplaySession.seal_gaps``) and stays sealed.
- **A refusal after the session ended** (a daemon thread, a pool worker, a thread past the wait) is raised
  in that thread as any refusal, so nothing is sent, and noted on the session as a late refusal
  (``ReplaySession.late_refusals``, a ``NetworkSealWarning``): the verdict was already given.

Threads started with ``_thread.start_new_thread`` directly are not seen (no hook, and the interpreter
raises no audit event for them on Python 3.11).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, MutableMapping
from typing import Any

WAIT_SECONDS = 10.0
"""How long a sealed session waits, in all, for the non-daemon threads it started to end."""


def start_hook(seal_of: Callable[[], Any], original: MutableMapping[str, Any]) -> Callable[..., None]:
    """The wrapper of ``threading.Thread.start``: notes the thread on the seal ``seal_of()`` names (an
    object with a ``threads`` WeakSet; None: not the replay's), then starts it with
    ``original["Thread.start"]``."""

    def start(self: threading.Thread) -> None:
        seal = seal_of()
        if seal is not None:
            seal.threads.add(self)
        try:
            original["Thread.start"](self)
        except BaseException:
            if seal is not None:  # never started: nothing of the replay's runs there
                seal.threads.discard(self)
            raise

    return start


def alive(threads: Iterable[threading.Thread]) -> bool:
    """True when one of ``threads`` is running, or about to (noted, not started yet)."""
    return any(thread.is_alive() or not _started(thread) for thread in list(threads))


def _started(thread: threading.Thread) -> bool:
    started = getattr(thread, "_started", None)
    return bool(started.is_set()) if started is not None else True


def is_pool_worker(thread: threading.Thread) -> bool:
    """True for a thread of a ``concurrent.futures`` pool (a worker, a process pool's manager thread):
    alive until its pool shuts down, not until its work is done."""
    target = getattr(thread, "_target", None)
    modules = (type(thread).__module__, getattr(target, "__module__", None) or "")
    return any(module.startswith("concurrent.futures") for module in modules)


def wait_for(threads: Iterable[threading.Thread], seconds: float = WAIT_SECONDS) -> list[str]:
    """Join the threads of ``threads`` that are running, are not daemons nor pool workers, and are not
    the calling thread, within ``seconds`` in all; return the names of those still running after it
    (empty: none)."""
    current = threading.current_thread()
    waited = [
        thread
        for thread in list(threads)
        if thread is not current and thread.is_alive() and not thread.daemon and not is_pool_worker(thread)
    ]
    deadline = time.monotonic() + seconds
    for thread in waited:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [thread.name for thread in waited if thread.is_alive()]
