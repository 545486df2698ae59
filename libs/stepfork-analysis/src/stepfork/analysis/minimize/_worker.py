"""One replay attempt of ``minimize``, run as ``python -m stepfork.analysis.minimize._worker``.

Reads ``{bundle, entrypoint, mode, import_root, expected, has_expected}`` as JSON on stdin, replays, and
prints one line ``STEPFORK-SIGNATURE <Signature.to_json()>`` on stdout. A separate process per
attempt keeps a hanging or crashing agent (and its imports) away from the minimizer (issue 5). This is the
fallback of the zygote (:mod:`._zygote`), whose forked children call :func:`signature_of` too, so both paths
give the same signature for the same candidate.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepfork.analysis.minimize._signature import Signature


def signature_of(job: dict[str, Any], bundle: str) -> Signature:
    """Replay ``bundle`` with the options of ``job`` (``entrypoint``, ``mode``, ``import_root``,
    ``expected``, ``has_expected``, ``ordering``, ``network``, ``allow_hosts``, ``allow_commands``) in this
    process and return
    its signature.

    An exception raised while setting up (unreadable candidate, unresolvable entrypoint) becomes
    ``Signature("setup_error", <exception type name>)``: it never matches a real failure. Exceptions of the
    entrypoint itself are the ``exception`` signature (``replay_signature``); BaseExceptions propagate.
    """
    from stepfork.analysis.minimize._signature import Signature, replay_signature

    try:
        return replay_signature(
            bundle,
            job["entrypoint"],
            mode=job["mode"],
            import_root=job["import_root"],
            expected=job["expected"],
            has_expected=job["has_expected"],
            ordering=job.get("ordering", "auto"),
            network=job.get("network"),
            allow_hosts=job.get("allow_hosts") or None,
            allow_commands=job.get("allow_commands") or None,
        )
    except Exception as exc:
        return Signature("setup_error", type(exc).__name__)


def main() -> None:
    """Replay the candidate named on stdin and print its failure signature."""
    job = json.loads(sys.stdin.read())
    sig = signature_of(job, job["bundle"])
    sys.stdout.write("STEPFORK-SIGNATURE " + json.dumps(sig.to_json()) + "\n")


if __name__ == "__main__":
    main()
