"""Where ``minimize`` runs a replay attempt: a child forked by its zygote (:mod:`._zygote`, the shared
:mod:`stepfork.analysis._zygote`) where the platform can fork, else a fresh ``python -m
stepfork.analysis.minimize._worker`` per attempt (the fallback, also taken
when the zygote cannot start, refuses to fork, or breaks). Both give the same :class:`Signature` for the
same candidate, so the minimized bundle, the replay count and 1-minimality do not depend on the path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from stepfork.analysis._zygote.client import FORCE_SUBPROCESS_ENV, GRACE, ZygoteBroken, ZygoteClient
from stepfork.analysis._zygote.server import died
from stepfork.analysis.minimize._signature import Signature

ZYGOTE = "stepfork.analysis.minimize._zygote"
"""The module of ``minimize``'s zygote (its task: a forked child replays one candidate)."""
WORKER = "stepfork.analysis.minimize._worker"
"""The module of one attempt in a fresh process (the fallback)."""


class AttemptsClosed(RuntimeError):
    """An attempt was asked for, or was running, when the runner was closed (minimize was interrupted)."""


def replay_in_subprocess(bundle: Path, config: dict[str, Any]) -> Signature:
    """Replay ``bundle`` in a fresh ``python -m stepfork.analysis.minimize._worker`` and return its signature.

    Args:
        bundle: the candidate bundle; config: ``entrypoint``, ``mode``, ``import_root`` (also the working
            directory), ``expected``, ``has_expected``, ``timeout`` (seconds, the whole process).

    Returns:
        the worker's signature; ``Signature("timeout")`` when it ran out of time (it is killed);
        ``Signature("crash", <last stderr line, 200 chars>)`` when it printed none, and
        ``Signature("crash", "malformed signature line")`` when its line does not parse.
    """
    payload = json.dumps({**config, "bundle": str(bundle)})
    try:
        proc = subprocess.run(
            [sys.executable, "-m", WORKER],
            input=payload,
            capture_output=True,
            text=True,
            timeout=config["timeout"],
            check=False,
            cwd=config["import_root"],
        )
    except subprocess.TimeoutExpired:
        return Signature("timeout")
    lines = [line for line in proc.stdout.splitlines() if line.startswith("STEPFORK-SIGNATURE ")]
    if not lines:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
        return Signature("crash", died(last, proc.returncode))
    try:
        return Signature.from_json(json.loads(lines[-1].removeprefix("STEPFORK-SIGNATURE ")))
    except ValueError:  # a line the agent printed to look like ours (JSONDecodeError is a ValueError)
        return Signature("crash", "malformed signature line")


class AttemptRunner:
    """Runs the replay attempts of one ``minimize`` call; use it as a context manager (closing it stops the
    zygote and every attempt still running).

    Args:
        entrypoint, mode, import_root, expected, has_expected, ordering, network, allow_hosts,
            allow_commands: as ``replay_signature`` takes them.
        timeout: seconds per attempt; an attempt running longer is killed and gives ``Signature("timeout")``.
    """

    def __init__(
        self,
        *,
        entrypoint: str,
        mode: str,
        import_root: str,
        expected: Any,
        has_expected: bool,
        timeout: float,
        ordering: str = "auto",
        network: str | None = None,
        allow_hosts: list[str] | None = None,
        allow_commands: list[str] | None = None,
    ) -> None:
        self.config: dict[str, Any] = {
            "ordering": ordering,
            "network": network,
            "allow_hosts": list(allow_hosts or []),
            "allow_commands": list(allow_commands or []),
            "entrypoint": entrypoint,
            "mode": mode,
            "import_root": import_root,
            "expected": expected,
            "has_expected": has_expected,
            "timeout": timeout,
        }
        self._zygote: ZygoteClient | None = None
        self._ready: bool | None = None
        self._lock = threading.Lock()
        self._closed = False

    def __enter__(self) -> AttemptRunner:
        forkable = hasattr(os, "fork") and sys.platform.startswith(("linux", "darwin"))
        if forkable and not os.environ.get(FORCE_SUBPROCESS_ENV):
            try:
                self._zygote = ZygoteClient(ZYGOTE, self.config, Signature.from_json)
            except OSError:
                self._zygote = None
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _usable_zygote(self) -> ZygoteClient | None:
        with self._lock:
            if self._zygote is not None and self._ready is None:
                self._ready = self._zygote.wait_ready(self.config["timeout"])
                if not self._ready:
                    self._zygote.close()
            return self._zygote if self._ready else None

    def run(self, bundle: Path) -> Signature:
        """Replay the candidate ``bundle`` once and return its :class:`Signature`.

        Raises:
            AttemptsClosed: the runner was closed before or during the attempt.
        """
        if self._closed:
            raise AttemptsClosed("minimize was interrupted")
        zygote = self._usable_zygote()
        if zygote is not None:
            try:
                signature: Signature = zygote.run(bundle, self.config["timeout"] + GRACE)
                return signature
            except ZygoteBroken:
                if self._closed:
                    raise AttemptsClosed("minimize was interrupted") from None
        return replay_in_subprocess(bundle, self.config)

    def close(self) -> None:
        """Stop the zygote, killing the attempts it runs; later :meth:`run` calls raise. Idempotent."""
        self._closed = True
        if self._zygote is not None:
            self._zygote.close()
