"""``minimize``'s zygote: ``python -m stepfork.analysis.minimize._zygote``, started by :mod:`._attempts`.

The process, the protocol and the fork per job are the shared zygote's (:mod:`stepfork.analysis._zygote`);
this module is ``minimize``'s task: what the zygote imports once (stepfork, the replay stack and the
entrypoint) and what each forked child does (replay one candidate bundle and answer its
:class:`~._signature.Signature`, as the fallback :mod:`._worker` does in a fresh process).
"""

from __future__ import annotations

import contextlib
from typing import Any

from stepfork.analysis._zygote.lines import line_of
from stepfork.analysis._zygote.server import Task, Zygote, join_threads, serve, write_all
from stepfork.analysis.minimize._worker import signature_of


def _prepare(config: dict[str, Any]) -> dict[str, Any] | None:
    """Import what every attempt runs and the entrypoint (an entrypoint that cannot be resolved is not
    refused here: each child resolves it again and answers its ``setup_error`` signature, as before)."""
    import stepfork.replay
    import stepfork.replay.outcome
    import stepfork.trace
    from stepfork.replay.network import network_for

    mode = config.get("mode") or "frozen"
    with contextlib.suppress(Exception):
        stepfork.replay.resolve_entrypoint(
            config["entrypoint"],
            import_root=config["import_root"],
            network=network_for(mode, config.get("network")),  # the import sealed as each attempt's replay
            allow_hosts=config.get("allow_hosts") or (),
            mode=mode,
            allow_commands=config.get("allow_commands") or (),
        )
    return None


def _work(config: dict[str, Any], bundles: list[str], result_fd: int, jobs_fd: int) -> None:
    """A forked child: replay the one candidate and write its signature line."""
    answer = signature_of(config, bundles[0]).to_json()
    join_threads()
    write_all(result_fd, line_of(answer))


TASK = Task(Zygote, _prepare, _work)

if __name__ == "__main__":
    serve(TASK)
