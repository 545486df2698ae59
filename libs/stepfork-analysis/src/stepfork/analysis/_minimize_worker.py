"""One replay attempt of ``minimize``, run as ``python -m stepfork.analysis._minimize_worker``.

Reads ``{bundle, entrypoint, mode, import_root, expected, has_expected}`` as JSON on stdin, replays, and
prints one line ``STEPFORK-SIGNATURE {"kind": ..., "detail": ...}`` on stdout. A separate process per
attempt keeps a hanging or crashing agent (and its imports) away from the minimizer (issue 5).
"""

from __future__ import annotations

import json
import sys


def main() -> None:
    """Replay the candidate named on stdin and print its failure signature."""
    from stepfork.analysis.minimize import Signature, replay_signature

    job = json.loads(sys.stdin.read())
    try:
        sig = replay_signature(
            job["bundle"],
            job["entrypoint"],
            mode=job["mode"],
            import_root=job["import_root"],
            expected=job["expected"],
            has_expected=job["has_expected"],
        )
    except Exception as exc:  # setup errors are a signature too: they never match a real failure
        sig = Signature("setup_error", type(exc).__name__)
    sys.stdout.write("STEPFORK-SIGNATURE " + json.dumps({"kind": sig.kind, "detail": sig.detail}) + "\n")


if __name__ == "__main__":
    main()
