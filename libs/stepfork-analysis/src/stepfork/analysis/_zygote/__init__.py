"""The zygote ``minimize`` and ``check`` fork their replays from (private; docs/architecture.md).

``server``: the process, its protocol and the fork per job, given a :class:`~.server.Task`; ``client``:
starting it, sending jobs, routing the answers; ``lines``: the JSON lines they exchange. A capability runs it
as ``python -m stepfork.analysis.<capability>._zygote`` with its own task, so nothing here imports
``minimize`` or ``check``."""
