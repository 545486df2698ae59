"""Check at export time that the named entrypoint can be called with the recorded run input.

``stepfork replay`` refuses an entrypoint with a required parameter the recorded run input gives no value
for (:class:`stepfork.replay.entrypoint.EntrypointCallError`, code ``missing_argument``); a test exported
for it could never execute, so ``stepfork export`` refuses it the same way, with the same line, before
the test is written. Only the entrypoint the user names is imported, never anything named in the bundle
(GUIDE "Security").
"""

from __future__ import annotations

import os
from typing import Any

from stepfork.analysis.export._files import ExportError


def check_entrypoint_call(trace: Any, entrypoint: str, import_root: str | os.PathLike[str]) -> None:
    """Raise when ``entrypoint`` cannot be called with ``trace``'s recorded run input.

    Args:
        trace: the loaded bundle (a :class:`stepfork.trace.bundle.Trace`); only its ``run_start`` input is
            read.
        entrypoint: ``MODULE:FUNCTION`` (its form already checked), resolved against ``import_root`` as
            the generated test resolves it (its ``IMPORT_ROOT``).
        import_root: the directory put first on ``sys.path`` for the import.

    Returns:
        None when the arguments derive (:func:`stepfork.replay.entrypoint.entrypoint_arguments`, the rule
        of replay and of the generated test), and also when the entrypoint cannot be resolved here: that
        is reported by the test when it runs, as before (docs/cli.md "export").

    Raises:
        ExportError: code ``missing_argument``, with :class:`EntrypointCallError`'s message (the one line
            ``stepfork replay`` prints for it).
    """
    from stepfork.replay.entrypoint import (
        EntrypointCallError,
        EntrypointError,
        entrypoint_arguments,
        recorded_run_input,
        resolve_entrypoint,
    )

    try:
        # sealed: reading a signature needs no network, and a module-level fetch must not run live here
        function = resolve_entrypoint(entrypoint, import_root=import_root, network="sealed")
    except EntrypointError:
        return
    try:
        entrypoint_arguments(function, recorded_run_input(trace))
    except EntrypointCallError as exc:
        raise ExportError(str(exc), code="missing_argument") from None
