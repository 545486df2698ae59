"""The receipt of ``stepfork run``: what the runner observed, written by the runner after the child exits.

Fields are those of spec/cli-reference.txt "run" (receipt_version 1), plus ``detail``: one sentence saying
why, for a human reading the file later. Verdicts: ``passed``, ``failed``, ``could_not_execute``.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECEIPT_VERSION = 1
VERDICTS = ("passed", "failed", "could_not_execute")
# Why a check could not execute (spec "run"; entrypoint_unresolvable, raise_as_unresolvable and timeout
# go beyond the spec).
REASONS = (
    "bundle_missing",
    "bundle_unreadable",
    "check_error",
    "no_tests_collected",
    "pytest_unavailable",
    "pytest_error",
    "report_missing",
    "entrypoint_unresolvable",
    "raise_as_unresolvable",
    "timeout",
)
EXIT_CODES = {"passed": 0, "failed": 1, "could_not_execute": 2}
_BUNDLE_FILES = ("manifest.json", "events.jsonl", "redactions.json", "integrity.json")


@dataclass(frozen=True)
class Receipt:
    """One run of an exported test, as observed by the runner.

    Attributes:
        verdict: ``passed`` | ``failed`` | ``could_not_execute``.
        reason: None unless could_not_execute; one of :data:`REASONS`.
        exit_status: pytest's raw exit status, None when pytest was not launched or was stopped.
        bundle: the bundle path as named (by ``--bundle`` or the test's TRACE_PATH), None if unknown.
        bundle_digest: :func:`bundle_digest` of the bundle, None when it could not be read.
        test / test_sha256: the test path as given and the SHA-256 hex of its bytes.
        counts: ``{"tests", "failures", "errors", "skipped"}`` from the JUnit report (zeros without one).
        command: the pytest command line launched ([] when none was).
        duration_ms: wall time of the child process in milliseconds (0 when none ran).
        stepfork_version: the version of the runner.
        created_at: UTC ISO-8601 time with a ``Z`` suffix, whole seconds.
        detail: one human sentence explaining the verdict.
    """

    verdict: str
    reason: str | None
    exit_status: int | None
    bundle: str | None
    bundle_digest: str | None
    test: str
    test_sha256: str | None
    counts: dict[str, int] = field(default_factory=dict)
    command: list[str] = field(default_factory=list)
    duration_ms: int = 0
    stepfork_version: str = ""
    created_at: str = ""
    detail: str = ""

    @property
    def exit_code(self) -> int:
        """The CLI exit code of this verdict: 0 passed, 1 failed, 2 could_not_execute (spec "run")."""
        return EXIT_CODES[self.verdict]

    def to_dict(self) -> dict[str, Any]:
        """The receipt JSON object, keys in the spec's order, then ``detail``."""
        return {
            "receipt_version": RECEIPT_VERSION,
            "verdict": self.verdict,
            "reason": self.reason,
            "exit_status": self.exit_status,
            "bundle": self.bundle,
            "bundle_digest": self.bundle_digest,
            "test": self.test,
            "test_sha256": self.test_sha256,
            "counts": dict(self.counts),
            "command": list(self.command),
            "duration_ms": self.duration_ms,
            "stepfork_version": self.stepfork_version,
            "created_at": self.created_at,
            "detail": self.detail,
        }

    def to_json(self) -> str:
        """The receipt as pretty-printed JSON text with a final newline."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the receipt atomically (temp file in the same directory + ``os.replace``); return the path.

        Raises:
            OSError: the directory cannot be created or written.
        """
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
                handle.write(self.to_json())
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, target)
        finally:
            Path(tmp).unlink(missing_ok=True)
        return target


def sha256_file(path: Path) -> str:
    """SHA-256 hex of a file's bytes, streamed in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def bundle_digest(bundle: Path) -> str:
    """A SHA-256 hex digest of a bundle's files: over ``"<name>\\0<sha256 of the file>\\n"`` for each of
    manifest.json, events.jsonl, redactions.json, integrity.json that exists, in that order.

    Raises:
        OSError: a file exists but cannot be read.
    """
    digest = hashlib.sha256()
    for name in _BUNDLE_FILES:
        member = bundle / name
        if member.is_file():
            digest.update(f"{name}\0{sha256_file(member)}\n".encode())
    return digest.hexdigest()
