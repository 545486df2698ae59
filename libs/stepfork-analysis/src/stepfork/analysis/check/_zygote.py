"""``check``'s zygote: ``python -m stepfork.analysis.check._zygote``, started by :mod:`._runner`.

The process, the protocol and the fork per job are the shared zygote's (:mod:`stepfork.analysis._zygote`),
its loop for batches :class:`._zygote_batches.BatchZygote`; this module is ``check``'s task: what the
zygote imports once (what a worker runs, and only that: a shorter start), the entrypoint and ``raise_as``
classes it resolves (one that cannot be resolved fails every bundle: the zygote answers that instead of
ready), ``check --warm``'s first replay, and what each forked worker does (:func:`._batch.serve_batches`).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from stepfork.analysis._zygote.lines import line_of
from stepfork.analysis._zygote.server import Task, serve, write_all
from stepfork.analysis.check import _state  # noqa: F401 - preloaded: every worker probes the agent's state
from stepfork.analysis.check._batch import prepare, serve_batches
from stepfork.analysis.check._worker import entrypoint_unresolvable, resolve_targets, verdict_of
from stepfork.analysis.check._zygote_batches import BatchZygote


def _prepare(config: dict[str, Any]) -> dict[str, Any] | None:
    """Import the replay stack and what the configuration names; None when workers may be forked, else the
    refusal that carries every bundle's verdict (an entrypoint or ``raise_as`` class that cannot be
    resolved)."""
    import stepfork.replay
    import stepfork.replay.outcome
    import stepfork.trace

    try:
        resolve_targets(config)
    except Exception as exc:  # anything else: a worker resolves again and answers the bundle's own verdict
        if isinstance(exc, stepfork.replay.EntrypointError):  # no bundle can be replayed here; say why, once
            verdict = entrypoint_unresolvable(exc)
            return {"ready": False, "reason": verdict["detail"], "verdict": verdict}
    if config.get("warm_bundle"):
        # `check --warm`: one replay here first, so every child starts with the caches an SDK builds on its
        # first request (docs/check.md "Warm start"); its verdict is not used, the children replay it again
        with contextlib.suppress(Exception):
            verdict_of(config, config["warm_bundle"])
    prepare(config)  # what every worker starts from, taken once here before any fork
    return None


def _work(config: dict[str, Any], bundles: list[str], result_fd: int, jobs_fd: int) -> None:
    """A forked worker: replay the batch ``bundles``, then each further batch read from ``jobs_fd``."""

    def send(answer: Any) -> None:
        write_all(result_fd, line_of(answer))

    with os.fdopen(jobs_fd, "rb") as jobs:
        serve_batches(config, bundles, send, jobs)


TASK = Task(BatchZygote, _prepare, _work)

if __name__ == "__main__":
    serve(TASK)
