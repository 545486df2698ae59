"""A batch worker of ``stepfork check``: one child forked from the zygote replays many bundles in turn.

A fork per bundle costs about 10 ms of CPU (the fork, the copy-on-write faults as the replay touches the
zygote's pages, the exit), against 0.3-1.3 ms for a whole small replay: a corpus spent nearly all its time
isolating. So a child forked from the zygote (:mod:`._zygote`, which imported the entrypoint once) replays a
batch, one bundle after another, and writes one verdict line per bundle as soon as it has it. Isolation is
kept where it decides a verdict:

- a crash or a hang ends the child; the zygote gives that bundle its ``crash`` / ``timeout`` answer and
  forks a fresh child for the rest of the batch (the per-bundle timeout restarts at every verdict line);
- after each replay the state probe (:mod:`._check_state`) compares the agent's state with the zygote's;
  when the replay changed it (or left a thread running, or the probe cannot tell), the child reports the
  verdict and exits, so the next bundle starts from the zygote's state again, as in a fork per bundle;
- ``isolation="bundle"`` makes every child exit after one bundle: a fork per bundle, as before.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["replay_batch"]


def _probe(names: list[str]) -> Any:
    """The state snapshot of the agent's modules ``names``, or None when it cannot be taken (then every
    replay restarts the child)."""
    from stepfork.analysis._check_state import TooBig, snapshot

    try:
        return snapshot(names)
    except (TooBig, RecursionError):
        return None


def replay_batch(config: dict[str, Any], bundles: list[str], send: Callable[[dict[str, Any]], None]) -> None:
    """Replay ``bundles`` in this process (a child forked by the zygote) and ``send`` one answer per bundle,
    in order, stopping early when the next replay could no longer start from the zygote's state.

    Args:
        config: the check configuration (``entrypoint``, ``import_root``, ``ordering``, ``raise_as``,
            ``isolation``: ``"worker"`` (default) or ``"bundle"``).
        bundles: paths or URLs, in order.
        send: writes one answer (a JSON dict) to the zygote.

    Each answer is :func:`._check_worker.verdict_of`'s verdict plus ``worker`` (this process's pid),
    ``modules`` (modules the replay imported,
    which the zygote preloads before its next fork), ``stderr_at`` (the offset where the next bundle's stderr
    starts, so a crash is described by its own last line) and ``restart`` (True: this child exits now and the
    zygote forks another for the rest). A replay that raises a BaseException ends the child (the zygote
    answers ``crash`` for that bundle), as the process of a fork per bundle would end.
    """
    from stepfork.analysis._check_state import agent_module_names
    from stepfork.analysis._check_worker import verdict_of

    import_root = config.get("import_root")
    names = agent_module_names(import_root)
    baseline = None if config.get("isolation") == "bundle" else _probe(names)
    main = threading.current_thread()
    last = len(bundles) - 1
    for index, bundle in enumerate(bundles):
        before = set(sys.modules)
        answer = verdict_of(config, bundle)
        imported = sorted(set(sys.modules) - before)
        answer["modules"] = imported
        answer["worker"] = os.getpid()
        for thread in threading.enumerate():  # as interpreter shutdown would: wait for non-daemon threads
            if thread is not main and not thread.daemon:
                thread.join()
        restart = index < last and (  # after the last bundle the child exits anyway
            baseline is None
            or threading.active_count() > 1  # a daemon thread still runs: it would run into the next replay
            or bool(agent_module_names(import_root, imported))  # a new agent module: not in the baseline
            or _probe(names) != baseline
        )
        answer["restart"] = restart
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        try:
            answer["stderr_at"] = os.lseek(2, 0, os.SEEK_CUR)
        except OSError:  # not the zygote's file (fd 2 is always a file there): crashes are described whole
            answer["stderr_at"] = 0
        send(answer)
        if restart:
            return
